"""One writer per run folder, and every file of it written whole or not at all."""

import os
import signal
import subprocess
import sys

import pytest

from keras_transformer import cli
from keras_transformer.recipe.run_directory import RunDirectory, atomic_path
from keras_transformer.recipe.run_lock import RunFolderInUse
from tests.fixtures.backends import python_environment, run_python

# Holds the lock of the folder in argv[1], says so, and waits to be killed.
HOLDER = """
import sys, time
from keras_transformer.recipe.run_directory import RunDirectory

with RunDirectory(sys.argv[1]).lock():
    print("holding", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def held_folder(tmp_path):
    """A run folder whose lock another live process holds: (folder, pid)."""
    folder = str(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, folder],
        stdout=subprocess.PIPE,
        text=True,
        env=python_environment("tensorflow", tmp_path),
    )
    assert holder.stdout.readline() == "holding\n"
    yield folder, holder
    holder.kill()
    holder.wait()


def test_a_second_writer_is_refused_in_one_line(held_folder, capsys):
    folder, holder = held_folder
    for command in (
        ["train", "--output-dir", folder],
        ["average", folder, str(os.path.join(folder, "..", "averaged.keras"))],
        ["import-marian", "hf", "--output-dir", folder],
    ):
        with pytest.raises(SystemExit) as stopped:
            cli.main(command)
        assert stopped.value.code == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"keras-transformer: error: {folder} is in use by ")
        assert f"process {holder.pid} on " in line


# A second `train` on the folder: main's status and what it imported.
SECOND_TRAIN = """
import sys
from keras_transformer import cli

try:
    cli.main(["train", "--output-dir", "run"])
except SystemExit as stopped:
    print(stopped.code, [m for m in ("keras", "tensorflow") if m in sys.modules])
"""


def test_a_second_train_is_refused_before_tensorflow_starts(held_folder, tmp_path):
    """So that the refusal comes at once (a fraction of a second, not the
    seconds TensorFlow takes to start)."""
    assert run_python(tmp_path, SECOND_TRAIN, "tensorflow") == "1 []\n"


def test_a_dead_holders_lock_is_taken_over_and_a_live_one_is_not(held_folder):
    folder, holder = held_folder
    with pytest.raises(RunFolderInUse):
        with RunDirectory(folder).lock():
            pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with RunDirectory(folder).lock():  # no question asked
        with RunDirectory(folder).lock():  # this process holds it already
            pass


@pytest.mark.parametrize(
    "argv",
    [
        ["translate", "run"],
        ["evaluate", "run"],
        ["export", "run", "--format", "saved_model"],
        ["plot", "run"],
    ],
)
def test_reading_commands_take_no_lock(argv, monkeypatch, tmp_path):
    def lock(self):
        raise AssertionError(f"{argv[0]} locked {self.path}")

    monkeypatch.setattr(RunDirectory, "lock", lock)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):  # there is no run: a one-line error
        cli.main(argv)


def test_an_interrupted_write_leaves_the_old_file_and_no_partial(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")
    with pytest.raises(OSError):
        with atomic_path(str(path)) as partial:
            with open(partial, "w") as file:
                file.write("half")
            raise OSError(28, "No space left on device")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["results.json"]


def test_a_write_into_a_new_folder_makes_the_folder(tmp_path):
    path = tmp_path / "new" / "model.keras"  # as in `average RUN new/model.keras`
    with atomic_path(str(path)) as partial:
        with open(partial, "w") as file:
            file.write("model")
    assert path.read_text() == "model"


def test_the_lock_clears_partial_files_and_clear_keeps_the_lock(tmp_path):
    run = RunDirectory(tmp_path / "run")
    os.makedirs(run.path)
    partial = os.path.join(run.path, f".model.partial-{os.getpid() + 1}.keras")
    open(partial, "w").close()  # left by a writer killed mid-save
    with run.lock():
        assert not os.path.exists(partial)
        open(run.results, "w").close()
        run.clear()
        assert os.listdir(run.path) == [".lock"]


def test_every_file_of_a_finished_run_was_renamed_into_place(finished_run):
    config, _, _, replaced = finished_run
    run = RunDirectory(config.output.output_dir)
    # TensorFlow's checkpoints, TensorBoard's logs and the CSV history are
    # written by their libraries (see run_directory's docstring).
    theirs = tuple(
        os.path.abspath(path)
        for path in (run.checkpoints, run.logs, run.history, run.lock_file)
    )
    written = [
        os.path.abspath(os.path.join(folder, name))
        for folder, _, names in os.walk(run.path)
        for name in names
    ]
    in_place = [
        path for path in written if path not in replaced and not path.startswith(theirs)
    ]
    assert written and not in_place
