"""A disk that fills up during a checkpoint save and during an export.

One subprocess, in a user and mount namespace of its own (nothing leaks
to the host), mounts a 32 MB tmpfs and runs this module's `drive` there: it
calls `keras_transformer.cli.main` in-process four times, on a tiny run
whose files are all on that tmpfs, and reports what each call printed (its
file descriptors 1 and 2, kept outside the tmpfs) and what it left:

1. `train`, whose first checkpoint (step 2) is followed by a filler file
   that takes every free byte, so that its next checkpoint finds no room;
2. the same `train` once the filler is gone: it resumes and finishes;
3. `export RUN` on a full disk, beside the version 1 that step 2 exported;
4. the same `export` once the filler is gone: version 2.

The test checks the issue's three points for both: one line naming the
folder and the cause, status 1; the checkpoint and the export before are
intact (no partial files or staging folders beside them); the same command
goes on once space is back. Where no such namespace can be made the test
is skipped: RLIMIT_FSIZE is no stand-in, as h5py, writing a file past the
limit, prints errors of its own from its destructors.

A quick test checks that what the other writers raised on that tmpfs is
recognised too, and that an accelerator's out-of-memory error is not.
"""

import errno
import json
import os
import shlex
import shutil
import subprocess
import sys
import traceback

import pytest

from tests.fixtures.backends import python_environment

DISK_MB = 32
STEPS = 6
CHECKPOINT_EVERY = 2
TOKENIZER = os.path.join(os.path.dirname(__file__), "fixtures/run_v1/tokenizer.model")
WORDS = {"Haus": "house", "Hund": "dog", "Katze": "cat", "Baum": "tree"}
# What h5py and TensorFlow's SaveV2 raised on a full tmpfs (paths shortened).
H5PY_FILE = "run/.best.partial-7.weights.h5"
H5PY_TEXT = (
    "Unable to synchronously create file (file write failed: time = Sat Dec  5"
    f" 20:42:09 2026\n, filename = '{H5PY_FILE}', file descriptor = 3, errno ="
    " 28, error message = 'No space left on device', buf = 0x55d3af0fa848, total"
    " write size = 96)"
)
SAVE_FILE = "run/checkpoints/ckpt-4_temp/part-00000-of-00001.data-00000-of-00001.t"
SAVE_TEXT = (
    "{{function_node __wrapped__SaveV2_dtypes_16_device_/job:localhost/replica:0"
    f"/task:0/device:CPU:0}}}} {SAVE_FILE}; No space left on device [Op:SaveV2]"
)


def test_what_a_full_disk_raises_in_each_writer_is_recognised():
    import tensorflow as tf

    from keras_transformer.cli.errors import disk_full

    full, too_large = errno.ENOSPC, errno.EFBIG
    cases = [  # (error, what `disk_full` makes of it)
        (OSError(full, os.strerror(full)), (full, None)),  # a write
        (OSError(too_large, os.strerror(too_large), "a.csv"), (too_large, "a.csv")),
        (OSError(full, H5PY_TEXT), (full, H5PY_FILE)),
        (
            RuntimeError(f"Can't decrement id ref count ({H5PY_TEXT})"),
            (full, H5PY_FILE),
        ),
        (tf.errors.ResourceExhaustedError(None, None, SAVE_TEXT), (full, SAVE_FILE)),
        (tf.errors.OutOfRangeError(None, None, "x; File too large"), (too_large, "x")),
        # An accelerator's out-of-memory error is no full disk.
        (tf.errors.ResourceExhaustedError(None, None, "OOM when allocating"), None),
        (PermissionError(errno.EACCES, "Permission denied", "run"), None),
        (ValueError("No space left on device"), None),
    ]
    for error, expected in cases:
        assert disk_full(error) == expected, error


def namespace_command(disk, command):
    """`command` (a shell line) run with a tmpfs mounted on `disk`, in a
    user and mount namespace of its own."""
    mount = f"mount -t tmpfs -o size={DISK_MB}m tmpfs {shlex.quote(str(disk))}"
    namespace = ["unshare", "--user", "--map-root-user", "--mount"]
    return [*namespace, "sh", "-c", f"{mount} && {command}"]


def namespace_problem(tmp_path):
    """Why no tmpfs can be mounted here in a namespace, or None."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = tmp_path / "probe"
    probe.mkdir()
    made = subprocess.run(
        namespace_command(probe, "true"), capture_output=True, text=True
    )
    return (made.stderr.strip() or "mount failed") if made.returncode else None


@pytest.mark.slow
@pytest.mark.longest
def test_a_full_disk_is_one_line_and_the_same_command_goes_on(tmp_path):
    problem = namespace_problem(tmp_path)
    if problem:
        pytest.skip(f"cannot mount a tmpfs in a user and mount namespace: {problem}")
    disk, outputs = tmp_path / "disk", tmp_path / "outputs"
    disk.mkdir()
    outputs.mkdir()
    driver = f"exec {shlex.quote(sys.executable)} -m tests.test_disk_full"
    process = subprocess.run(
        namespace_command(disk, f"{driver} {disk} {outputs}"),
        capture_output=True,
        text=True,
        # TensorFlow's C++ logs held back, as the command line does by default.
        env={**python_environment("tensorflow", tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=600,
    )
    assert process.returncode == 0, process.stderr[-5000:]
    report = json.loads(process.stdout.splitlines()[-1])
    run, model_dir = f"{disk}/run", f"{disk}/saved_models/translator"

    status, out, err = report["train on a full disk"]
    assert (status, err) == (
        1,
        f"keras-transformer: error: no space left on device while writing "
        f"{run}/checkpoints. Free some space and run the same command again: it"
        " resumes from the last checkpoint.\n",
    ), out[-3000:]
    assert report["checkpoints left"] == {
        "listed": [f"{run}/checkpoints/ckpt-2"],
        "files": ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index"],
    }
    status, out, err = report["train again"]
    assert status == 0, err[-3000:]
    assert f"resuming at step {CHECKPOINT_EVERY}" in out
    assert report["steps"] == STEPS

    status, out, err = report["export on a full disk"]
    assert (status, err) == (
        1,
        f"keras-transformer: error: no space left on device while writing "
        f"{model_dir}. Free some space and export again: the versions exported"
        " before are untouched.\n",
    ), out[-3000:]
    assert report["versions left"] == ["1"]  # no staging folder beside it
    assert report["version 1 translations"] == 2
    status, out, err = report["export again"]
    assert status == 0, err[-3000:]
    assert out.endswith(f"Exported the translator to {model_dir}/2\n")


def drive(disk, outputs):
    """Runs the four commands on the tmpfs `disk`; prints a JSON report."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exported tokenizer's ops)

    from keras_transformer.training import checkpoints

    run, model_dir = f"{disk}/run", f"{disk}/saved_models/translator"
    pairs = f"{disk}/pairs.tsv"
    with open(pairs, "w", encoding="utf-8") as file:
        for number in range(32):
            source, target = list(WORDS.items())[number % len(WORDS)]
            file.write(f"Das {source} ist {number}.\tThe {target} is {number}.\n")
    train = [
        "train",
        *(f"--{split}-files={pairs}" for split in ("train", "valid", "test")),
        f"--vocab={TOKENIZER}",
        "--vocab-size=500",
        "--preset=tiny",
        '--model={"d_model": 32, "d_ff": 64, "num_heads": 2}',
        "--max-length=24",
        "--tokens-per-batch=256",
        "--epochs=1",
        f"--steps-per-epoch={STEPS}",
        f"--checkpoint-every={CHECKPOINT_EVERY}",
        "--average-last=1",
        "--beam-size=2",
        "--bleu-sample=0",
        "--test-sample=2",
        "--samples=0",
        f"--output-dir={run}",
        f"--export-dir={disk}/saved_models",
    ]
    export = ["export", run, "--format=saved_model", f"--output={model_dir}"]
    filler = f"{disk}/filler"
    report = {}

    save = checkpoints.TrainingCheckpoints.save

    def save_then_fill(self):
        path = save(self)
        if not os.path.exists(filler):
            fill(filler)
        return path

    checkpoints.TrainingCheckpoints.save = save_then_fill
    report["train on a full disk"] = command(train, outputs)
    checkpoints.TrainingCheckpoints.save = save
    state = tf.train.get_checkpoint_state(f"{run}/checkpoints")
    report["checkpoints left"] = {
        "listed": list(state.all_model_checkpoint_paths),
        "files": sorted(os.listdir(f"{run}/checkpoints")),
    }
    os.remove(filler)
    report["train again"] = command(train, outputs)
    with open(f"{run}/results.json", encoding="utf-8") as file:
        report["steps"] = json.load(file)["steps"]

    fill(filler)
    report["export on a full disk"] = command(export, outputs)
    report["versions left"] = sorted(os.listdir(model_dir))
    translate = tf.saved_model.load(f"{model_dir}/1").signatures["serving_default"]
    texts = translate(text=tf.constant(["Das Haus ist 3.", "Der Hund"]))
    report["version 1 translations"] = len(texts["translation"].numpy())
    os.remove(filler)
    report["export again"] = command(export, outputs)
    print(json.dumps(report))


def fill(path):
    """Writes zeros to `path` until the disk has no room left."""
    with open(path, "wb", buffering=0) as file:
        try:
            while True:
                file.write(bytes(1 << 20))
        except OSError:
            pass


def command(argv, outputs):
    """(exit status, stdout, stderr) of `main(argv)`, its file descriptors 1
    and 2 (TensorFlow's C++ logs too) written to files in `outputs`."""
    from keras_transformer.cli import main

    names = [os.path.join(outputs, f"{argv[0]}.{stream}") for stream in (1, 2)]
    saved = [os.dup(descriptor) for descriptor in (1, 2)]
    sys.stdout.flush()
    sys.stderr.flush()
    for descriptor, name in zip((1, 2), names, strict=True):
        file = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(file, descriptor)
        os.close(file)
    status = 0
    try:
        main(argv)
    except SystemExit as stopped:
        status = stopped.code
    except Exception:  # a traceback: the report shows it
        traceback.print_exc()
        status = "raised"
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for descriptor, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, descriptor)
            os.close(copy)
    texts = []
    for name in names:
        with open(name, encoding="utf-8") as file:
            texts.append(file.read())
    return [status, *texts]


if __name__ == "__main__":
    drive(*sys.argv[1:])
