"""The one line a command prints when the disk fills up under it."""

import errno
import os
import re
import sys

from keras_transformer.cli import written_folder

# The error numbers of a write that found no room, and what to do about each
# before running the command again.
NO_ROOM = {
    errno.ENOSPC: "Free some space",
    errno.EDQUOT: "Free some space (or have the disk quota raised)",
    errno.EFBIG: "Raise the file size limit (ulimit -f)",
}
# Where a writer's message names the file it was writing: h5py's (Keras's
# .weights.h5 files), and TensorFlow's "[{{function_node ...}} ]PATH; <cause>".
_H5PY_FILE = re.compile(r"filename = '([^']+)'")
_TENSORFLOW_FILE = r"^(?:\{\{[^}]*\}\} )?(.+?); "


def disk_full_line(error, args):
    """The one line that says `error` is a full disk, or None if it is not.

    It names the cause, the folder being written (the nearest existing
    folder of the file the error names, else the folder the command
    writes, where it says which) and what to do: for `train`, run the same
    command again to resume from the last checkpoint; for `export`, export
    again (the versions exported before are untouched).

    Args:
        error: an exception a command raised.
        args: the command's parsed arguments.
    """
    found = disk_full(error)
    if found is None:
        return None
    code, path = found
    folder = _existing_folder(path) if path else written_folder(args)
    cause = os.strerror(code)
    where = f" while writing {folder}" if folder else ""
    return f"{cause[0].lower()}{cause[1:]}{where}. {NO_ROOM[code]} and {_again(args)}."


def disk_full(error):
    """(error number, the file being written or None) when `error` is a
    write that found no room (`NO_ROOM`); else None.

    Python's writes raise OSError with the error number (`filename` set
    where a path was given); h5py raises OSError with it, or RuntimeError
    when it closes a file it could not write, naming the file in the text;
    TensorFlow's file system (checkpoints, SavedModels, TensorBoard logs)
    raises an `OpError` whose message is "PATH; <strerror>":
    ResourceExhaustedError for ENOSPC and EDQUOT (the class of an
    accelerator's out-of-memory errors too, which name no such cause) and
    OutOfRangeError for EFBIG.
    """
    code = _error_number(error)
    if code is None:
        return None
    return code, getattr(error, "filename", None) or _named_file(error, code)


def _error_number(error):
    """The `NO_ROOM` error number that `error` carries or names, or None."""
    if isinstance(error, OSError) and error.errno in NO_ROOM:
        return error.errno
    if isinstance(error, OSError | RuntimeError) or _is_tensorflow_error(error):
        text = str(error)
        return next((code for code in NO_ROOM if os.strerror(code) in text), None)
    return None


def _is_tensorflow_error(error):
    """Whether `error` is a `tf.errors.OpError` (without importing TensorFlow:
    where it is not imported, no error comes from it)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(error, tf.errors.OpError)


def _named_file(error, code):
    """The file the text of `error` names, or None."""
    text = str(error)
    found = _H5PY_FILE.search(text) or re.match(
        _TENSORFLOW_FILE + re.escape(os.strerror(code)), text
    )
    return found.group(1) if found else None


def _existing_folder(path):
    """The nearest folder of `path` that exists (a failed writer removes its
    partial files and temporary folders)."""
    while path and not os.path.isdir(path):
        path = os.path.dirname(path)
    return path or "."


def _again(args):
    """What running the command again does."""
    from keras_transformer.cli.models import export
    from keras_transformer.cli.train import train

    if args.run is train:
        return "run the same command again: it resumes from the last checkpoint"
    if args.run is export:
        return "export again: the versions exported before are untouched"
    return "run the same command again"
