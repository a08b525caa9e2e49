"""The `keras-transformer` command line.

    keras-transformer train [options]       # the translation job
    keras-transformer translate PATH TEXT   # translate with an export
    keras-transformer average DIR OUTPUT    # average the last checkpoints
    keras-transformer evaluate DIR          # score a run on validation/test

Run `keras-transformer COMMAND --help` for the options.
"""

import argparse
import dataclasses
import json
import sys

from keras_transformer.job import PRESETS, TranslationJob
from keras_transformer.training import PRECISIONS, STRATEGIES


def _train_parser(commands):
    defaults = TranslationJob()
    parser = commands.add_parser(
        "train",
        help="train, evaluate and export a translation model",
        description="Trains a Transformer with the paper's recipe, reports test "
        "BLEU/chrF with beam search and exports a SavedModel. Rerun the same "
        "command to resume after an interruption.",
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--corpus",
        default=defaults.corpus,
        help='"ding" (offline de-en), a TFDS dataset such as '
        '"wmt14_translate/de-en", or "files" with --train-files',
    )
    data.add_argument("--source-language", default=defaults.source_language)
    data.add_argument("--target-language", default=defaults.target_language)
    data.add_argument(
        "--train-files",
        nargs="+",
        default=(),
        metavar="FILE",
        help="SOURCE TARGET (a sentence per line) or one TSV file",
    )
    data.add_argument(
        "--extra-train-split",
        default=defaults.extra_train_split,
        help='TFDS split added to training only ("" for none)',
    )
    data.add_argument(
        "--extra-train-fraction",
        type=float,
        default=defaults.extra_train_fraction,
        help="share of training examples drawn from --extra-train-split "
        "(default: all of it, once per pass)",
    )
    data.add_argument("--data-dir", default=None, help="TFDS data folder")
    data.add_argument("--vocab-size", type=int, default=defaults.vocab_size)
    data.add_argument("--max-length", type=int, default=defaults.max_length)
    data.add_argument("--tokens-per-batch", type=int, default=defaults.tokens_per_batch)
    data.add_argument(
        "--sampling-alpha",
        type=float,
        default=defaults.sampling_alpha,
        help="train on sampled subword segmentations (subword regularisation)",
    )
    data.add_argument(
        "--bidirectional",
        action="store_true",
        help="also train target-to-source on the training pairs",
    )
    data.add_argument(
        "--gradient-accumulation",
        type=int,
        default=defaults.gradient_accumulation,
        metavar="K",
        help="batches per update (effective batch: K x tokens-per-batch)",
    )
    training = parser.add_argument_group("model and training")
    training.add_argument("--preset", choices=PRESETS, default=defaults.preset)
    training.add_argument(
        "--model",
        type=json.loads,
        default={},
        metavar="JSON",
        help="TransformerConfig overrides, e.g. '{\"dropout\": 0.2}'",
    )
    training.add_argument(
        "--learning-rate-scale", type=float, default=defaults.learning_rate_scale
    )
    training.add_argument(
        "--weight-decay",
        type=float,
        default=defaults.weight_decay,
        help="decoupled weight decay (AdamW) of kernels and embeddings",
    )
    training.add_argument(
        "--cooldown-fraction",
        type=float,
        default=defaults.cooldown_fraction,
        metavar="F",
        help="the learning rate falls linearly to 0 over the last share F of the "
        "updates (0: the paper's schedule)",
    )
    training.add_argument(
        "--epochs",
        type=int,
        default=defaults.epochs,
        help="default: 12; 18, with dropout at least 0.2 unless --model sets it, "
        "where the run trains in mixed_bfloat16 (the same CPU time)",
    )
    training.add_argument("--warmup-steps", type=int, default=defaults.warmup_steps)
    training.add_argument(
        "--steps-per-epoch",
        type=int,
        default=defaults.steps_per_epoch,
        help="steps per epoch (0: one pass over the data)",
    )
    training.add_argument(
        "--checkpoint-every",
        type=int,
        default=defaults.checkpoint_every,
        metavar="STEPS",
    )
    training.add_argument(
        "--average-last",
        type=int,
        default=defaults.average_last,
        metavar="N",
        help="average the last N checkpoints at the end (1: the final weights)",
    )
    training.add_argument(
        "--precision",
        default=defaults.precision,
        choices=PRECISIONS,
        help="auto: mixed_bfloat16 on a CPU with bfloat16 matmul instructions"
        " (AVX512_BF16, AMX) and no GPU, float32 elsewhere",
    )
    training.add_argument(
        "--strategy",
        default=defaults.strategy,
        choices=STRATEGIES,
        help="default: one device; mirrored: all local GPUs; multi_worker: "
        "the hosts in TF_CONFIG (run the same command on each)",
    )
    training.add_argument(
        "--logical-cpus",
        type=int,
        default=defaults.logical_cpus,
        metavar="N",
        help="with --strategy mirrored: N replicas on logical CPU devices",
    )
    training.add_argument("--seed", type=int, default=defaults.seed)
    output = parser.add_argument_group("evaluation and output")
    output.add_argument("--beam-size", type=int, default=defaults.beam_size)
    output.add_argument("--alpha", type=float, default=defaults.alpha)
    output.add_argument("--bleu-sample", type=int, default=defaults.bleu_sample)
    output.add_argument(
        "--test-sample",
        type=int,
        default=None,
        metavar="N",
        help="score only the first N test sentences",
    )
    output.add_argument("--samples", type=int, default=defaults.samples)
    output.add_argument("--output-dir", default=defaults.output_dir)
    output.add_argument("--export-dir", default=defaults.export_dir)
    output.add_argument("--export-name", default=defaults.export_name)
    parser.set_defaults(run=_train)


def _train(args):
    from keras_transformer.job import run_translation_job

    fields = {field.name for field in dataclasses.fields(TranslationJob)}
    values = {key: value for key, value in vars(args).items() if key in fields}
    results = run_translation_job(TranslationJob(**values))
    print(json.dumps({key: results[key] for key in ("bleu", "chrf", "export_path")}))


def _translate_parser(commands):
    parser = commands.add_parser(
        "translate", help="translate text with an exported SavedModel"
    )
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument("text", nargs="*", help="sentences (default: stdin lines)")
    parser.add_argument(
        "--signature", default="serving_default", choices=("serving_default", "greedy")
    )
    parser.set_defaults(run=_translate)


def _translate(args):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    texts = args.text or [line.rstrip("\n") for line in sys.stdin]
    signature = tf.saved_model.load(args.saved_model).signatures[args.signature]
    for translation in signature(text=tf.constant(texts, tf.string))["translation"]:
        print(translation.numpy().decode("utf-8"))


def _average_parser(commands):
    defaults = TranslationJob()
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
    parser.add_argument("--export-name", default=defaults.export_name)
    parser.set_defaults(run=_average)


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


def _average(args):
    from keras_transformer.data import SubwordTokenizer
    from keras_transformer.export import Translator, export_translator
    from keras_transformer.job import averaged_model, saved_job, tokenizer_path

    model, paths = averaged_model(args.output_dir, args.last)
    model.save(args.model_path)
    print(f"Averaged {len(paths)} checkpoints into {args.model_path}: {paths}")
    if args.export_dir:
        job = saved_job(args.output_dir)
        tokenizer = SubwordTokenizer.load(tokenizer_path(args.output_dir))
        translator = Translator(
            model,
            tokenizer,
            job.beam_size if args.beam_size is None else args.beam_size,
            job.alpha if args.alpha is None else args.alpha,
        )
        path = export_translator(translator, args.export_dir, args.export_name)
        print(f"Exported the translator to {path}")


def _evaluate_parser(commands):
    parser = commands.add_parser(
        "evaluate",
        help="score a training run's averaged checkpoints on a split",
        description="Averages the last N checkpoints of a `train` run and "
        "reports BLEU and chrF on its corpus's validation or test split.",
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument("--split", default="validation", choices=("validation", "test"))
    _run_setting_arguments(parser)
    parser.add_argument(
        "--sample", type=int, default=None, metavar="N", help="the first N sentences"
    )
    parser.set_defaults(run=_evaluate)


def _evaluate(args):
    from keras_transformer.job import evaluate_run

    scores = evaluate_run(
        args.output_dir, args.split, args.last, args.beam_size, args.alpha, args.sample
    )
    print(json.dumps(scores, indent=2))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="keras-transformer", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _train_parser(commands)
    _translate_parser(commands)
    _average_parser(commands)
    _evaluate_parser(commands)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
