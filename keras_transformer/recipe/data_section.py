"""The run config's data section: what to train on, and the vocabulary."""

import dataclasses
import os
import re

from keras_transformer.corpus_aliases import DING_ALIASES
from keras_transformer.data.checks import check_fraction
from keras_transformer.recipe.settings import check_at_least, setting

DEFAULT_VOCAB_SIZE = 8000  # pieces of a vocabulary the run trains itself
EFLOMAL = "eflomal"  # the train_alignments that has eflomal align the pairs


@dataclasses.dataclass(frozen=True)
class DataSection:
    """What to train on and the shared vocabulary."""

    corpus: str | None = setting(
        None,
        '"ding" (offline de-en, the default without files), a TFDS dataset such as '
        '"wmt14_translate/de-en", or "files" (implied by --train-files)',
    )
    source_language: str | None = setting(
        None, "Ding: de; a TFDS dataset: its own; files: for names only"
    )
    target_language: str | None = setting(
        None, "Ding: en; files: optional (zh picks sacreBLEU's tok:zh)"
    )
    train_files: tuple = setting(
        (),
        "your training pairs: SOURCE TARGET (a sentence per line) or one TSV;"
        " a quoted glob pattern ('train-*.tsv') takes several, streamed from disk",
        metavar="FILE",
    )
    valid_files: tuple = setting(
        (),
        "validation pairs, the same way (default: 5%% of the training sources "
        "held out by a hash, at most about 2,000 pairs)",
        metavar="FILE",
    )
    test_files: tuple = setting(
        (),
        "test pairs, the same way (default: held out as for validation)",
        metavar="FILE",
    )
    extra_train_split: str = setting(
        "", 'TFDS split added to training only ("" for none)'
    )
    extra_train_fraction: float | None = setting(
        None,
        "share of training examples drawn from --extra-train-split "
        "(default: all of it, once per pass)",
    )
    data_dir: str | None = setting(None, "TFDS data folder")
    vocab_size: int | None = setting(
        None,
        "pieces of the shared SentencePiece vocabulary (default: 8000; with "
        "--vocab: the model's, and another number is an error)",
    )
    vocab: str | None = setting(
        None,
        "use this SentencePiece model as the vocabulary instead of training one:"
        " another run's tokenizer.model, or your own trained with ids 0 padding, "
        "1 start, 2 end, 3 unknown (--pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3)",
        metavar="FILE",
    )
    bidirectional: bool = setting(
        False, "also train target-to-source on the training pairs"
    )
    train_alignments: str | None = setting(
        None,
        "guided alignment training: word alignments of --train-files, a Pharaoh"
        " line (0-1 1-0 ..., words from 0) per line, or eflomal to have eflomal"
        " align them (once, into the run folder); trains the model's"
        " alignment_layer, alignment_heads (default 1) toward them, with"
        " full_context_alignment (default false)",
        metavar="FILE|eflomal",
    )

    def __post_init__(self):
        for name in ("train_files", "valid_files", "test_files"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        _check_files(self)
        if self.vocab_size is not None:
            check_at_least("vocab_size", self.vocab_size, 1)
        if self.extra_train_fraction is not None:
            if not self.extra_train_split:
                raise ValueError("extra_train_fraction needs an extra_train_split.")
            check_fraction("extra_train_fraction", self.extra_train_fraction)
        # sacreBLEU is imported when a config is made, not for `--help`.
        from keras_transformer.evaluation.scores import check_bleu_language

        check_bleu_language(self.target_language)

    @property
    def is_files(self):
        return self.corpus == "files"

    @property
    def guided_alignment(self):
        """Whether the run trains the model to align (`train_alignments`)."""
        return bool(self.train_alignments)

    @property
    def alignment_file(self):
        """The file of `train_alignments` a user gave; None for none, or for
        eflomal's, which the run makes (`recipe.data.align_training_pairs`)."""
        if self.train_alignments == EFLOMAL:
            return None
        return self.train_alignments

    def resolved(self, vocab_elsewhere=False):
        """This section with `corpus` settled, Ding's languages filled in and
        `vocab_size` 8000 unless given or a vocabulary is: `vocab`, or one
        from elsewhere (`training.init_from`); the run reads that model's
        size (`recipe.data.settle_vocabulary`).

        Example:

        >>> DataSection(target_language="de").resolved().source_language
        'en'
        >>> DataSection().resolved().vocab_size
        8000
        >>> print(DataSection(vocab="runs/other/tokenizer.model").resolved().vocab_size)
        None
        """
        given = any((self.train_files, self.valid_files, self.test_files))
        corpus = self.corpus or ("files" if given else "ding")
        source, target = self.source_language, self.target_language
        if corpus.lower() in DING_ALIASES:  # German-English by default
            other = {"de": "en", "en": "de"}
            source = source or other.get(target, "de")
            target = target or other.get(source, "en")
        vocab_size = self.vocab_size
        if vocab_size is None and not (self.vocab or vocab_elsewhere):
            vocab_size = DEFAULT_VOCAB_SIZE
        return dataclasses.replace(
            self,
            corpus=corpus,
            source_language=source,
            target_language=target,
            vocab_size=vocab_size,
        )

    def name(self):
        """The data's name: the corpus's, or the first training file's folder
        and stem; with the languages when they are known.

        Example:

        >>> DataSection(train_files=("data/train.fr",)).resolved().name()
        'data-train'
        >>> DataSection(corpus="ted_hrlr_translate/pt_to_en").name()
        'ted_hrlr_translate-pt_to_en'
        """
        if self.is_files:
            path = os.path.abspath(self.train_files[0])
            folder = os.path.basename(os.path.dirname(path))
            stem = os.path.splitext(os.path.basename(path))[0]
            name = f"{folder}-{stem}" if folder else stem
        else:
            name = self.corpus.replace("/", "-")
        codes = (self.source_language, self.target_language)
        languages = "-".join(code for code in codes if code)
        if languages and not name.endswith(languages):
            name = f"{name}-{languages}"
        return re.sub(r"[^\w.-]+", "_", name)


def _check_files(data):
    """The files options: at most two files each, and only with "files"."""
    files = {
        "train_files": data.train_files,
        "valid_files": data.valid_files,
        "test_files": data.test_files,
    }
    given = [name for name, paths in files.items() if paths]
    if data.train_alignments and not data.train_files:
        raise ValueError(
            "train_alignments align your training files: give train_files "
            "(--train-files SOURCE TARGET, or one TSV file)."
        )
    if data.corpus not in (None, "files"):
        if given:
            raise ValueError(
                f"{', '.join(given)} read your own files, but corpus is "
                f"{data.corpus!r}: leave corpus out (--corpus) or pass 'files'."
            )
        return
    if not given:
        if data.corpus == "files":
            raise ValueError(
                "corpus 'files' needs train_files (--train-files SOURCE TARGET, or "
                "one TSV file)."
            )
        return
    if not data.train_files:
        raise ValueError(
            "corpus 'files' needs train_files (--train-files SOURCE TARGET, or one "
            "TSV file)."
        )
    for name, paths in files.items():
        if len(paths) > 2:
            raise ValueError(
                f"{name} takes SOURCE TARGET or one TSV file, got {len(paths)} "
                f"files: {' '.join(paths)}."
            )
    if data.extra_train_split:
        raise ValueError(
            "extra_train_split is a split of a TFDS corpus; with your files, add "
            "its pairs to the training files instead."
        )
    if data.train_alignments and data.bidirectional:
        raise ValueError(
            "train_alignments align the training pairs one way; leave "
            "bidirectional out."
        )
