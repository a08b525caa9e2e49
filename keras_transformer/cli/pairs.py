"""`score` and `align`: forced decoding of given pairs with an export.

Both read the pairs of lines of two files and write a line per pair, in
order (`export.hypotheses.write_pairs`).
"""

import sys

from keras_transformer.cli.translate import count_lines, reporting_flags


def add_score_parser(commands):
    _add_pairs_parser(
        commands,
        "score",
        help="log-probabilities of given translations (forced decoding)",
        description="Writes, for each pair of lines of SOURCES and TARGETS, the "
        "log-probability of the target given the source by forced decoding, as "
        "sum<TAB>per_token (per_token: over the target's pieces and end token; "
        "the sum is the score greedy decoding, and beam search at alpha 0, "
        "gives that translation).",
        run=score,
    )


def add_align_parser(commands):
    _add_pairs_parser(
        commands,
        "align",
        help="word alignments of given translations (forced decoding)",
        description="Writes, for each pair of lines of SOURCES and TARGETS, "
        "which source words each target word came from, as a Pharaoh line: "
        "space-separated links i-j, source word i to target word j, counted "
        "from 0 among the words between spaces (read from the layer and heads "
        "of the model's alignment_layer and alignment_heads).",
        run=align,
    )


def _add_pairs_parser(commands, name, run, **texts):
    """A command over the pairs of lines of two files, as `score` and `align`."""
    parser = commands.add_parser(name, **texts)
    parser.add_argument(
        "saved_model",
        metavar="EXPORT",
        help="a SavedModel export's version folder, or a CTranslate2 export",
    )
    parser.add_argument("sources", metavar="SOURCES", help="a file, a source a line")
    parser.add_argument("targets", metavar="TARGETS", help="a file, a target a line")
    parser.add_argument(
        "--batch-size", type=int, default=32, help="pairs per call (default: 32)"
    )
    parser.set_defaults(run=run)


@reporting_flags
def score(args):
    from keras_transformer.export.hypotheses import score_lines

    _write_pairs(score_lines, args)


@reporting_flags
def align(args):
    from keras_transformer.export.hypotheses import align_lines

    _write_pairs(align_lines, args)


def _write_pairs(write, args):
    """`write` (`score_lines`, `align_lines`) of the two files of `args`."""
    if args.batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {args.batch_size}.")
    with open(args.sources, "rb") as sources, open(args.targets, "rb") as targets:
        total = count_lines(sources)
        write(args.saved_model, sources, targets, sys.stdout, args.batch_size, total)
