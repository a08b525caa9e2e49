"""The Ding sentence pairs as a TensorFlow Datasets builder, `ding_de_en`.

Importing this module registers the builder, after which
`tfds.load("ding_de_en", data_dir=...)` works offline: nothing is downloaded,
the examples are generated from the installed dictionary at `DING_PATH`
(`apt-get install trans-de-en`) by `load_ding_pairs`, in a few seconds, and
written under the `data_dir` the caller chooses.
"""

import tensorflow_datasets as tfds

from keras_transformer.data import ding, tfds_internals

_DESCRIPTION = """\
German-English sentence pairs from the example sentences of the Ding
dictionary (Frank Richter, TU Chemnitz), read from the Debian package
`trans-de-en`. Splits `train`, `validation` and `test` (about 90/5/5, assigned
by a stable hash of the normalised German sentence, so no validation or test
source appears in train), and two splits of extra training data: `phrases`,
multi-word dictionary entries that never share a source with a sentence, and
`variants`, the other pairings of the `; ` variants of the train sentences. See
`keras_transformer.data.ding_parser` for the cleaning and the sentence
rule.
"""


class DingDeEn(tfds_internals.LocalBuildMessages, tfds.core.GeneratorBasedBuilder):
    """German-English sentence pairs from the Ding dictionary (`ding_de_en`).

    Splits: `train`, `validation`, `test`, `phrases` and `variants`. Examples are
    `{"de": str, "en": str}`; with `as_supervised=True` they are `(de, en)`.
    The examples of a split are stored in the order `load_ding_pairs` returns
    them (shuffling is disabled), so both give the same lists.

    Load it with `tfds.load("ding_de_en", split="test", data_dir=DIR,
    as_supervised=True)`: the first call builds it into DIR (seconds).

    Example:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as data_dir:
    ...     builder = tfds.builder("ding_de_en", data_dir=data_dir)
    >>> builder.info.supervised_keys, str(builder.info.version)
    (('de', 'en'), '1.1.0')
    """

    VERSION = tfds.core.Version("1.1.0")
    RELEASE_NOTES = {
        "1.0.0": "Sentence pairs and phrases of Ding 2023-01-30.",
        "1.1.0": "Adds the `variants` split.",
    }

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            description=_DESCRIPTION,
            features=tfds.features.Translation(languages=("de", "en")),
            supervised_keys=("de", "en"),
            disable_shuffling=True,
            homepage="https://dict.tu-chemnitz.de/",
            license="GPL-2.0-or-later",
        )

    @property
    def local_source(self):
        """The dictionary file the examples are built from."""
        return ding.DING_PATH

    def _split_generators(self, dl_manager):
        del dl_manager  # nothing to download: the dictionary is a local file
        pairs = ding.load_ding_pairs(ding.DING_PATH)
        return {split: self._generate_examples(pairs[split]) for split in ding.SPLITS}

    def _generate_examples(self, pairs):
        for index, (german, english) in enumerate(pairs):
            yield index, {"de": german, "en": english}
