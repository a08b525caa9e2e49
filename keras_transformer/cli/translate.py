"""`translate`: using an export (SavedModel or CTranslate2).

The export functions name their arguments in their errors (`n_best`,
`beam_size`); `translate` reports them as its flags (`--n-best`,
`--beam-size`).
"""

import contextlib
import functools
import os
import re
import sys

# Measured with a 3-layer, d_model 256 export (docs/guides/serving.md, Threads).
DEFAULT_THREADS = 1
THREADS_REASON = "measured faster than all cores for a small model on 2 cores"
# The export functions' arguments that `translate` sets by flags.
_FLAGS = {
    name: "--" + name.replace("_", "-")
    for name in (
        "alpha",
        "batch_size",
        "beam_size",
        "constraints",
        "glossary",
        "long_inputs",
        "max_input_length",
        "min_length",
        "n_best",
        "no_repeat_ngram_size",
        "prefixes",
        "repetition_penalty",
        "sampling",
        "temperature",
        "threads",
    )
}
# A name as a word of its own, not part of a path or a flag.
_ARGUMENT = re.compile(r"(?<![\w/-])(" + "|".join(_FLAGS) + r")(?![\w/-])")


def flag_names(error):
    """`error` (a ValueError of the export functions) with the arguments it
    names written as `translate`'s flags.

    Example:

    >>> flag_names(ValueError("n_best 5 needs beam_size >= 5, got 2."))
    ValueError('--n-best 5 needs --beam-size >= 5, got 2.')
    """
    return ValueError(_ARGUMENT.sub(lambda name: _FLAGS[name[0]], str(error)))


def reporting_flags(command):
    """`command` with its ValueErrors' argument names as flags (`flag_names`)."""

    @functools.wraps(command)
    def run(args):
        try:
            return command(args)
        except ValueError as error:
            raise flag_names(error) from error

    return run


def add_translate_parser(commands):
    parser = commands.add_parser(
        "translate",
        help="translate text with an export (SavedModel or CTranslate2)",
        description="Translates sentences given as arguments, or the lines of "
        "a file (- for stdin), a line out per line in, in input order, in "
        "batches as they are read.",
    )
    parser.add_argument(
        "saved_model",
        metavar="EXPORT",
        help="a SavedModel export's version folder, or a CTranslate2 export",
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE|-|TEXT",
        help="a file or - (stdin, the default) to translate line by line, or sentences",
    )
    parser.add_argument(
        "--batch-size", type=int, default=32, help="lines per call (default: 32)"
    )
    parser.add_argument(
        "--beam-size", type=int, help="beam width (default: the export's)"
    )
    parser.add_argument(
        "--alpha", type=float, help="length-penalty exponent (default: the export's)"
    )
    parser.add_argument(
        "--signature", default="serving_default", choices=("serving_default", "greedy")
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=DEFAULT_THREADS,
        metavar="N",
        help="CPU threads of the engine, 0 for all cores (default: "
        f"{DEFAULT_THREADS}, {THREADS_REASON})",
    )
    parser.add_argument(
        "--long-inputs",
        default="split",
        metavar="{split,truncate}",
        help="a line longer than the model's limit (max_length - 1 pieces): "
        "split, at sentence ends or else in windows of the limit, each part "
        "translated and the parts joined with a space; or truncate, cut at "
        "the limit as the export alone does. Either way stderr counts them at "
        "the end (default: split)",
    )
    parser.add_argument(
        "--max-input-length",
        type=int,
        metavar="N",
        help="with --long-inputs split: split lines longer than N pieces "
        "instead, for a model that translates shorter ones better (default "
        "and at most: the model's limit)",
    )
    parser.add_argument(
        "--reference",
        metavar="FILE",
        help="a reference per line: print BLEU, chrF and TER (sacreBLEU, with "
        "their signatures) on stderr at the end",
    )
    parser.add_argument(
        "--prefixes",
        metavar="FILE",
        help="a typed prefix per input line (an empty line for none): each "
        "translation begins with it exactly, and the search completes it; a "
        "prefix that ends inside a word lets the word go on (token healing, "
        "SavedModel exports)",
    )
    parser.add_argument(
        "--glossary",
        metavar="TSV",
        help="'source term<TAB>target term' lines: where a line contains a "
        "source term (whole words, any case), its translation uses the target "
        "term (terminology constraints, SavedModel exports; translations whose "
        "terms do not fit their length limit are counted on stderr)",
    )
    parser.add_argument(
        "--constraints",
        metavar="FILE",
        help="a line per input line of tab-separated phrases its translation "
        "must contain; a phrase marked with a leading ! must not appear; an "
        "empty line for none (SavedModel exports; a split line's required "
        "phrases go with its first part)",
    )
    parser.add_argument(
        "--repetition-penalty",
        type=float,
        metavar="F",
        help="CTRL's repetition penalty, > 1 discourages repeated pieces "
        "(default: 1, none)",
    )
    parser.add_argument(
        "--no-repeat-ngram-size",
        type=int,
        metavar="N",
        help="no N pieces in a row occur twice in a translation (default: 0, none)",
    )
    parser.add_argument(
        "--min-length",
        type=int,
        metavar="N",
        help="at least N pieces (a prefix's included) before a translation may "
        "end, unless its length limit comes first (default: 0)",
    )
    parser.add_argument(
        "--disable-unk",
        action="store_true",
        help="never generate the unknown piece",
    )
    parser.add_argument(
        "--alignments",
        metavar="FILE",
        help="also write each translation's word alignment to FILE, a Pharaoh "
        "line per line: links i-j, source word i to target word j, from 0 "
        "(a split line's joined from its parts')",
    )
    parser.add_argument(
        "--markup",
        choices=("xml", "html"),
        help="carry each line's inline tags, entities and placeholders (printf, "
        "{name}, URLs, e-mail addresses) through its translation by the word "
        'alignment; <code> and translate="no" elements stay unchanged; a '
        "line that is not well-formed is translated as plain text and counted "
        "on stderr",
    )
    parser.add_argument(
        "--n-best",
        type=int,
        metavar="K",
        help="write K hypotheses per input as index<TAB>score<TAB>hypothesis lines "
        "(index: the 0-based input line), best first; the beam size is at least K",
    )
    parser.add_argument(
        "--sampling",
        metavar="topk:K|topp:P",
        help="draw each token from the K most likely ones, or from the smallest "
        "set of probability >= P, instead of beam search (keras-hub's samplers "
        "in a SavedModel; CTranslate2's own); with --n-best K, K draws a line",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        help="divide the logits by T before --sampling (default: 1)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="the seed of --sampling's draws, for repeatable output "
        "(default: a new one each run)",
    )
    parser.set_defaults(run=translate)


@reporting_flags
def translate(args):
    from keras_transformer.evaluation import format_scores
    from keras_transformer.export import hypotheses, streaming

    if args.threads < 0:
        raise ValueError(f"--threads must be >= 0 (0: all cores), got {args.threads}.")
    controls = _controls(args)
    glossary = None
    if args.glossary is not None:
        from keras_transformer.export.glossary import Glossary

        glossary = Glossary.from_file(args.glossary)
    if args.n_best is None and args.sampling is None:
        if (args.temperature, args.seed) != (None, None):
            raise ValueError("--temperature and --seed go with --sampling.")
        write = functools.partial(
            streaming.translate_lines,
            args.saved_model,
            output=sys.stdout,
            beam_size=args.beam_size,
            alpha=args.alpha,
            signature=args.signature,
            threads=args.threads,
            long_inputs=args.long_inputs,
            max_input_length=args.max_input_length,
            references=_references(args.reference),
            controls=controls,
            glossary=glossary,
            markup=args.markup,
        )
    else:
        one_a_line = (args.reference, args.max_input_length, args.alignments)
        if one_a_line + (args.markup,) != (None,) * 4:
            raise ValueError(
                "--reference, --max-input-length, --alignments and --markup go "
                "with one translation a line, not with --n-best or --sampling."
            )
        if args.sampling is not None and glossary is not None:
            raise ValueError(
                "--glossary's terms are required phrases, which need beam "
                "search: not with --sampling."
            )
        write = functools.partial(
            hypotheses.write_hypotheses,
            _hypotheses_function(args, controls, glossary),
            output=sys.stdout,
            n_best=args.n_best is not None,
        )
    with contextlib.ExitStack() as stack:
        for name in ("prefixes", "constraints"):
            if getattr(args, name) is not None:
                lines = stack.enter_context(open(getattr(args, name), "rb"))
                write = functools.partial(write, **{name: lines})
        if args.alignments is not None:
            links = stack.enter_context(open(args.alignments, "w", encoding="utf-8"))
            write = functools.partial(write, alignments=links)
        scores = _write_inputs(write, args.inputs, args.batch_size)
    if scores is not None:
        print(format_scores(scores), file=sys.stderr)


def _write_inputs(write, inputs, batch_size):
    """`write` of `translate`'s inputs: stdin, a file, or sentences."""
    source = inputs[0] if len(inputs) == 1 else None
    if not inputs or source == "-":
        if sys.stdin.isatty():  # interactive: a line in, its translation out
            return write(sys.stdin.buffer, batch_size=1, window=1)
        return write(sys.stdin.buffer, batch_size=batch_size)
    if source is not None and os.path.isfile(source):
        with open(source, "rb") as file:
            return write(file, batch_size=batch_size, total=count_lines(file))
    texts = [text.encode("utf-8") for text in inputs]
    return write(texts, batch_size=batch_size)


def _controls(args):
    """The `ControlSettings` of `translate`'s flags."""
    from keras_transformer.export.control_settings import ControlSettings

    given = {
        "repetition_penalty": args.repetition_penalty,
        "no_repeat_ngram_size": args.no_repeat_ngram_size,
        "min_length": args.min_length,
        "disable_unk": args.disable_unk or None,
    }
    return ControlSettings(
        **{name: value for name, value in given.items() if value is not None}
    )


def _references(path):
    """The lines of a reference file, or None."""
    if path is None:
        return None
    with open(path, encoding="utf-8", errors="replace") as file:
        return [line.rstrip("\r\n") for line in file]


def _hypotheses_function(args, controls, glossary):
    """`hypotheses_function` of `translate`'s --n-best and --sampling flags."""
    from keras_transformer.export.hypotheses import hypotheses_function, parse_sampling

    if args.signature != "serving_default":
        raise ValueError("--n-best and --sampling do not go with --signature.")
    sampling = None if args.sampling is None else parse_sampling(args.sampling)
    if sampling is not None and args.beam_size not in (None, 1):
        raise ValueError("--sampling draws one token at a time; drop --beam-size.")
    if sampling is None and (args.temperature, args.seed) != (None, None):
        raise ValueError("--temperature and --seed go with --sampling.")
    return hypotheses_function(
        args.saved_model,
        n_best=1 if args.n_best is None else args.n_best,
        beam_size=args.beam_size,
        alpha=args.alpha,
        sampling=sampling,
        temperature=1.0 if args.temperature is None else args.temperature,
        seed=args.seed,
        controls=controls,
        glossary=glossary,
    )


def count_lines(file):
    """The number of lines of a binary `file`, read back to its start."""
    total = sum(1 for _ in file)
    file.seek(0)
    return total
