"""The `keras-transformer` command line.

    keras-transformer train [options]       # the translation job
    keras-transformer translate PATH TEXT   # translate with an export
    keras-transformer score PATH SRC TGT    # log-probabilities of translations
    keras-transformer align PATH SRC TGT    # word alignments of translations
    keras-transformer export DIR --format F # export a run as SavedModel/CTranslate2
    keras-transformer average DIR OUTPUT    # average the last checkpoints
    keras-transformer evaluate DIR          # score a run on validation/test
    keras-transformer attention PATH TEXT   # draw an export's attention maps
    keras-transformer plot DIR              # draw a run's schedule and curves
    keras-transformer import-marian HF_DIR --output-dir DIR  # an OPUS-MT model
    keras-transformer serve PATH            # TF Serving's REST API, on this machine

Run `keras-transformer COMMAND --help` for the options.
"""

import argparse
import contextlib
import os
import sys

from keras_transformer.cli.marian import add_import_marian_parser
from keras_transformer.cli.models import (
    add_average_parser,
    add_evaluate_parser,
    add_export_parser,
)
from keras_transformer.cli.pairs import add_align_parser, add_score_parser
from keras_transformer.cli.pictures import add_attention_parser, add_plot_parser
from keras_transformer.cli.serve import add_serve_parser
from keras_transformer.cli.train import add_train_parser
from keras_transformer.cli.translate import add_translate_parser

# Errors a user's input can cause: reported in one line, without a traceback
# (ImportError: an optional dependency is missing).
USER_ERRORS = (ValueError, OSError, KeyError, ImportError)


def main(argv=None):
    """Runs a command; a user error or a full disk prints one line and exits
    with status 1."""
    parser = argparse.ArgumentParser(
        prog="keras-transformer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an error, and TensorFlow's start-up logs",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    add_train_parser(commands)
    add_translate_parser(commands)
    add_score_parser(commands)
    add_align_parser(commands)
    add_export_parser(commands)
    add_average_parser(commands)
    add_evaluate_parser(commands)
    add_attention_parser(commands)
    add_plot_parser(commands)
    add_import_marian_parser(commands)
    add_serve_parser(commands)
    args = parser.parse_args(argv)
    try:
        with _lock_written_folder(args):  # before TensorFlow: refused at once
            if not getattr(args, "print_config", False):  # `train` only prints
                start_tensorflow(quiet=not args.debug)
            args.run(args)
    except KeyboardInterrupt:  # Ctrl-C outside training: nothing to save
        if args.debug:
            raise
        print("keras-transformer: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as error:
        from keras_transformer.cli.errors import disk_full_line

        # Only training raises TrainingInterrupted, after importing its module:
        # an error before that (a refused lock) imports no TensorFlow here.
        checkpoints = sys.modules.get("keras_transformer.training.checkpoints")
        if checkpoints and isinstance(error, checkpoints.TrainingInterrupted):
            print(f"keras-transformer: {error}", file=sys.stderr)
            sys.exit(130)  # the shell's status for Ctrl-C
        if args.debug:
            raise
        message = disk_full_line(error, args)  # whichever writer raised it
        if message is None:
            if not isinstance(error, USER_ERRORS):
                raise
            message = error.args[0] if isinstance(error, KeyError) else error
        print(f"keras-transformer: error: {message}", file=sys.stderr)
        sys.exit(1)


def _lock_written_folder(args):
    """The lock of the run folder the command writes (its `written_folder`),
    taken before the command starts, so that a second writer is refused
    before it reads any data or starts TensorFlow (`written_folder` imports
    none); nothing to lock for commands that only read."""
    folder = written_folder(args)
    if folder is None:
        return contextlib.nullcontext()
    from keras_transformer.recipe.run_directory import RunDirectory

    return RunDirectory(folder).lock()


def written_folder(args):
    """The run folder the command writes, where it says (`train`, `average`
    and `import-marian` set `written_folder`), else None."""
    return args.written_folder(args) if "written_folder" in args else None


def start_tensorflow(quiet=True):
    """Imports TensorFlow and finds its devices, quietly unless asked.

    TensorFlow writes its C++ start-up lines (oneDNN, CUDA drivers, CPU
    features, cuInit) to the standard error before its logging starts, so
    `TF_CPP_MIN_LOG_LEVEL` alone does not hold them back: they are sent to
    /dev/null while it starts, and its later C++ logs are held back too
    (unless `TF_CPP_MIN_LOG_LEVEL` says otherwise). `TF_CPP_MIN_LOG_LEVEL=0`
    shows everything, as `--debug` does.
    """
    if not quiet or os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        import tensorflow  # noqa: F401

        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with _standard_error_to_null():
        import tensorflow as tf

        tf.config.list_physical_devices()  # the platforms start: cuInit


@contextlib.contextmanager
def _standard_error_to_null():
    """Sends file descriptor 2 (C++ code's stderr too) to /dev/null."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no standard error to redirect
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
