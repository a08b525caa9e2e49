"""`translate`, `export`, `average` and `evaluate`: using a trained run."""

import functools
import json
import os
import sys

from keras_transformer.recipe.config import OutputSection

_DEFAULT_EXPORT = os.path.join(OutputSection.export_dir, OutputSection.export_name)
# Measured with a 3-layer, d_model 256 export (docs/serving.md, Threads).
DEFAULT_THREADS = 1
THREADS_REASON = "measured faster than all cores for a small model on 2 cores"
_RUN_DEFAULT = "(default: the run's, from job.json beside the model, else train's)"


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


def translate(args):
    from keras_transformer.evaluation import format_scores
    from keras_transformer.export import hypotheses, streaming

    if args.threads < 0:
        raise ValueError(f"--threads must be >= 0 (0: all cores), got {args.threads}.")
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
        )
    else:
        if args.reference is not None or args.max_input_length is not None:
            raise ValueError(
                "--reference and --max-input-length go with one translation a "
                "line, not with --n-best or --sampling."
            )
        write = functools.partial(
            hypotheses.write_hypotheses,
            _hypotheses_function(args),
            output=sys.stdout,
            n_best=args.n_best is not None,
        )
    source = args.inputs[0] if len(args.inputs) == 1 else None
    if not args.inputs or source == "-":
        if sys.stdin.isatty():  # interactive: a line in, its translation out
            scores = write(sys.stdin.buffer, batch_size=1, window=1)
        else:
            scores = write(sys.stdin.buffer, batch_size=args.batch_size)
    elif source is not None and os.path.isfile(source):
        with open(source, "rb") as file:
            scores = write(file, batch_size=args.batch_size, total=_count_lines(file))
    else:
        texts = [text.encode("utf-8") for text in args.inputs]
        scores = write(texts, batch_size=args.batch_size)
    if scores is not None:
        print(format_scores(scores), file=sys.stderr)


def _references(path):
    """The lines of a reference file, or None."""
    if path is None:
        return None
    with open(path, encoding="utf-8", errors="replace") as file:
        return [line.rstrip("\r\n") for line in file]


def _hypotheses_function(args):
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
    )


def _count_lines(file):
    """The number of lines of a binary `file`, read back to its start."""
    total = sum(1 for _ in file)
    file.seek(0)
    return total


def add_score_parser(commands):
    parser = commands.add_parser(
        "score",
        help="log-probabilities of given translations (forced decoding)",
        description="Writes, for each pair of lines of SOURCES and TARGETS, the "
        "log-probability of the target given the source by forced decoding, as "
        "sum<TAB>per_token (per_token: over the target's pieces and end token; "
        "the sum is the score greedy decoding, and beam search at alpha 0, "
        "gives that translation).",
    )
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
    parser.set_defaults(run=score)


def score(args):
    from keras_transformer.export.hypotheses import score_lines

    if args.batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {args.batch_size}.")
    with open(args.sources, "rb") as sources, open(args.targets, "rb") as targets:
        total = _count_lines(sources)
        score_lines(
            args.saved_model, sources, targets, sys.stdout, args.batch_size, total
        )


def add_export_parser(commands):
    parser = commands.add_parser(
        "export",
        help="export a trained model as a SavedModel or a CTranslate2 model",
        description="Exports the translator of a `train` run (RUN_DIR/model.keras, "
        "written when the run finishes) or of a .keras model (e.g. from `average`), "
        "with the tokenizer.model and job.json beside it: as a SavedModel for "
        "TF Serving, or as a CTranslate2 model for fast CPU serving (pip install "
        '-e ".[ctranslate2]"). `translate` takes either.',
    )
    parser.add_argument(
        "model", metavar="RUN_DIR|MODEL", help="a train run's --output-dir, or a .keras"
    )
    parser.add_argument(
        "--format", required=True, choices=("saved_model", "ctranslate2")
    )
    parser.add_argument(
        "--quantization",
        choices=("int8", "int8_float32", "int16", "float32"),
        help="the CTranslate2 weights' type (default: float32)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="saved_model: the model folder, whose next version is written "
        "(default: saved_models/translator); ctranslate2: the folder to create "
        "(default: saved_models/translator-ct2, or translator-ct2-QUANTIZATION)",
    )
    parser.add_argument(
        "--tokenizer",
        help="the SentencePiece model (default: the one beside the model)",
    )
    parser.add_argument("--beam-size", type=int, help=f"beam width {_RUN_DEFAULT}")
    parser.add_argument(
        "--alpha",
        type=float,
        help="length-penalty exponent: a SavedModel divides scores by ((5 + "
        "length) / 6) ** alpha, CTranslate2 by length ** alpha, the same at 0 "
        + _RUN_DEFAULT,
    )
    parser.set_defaults(run=export)


def export(args):
    import keras

    import keras_transformer.models.transformer  # noqa: F401  (registers its classes)
    from keras_transformer.export import export_ctranslate2, export_translator
    from keras_transformer.export.ctranslate2_model import import_ctranslate2
    from keras_transformer.recipe.run_directory import model_and_run

    if args.format == "ctranslate2":
        import_ctranslate2()  # before the model loads, if it is missing
    elif args.quantization:
        raise ValueError("--quantization goes with --format ctranslate2.")
    model_path, run = model_and_run(args.model)
    translator = _translator(
        keras.saving.load_model(model_path, compile=False),
        args.tokenizer or run.tokenizer,
        run,
        args,
    )
    if args.format == "saved_model":
        output = os.path.normpath(args.output or _DEFAULT_EXPORT)
        model_dir, name = os.path.split(output)
        path = export_translator(translator, model_dir or ".", name)
    else:
        suffix = f"-{args.quantization}" if args.quantization else ""
        output = args.output or f"{_DEFAULT_EXPORT}-ct2{suffix}"
        path = export_ctranslate2(translator, output, args.quantization)
    print(f"Exported the translator to {path}")


def _translator(model, tokenizer_file, run, args):
    """A `Translator` of `model` decoding as `decoding_settings` settles it
    from `args` and the run's evaluation settings (the recipe's when `run`
    is not a run), with the run's beam-search scoring."""
    import dataclasses

    from keras_transformer.data.tokenizer import load_tokenizer
    from keras_transformer.export import Translator
    from keras_transformer.recipe.config import decoding_settings
    from keras_transformer.recipe.settings import EvaluationSection

    evaluation = run.read_config().evaluation if run.exists() else EvaluationSection()
    beam_size, alpha = decoding_settings(
        args.beam_size, args.alpha, dataclasses.asdict(evaluation)
    )
    return Translator(
        model,
        load_tokenizer(tokenizer_file),
        beam_size,
        alpha,
        scoring=evaluation.scoring,
    )


def add_average_parser(commands):
    parser = commands.add_parser(
        "average",
        help="average the last checkpoints of a training run",
        description="Averages the weights of the last N checkpoints of a "
        "`train` run (paper section 6.1) into a .keras model, and optionally "
        "exports it as a translator SavedModel.",
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument("model_path", help="where to write the averaged .keras model")
    _run_setting_arguments(parser)
    parser.add_argument(
        "--export-dir", default="", help="also export the translator here"
    )
    name = OutputSection.export_name
    parser.add_argument("--export-name", default=name, help=f"default: {name}")
    parser.set_defaults(run=average)


def _run_setting_arguments(parser):
    """--last, --beam-size and --alpha, by default the run's own settings."""
    for flag, kind, setting in (
        ("--last", int, "--average-last"),
        ("--beam-size", int, "--beam-size"),
        ("--alpha", float, "--alpha"),
    ):
        parser.add_argument(
            flag, type=kind, default=None, help=f"default: the run's {setting}"
        )


def average(args):
    from keras_transformer.export import export_translator
    from keras_transformer.recipe.evaluation import averaged_model
    from keras_transformer.recipe.run_directory import RunDirectory

    model, paths = averaged_model(args.output_dir, args.last)
    model.save(args.model_path)
    print(f"Averaged {len(paths)} checkpoints into {args.model_path}: {paths}")
    if args.export_dir:
        run = RunDirectory(args.output_dir)
        translator = _translator(model, run.tokenizer, run, args)
        path = export_translator(translator, args.export_dir, args.export_name)
        print(f"Exported the translator to {path}")


def add_evaluate_parser(commands):
    parser = commands.add_parser(
        "evaluate",
        help="score a training run's averaged checkpoints on a split",
        description="Averages the last N checkpoints of a `train` run and "
        "reports BLEU, chrF and TER on its corpus's validation or test split.",
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument("--split", default="validation", choices=("validation", "test"))
    _run_setting_arguments(parser)
    parser.add_argument(
        "--sample", type=int, default=None, metavar="N", help="the first N sentences"
    )
    parser.set_defaults(run=evaluate)


def evaluate(args):
    from keras_transformer.recipe.evaluation import evaluate_run

    scores = evaluate_run(
        args.output_dir, args.split, args.last, args.beam_size, args.alpha, args.sample
    )
    print(json.dumps(scores, indent=2))
