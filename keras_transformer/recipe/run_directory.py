"""A training run's folder: the one owner of its file names and layout.

runs/ding-de-en/
  job.json            the RunConfig (its to_dict, with "version")
  model_config.json   the TransformerConfig
  tokenizer.model     the SentencePiece vocabulary
  schedule.json       the learning-rate schedule's config
  pass_size.json      the batches of a pass over the training data (estimated
                      at scale) and what they were computed for
  checkpoints/        model and optimizer state, numbered by step
  history.csv         one row per epoch (Keras's CSVLogger)
  logs/               TensorBoard; logs/attention/ the attention images
  best.weights.h5     the weights of the epoch of the lowest validation loss
  best.json           that epoch and its validation loss
  model.keras         the exported model (best, last or averaged), once trained
  results.json        the scores and facts of the finished run
  plots/              `keras-transformer plot`'s pictures
  .lock               held by the one process writing here (`lock`)

Every file here is written whole or not at all: to a hidden partial file
beside it, flushed to disk, then renamed into place (`atomic_path`). A kill
at any moment leaves the old file or the new one, never a torn one. The
exceptions are written by TensorFlow and Keras: checkpoints/
(`tf.train.CheckpointManager` writes each checkpoint's files under
temporary names and renames them, and rewrites its `checkpoint` state file
the same way), logs/ (TensorBoard event files, appended) and history.csv
(Keras's CSVLogger appends a row per epoch and flushes it, one small write
that a kill does not split; a full disk could still leave a short last
row, which `plot` cannot read).
"""

import contextlib
import glob
import json
import os
import shutil
import tempfile

from keras_transformer.recipe.run_lock import hold_lock

# The pictures `keras-transformer plot` draws of a run: kind -> file stem.
PLOTS = {
    "pe": "positional_encoding",
    "schedule": "learning_rate",
    "curves": "training_curves",
}


class RunDirectory:
    """The files of the run in `path`; nothing here imports TensorFlow.

    Example:

    >>> run = RunDirectory("runs/ding-de-en")
    >>> run.tokenizer
    'runs/ding-de-en/tokenizer.model'
    >>> run.exists()
    False
    """

    def __init__(self, path):
        self.path = os.fspath(path)

    def __repr__(self):
        return f"RunDirectory({self.path!r})"

    def _file(self, name):
        return os.path.join(self.path, name)

    config = property(lambda self: self._file("job.json"))
    model_config = property(lambda self: self._file("model_config.json"))
    tokenizer = property(lambda self: self._file("tokenizer.model"))
    schedule = property(lambda self: self._file("schedule.json"))
    pass_size = property(lambda self: self._file("pass_size.json"))
    alignments = property(lambda self: self._file("train_alignments.txt"))
    checkpoints = property(lambda self: self._file("checkpoints"))
    history = property(lambda self: self._file("history.csv"))
    logs = property(lambda self: self._file("logs"))
    attention_logs = property(lambda self: os.path.join(self.logs, "attention"))
    model = property(lambda self: self._file("model.keras"))
    best_weights = property(lambda self: self._file("best.weights.h5"))
    best = property(lambda self: self._file("best.json"))
    results = property(lambda self: self._file("results.json"))
    plots = property(lambda self: self._file("plots"))
    lock_file = property(lambda self: self._file(".lock"))

    def plot(self, kind, image_format="png", folder=None):
        """The file of the picture of `kind` (see `PLOTS`), in `folder`
        (default: the run's plots/)."""
        return os.path.join(folder or self.plots, f"{PLOTS[kind]}.{image_format}")

    def exists(self):
        """Whether a run was started here (its job.json is written)."""
        return os.path.exists(self.config)

    def require(self, path):
        """`path` if it exists, else FileNotFoundError saying this is no run."""
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} does not exist: {self.path!r} is not the output_dir of a "
                "`keras-transformer train` run (or one older than this file)."
            )
        return path

    @contextlib.contextmanager
    def lock(self):
        """Holds this folder's lock: the one writer here (`run_lock`).

        Makes the folder if needed; a holder that wrote nothing leaves
        none behind. Partial files that a killed writer left
        (`atomic_path`) are deleted once the lock is held.

        Raises:
            RunFolderInUse: another live process holds it.
            OSError: the folder cannot be written, in one line.
        """
        created = not os.path.exists(self.path)
        check_writable(self.path)
        with hold_lock(self.lock_file, self.path, remove_folder=created):
            for partial in glob.glob(os.path.join(self.path, PARTIAL_PATTERN)):
                os.remove(partial)
            yield self

    def clear(self):
        """Deletes the run here; the lock file (held by the caller) stays."""
        for name in os.listdir(self.path):
            path = self._file(name)
            if path == self.lock_file:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)

    def read_config(self):
        """The `RunConfig` the run saved (a version-1 job.json upgraded)."""
        from keras_transformer.recipe.config_files import load_config

        return load_config(self.require(self.config))

    def write_config(self, config):
        write_json(self.config, config.to_dict())

    def read_model_config(self):
        from keras_transformer.models.config import TransformerConfig

        return TransformerConfig.from_dict(self._read_json(self.model_config))

    def write_model_config(self, model_config):
        write_json(self.model_config, model_config.to_dict())

    def read_schedule(self):
        return self._read_json(self.schedule)

    def write_schedule(self, schedule_config):
        write_json(self.schedule, schedule_config)

    def read_pass_size(self):
        """The saved pass size, or None before one is saved."""
        return (
            self._read_json(self.pass_size) if os.path.exists(self.pass_size) else None
        )

    def write_pass_size(self, pass_size):
        write_json(self.pass_size, pass_size)

    def read_results(self):
        return self._read_json(self.results)

    def write_results(self, results):
        write_json(self.results, results)

    def checkpoint_paths(self):
        """The checkpoints on disk, oldest first; FileNotFoundError if none."""
        import tensorflow as tf

        state = tf.train.get_checkpoint_state(self.checkpoints)
        paths = list(state.all_model_checkpoint_paths) if state else []
        if not paths:
            raise FileNotFoundError(f"No checkpoints in {self.checkpoints}.")
        return paths

    def model_file(self):
        """The finished run's .keras model, or an error saying how to get one."""
        if not os.path.exists(self.model):
            raise FileNotFoundError(
                f"{self.model} does not exist: the run has not finished; average its"
                " checkpoints into a model first (keras-transformer average "
                f"{self.path} MODEL.keras)."
            )
        return self.model

    def _read_json(self, path):
        with open(self.require(path), encoding="utf-8") as file:
            return json.load(file)

    def save_model(self, model):
        """Saves the `keras.Model` as the run's model.keras."""
        with atomic_path(self.model) as partial:
            model.save(partial)

    def save_tokenizer(self, tokenizer):
        """Saves the tokenizer (anything with `save(path)`) as tokenizer.model."""
        with atomic_path(self.tokenizer) as partial:
            tokenizer.save(partial)


PARTIAL_PATTERN = ".*.partial-*"


@contextlib.contextmanager
def atomic_path(path):
    """A hidden path beside `path` to write to; moved to `path` when done.

    The file written there is flushed to disk (fsync) and renamed over
    `path` (`os.replace`, atomic on POSIX and Windows) when the block ends
    without an error; after an error it is deleted and `path` is as it was
    (an OSError that names no file, such as a write's on a full disk, is
    given `path` as its `filename`). The partial file keeps `path`'s
    extensions (e.g. ".weights.h5", ".keras"), which Keras's savers require.
    A folder of `path` that does not exist is made first, so that a
    command's output path (`average RUN out/model.keras`) may name a new one.

    Example:

    >>> folder = tempfile.mkdtemp()
    >>> with atomic_path(os.path.join(folder, "best.weights.h5")) as partial:
    ...     os.path.basename(partial).startswith(".best.partial-")
    ...     partial.endswith(".weights.h5")
    ...     _ = open(partial, "w").write("weights")
    True
    True
    >>> os.listdir(folder)
    ['best.weights.h5']
    """
    folder, name = os.path.split(path)
    stem, dot, extensions = name.partition(".")
    partial = os.path.join(folder, f".{stem}.partial-{os.getpid()}{dot}{extensions}")
    os.makedirs(folder or ".", exist_ok=True)
    try:
        yield partial
        fsync_file(partial)
        os.replace(partial, path)
        _fsync_folder(folder or ".")  # the rename itself
    except OSError as error:
        if error.filename is None:
            error.filename = path
        raise
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def write_json(path, values):
    """Writes `values` as indented JSON to `path`, atomically (`atomic_path`)."""
    with atomic_path(path) as partial:
        with open(partial, "w", encoding="utf-8") as file:
            json.dump(values, file, indent=2)


def fsync_file(path):
    """Flushes a file's data to disk; a failure (e.g. a full disk) raises."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_folder(folder):
    """Flushes a folder's entries (a rename) to disk, where the OS can."""
    try:
        fsync_file(folder)
    except OSError:  # Windows opens no folder; some file systems sync none
        pass


def model_and_run(path):
    """(.keras model path, the `RunDirectory` beside it) of `path`: a run
    folder, or a .keras file (whose folder may or may not be a run)."""
    if os.path.isdir(path):
        run = RunDirectory(path)
        return run.model_file(), run
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model at {path}.")
    return path, RunDirectory(os.path.dirname(path) or ".")


def check_writable(folder):
    """Creates `folder` if needed and checks that a file can be written there.

    Raises:
        OSError: naming the folder, e.g. a `PermissionError`.
    """
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        raise type(error)(
            f"Cannot write to {folder}: {error.strerror or error}."
        ) from error
