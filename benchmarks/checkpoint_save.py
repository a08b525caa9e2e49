"""How long a run stopped by SIGTERM needs: a checkpoint's save, then the exit.

A spot or preemptible machine sends SIGTERM, then SIGKILL after a grace
period (often 30 s). `train` then finishes the batch in flight, saves a
checkpoint of that step and exits with status 130. This script measures the
last two for a preset's model, built as `train` builds it (`build_transformer`,
`transformer_optimizer` compiled in, its Adam slots built): the save exactly
as the trainer makes it (`TrainingCheckpoints.save`, a
`tf.train.CheckpointManager` over the model and the optimizer), repeated,
and the exit of the process that saved it, `sys.exit(130)` as the command
line does:

    python benchmarks/checkpoint_save.py --preset base big --folder runs/bench

Each preset runs in a child process of its own (its exit is what is timed).
For each it prints, as JSON: the parameters, the checkpoint's bytes, the
save's seconds (median, min, max) and MB/s, the same with each file of the
checkpoint `fsync`ed (the bytes on the disk, not only in the page cache: what
survives a machine that powers off rather than shuts down), the exit's
seconds, and whether save and exit fit in `--grace` seconds, with the
slowest disk (MB/s) on which they still would. The `--estimate` presets
are scaled from the first measured one by parameter count (bytes and
seconds grow with it; a measured preset's estimate checks the scaling).
The batch in flight when the signal comes adds up to one training step.

`--folder` should be on the disk the runs write to (default: a temporary
folder under `runs/`, removed afterwards); a tmpfs such as some systems'
`/tmp` holds the checkpoint in memory and would make the save look fast.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import common

from keras_transformer.recipe.run_directory import fsync_file

PRESETS = ("tiny", "small", "base", "big")


def build_trained_model(preset, vocab_size):
    """`preset`'s model compiled as `train` compiles it, its slots built."""
    import keras_transformer as kt

    config = getattr(kt.TransformerConfig, preset)(vocab_size)
    model = kt.build_transformer(config)
    model.compile(
        optimizer=kt.transformer_optimizer(config.d_model),
        loss=kt.LabelSmoothedCrossEntropy(0.1),
    )
    model.optimizer.build(model.trainable_variables)  # slots, as after a step
    return model


def checkpoint_files(prefix):
    """The files of the checkpoint at `prefix` (its index and data shards)."""
    folder, name = os.path.split(prefix)
    return [
        os.path.join(folder, file)
        for file in os.listdir(folder)
        if file.startswith(name + ".")
    ]


def spread(values):
    return {
        "median": common.rounded(common.median(values)),
        "min": common.rounded(min(values)),
        "max": common.rounded(max(values)),
    }


def measure_saves(preset, vocab_size, folder, repeats):
    """Times `repeats` saves (each another step) and, apart, saves + fsync."""
    from keras_transformer.training.checkpoints import TrainingCheckpoints

    model = build_trained_model(preset, vocab_size)
    checkpoints = TrainingCheckpoints(model, folder, max_to_keep=2)
    optimizer = model.optimizer
    step = 0

    def save():
        nonlocal step
        step += 1
        optimizer.iterations.assign(step)
        start = time.perf_counter()
        path = checkpoints.save()
        return path, time.perf_counter() - start

    path, first = save()  # the first save also traces TensorFlow's save function
    for file in checkpoint_files(path):
        fsync_file(file)
    size = sum(os.path.getsize(file) for file in checkpoint_files(path))
    saves, synced = [], []
    for _ in range(repeats):
        saves.append(save()[1])
        path, seconds = save()
        start = time.perf_counter()
        for file in checkpoint_files(path):
            fsync_file(file)
        synced.append(seconds + time.perf_counter() - start)
    median = common.median(saves)
    return {
        "preset": preset,
        "parameters": model.count_params(),
        "checkpoint_bytes": size,
        "first_save_seconds": common.rounded(first),
        "save_seconds": spread(saves),
        "save_mb_per_second": common.rounded(size / median / 1e6),
        "save_and_fsync_seconds": spread(synced),
        "save_and_fsync_mb_per_second": common.rounded(
            size / common.median(synced) / 1e6
        ),
    }


def child(args):
    """Measures one preset, prints its JSON and the moment it exits; exits."""
    common.set_threads(args.threads)
    result = measure_saves(args.child, args.vocab_size, args.folder, args.repeats)
    print(json.dumps(result), flush=True)
    print(json.dumps({"exit_at": time.monotonic()}), flush=True)
    sys.exit(130)  # as `keras-transformer train` after a checkpoint on a signal


def run_child(preset, args, folder):
    """One preset's measurements in a child process, with its exit's seconds."""
    command = [sys.executable, os.path.abspath(__file__), "--child", preset]
    command += ["--vocab-size", str(args.vocab_size), "--folder", folder]
    command += ["--repeats", str(args.repeats)]
    if args.threads:
        command += ["--threads", str(args.threads)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    result = json.loads(process.stdout.readline())
    exit_at = json.loads(process.stdout.readline())["exit_at"]
    process.wait()
    exited = time.monotonic()
    if process.returncode != 130:
        raise RuntimeError(f"{preset}'s child exited with {process.returncode}")
    result["exit_seconds"] = common.rounded(exited - exit_at)
    return result


def verdict(result, grace):
    """Save + exit against the grace period, and the slowest disk that fits.

    The worse of the first save of the process (which also traces) and a
    save with its files fsynced counts; the slowest disk is the one on which
    the checkpoint's bytes alone would take the grace period less the exit.
    """
    save = result["save_seconds"]["median"]
    worst = max(
        result["first_save_seconds"], result["save_and_fsync_seconds"]["median"]
    )
    exit_seconds = result["exit_seconds"]
    room = max(grace - exit_seconds, 1e-9)
    return {
        "save_and_exit_seconds": common.rounded(save + exit_seconds),
        "worst_save_and_exit_seconds": common.rounded(worst + exit_seconds),
        "fits_in_grace": worst + exit_seconds < grace,
        "slowest_disk_mb_per_second_that_fits": common.rounded(
            result["checkpoint_bytes"] / room / 1e6
        ),
    }


def estimate(measured, parameters):
    """Bytes and seconds of a model of `parameters`, scaled from `measured`."""
    scale = parameters / measured["parameters"]
    return {
        "from_preset": measured["preset"],
        "parameters": parameters,
        "checkpoint_bytes": round(measured["checkpoint_bytes"] * scale),
        "save_seconds": common.rounded(measured["save_seconds"]["median"] * scale),
        "save_and_fsync_seconds": common.rounded(
            measured["save_and_fsync_seconds"]["median"] * scale
        ),
    }


def parameter_count(preset, vocab_size):
    """`preset`'s parameters (its model is built, without an optimizer)."""
    import keras_transformer as kt

    model = kt.build_transformer(getattr(kt.TransformerConfig, preset)(vocab_size))
    return model.count_params()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", nargs="+", choices=PRESETS, default=["base"])
    parser.add_argument(
        "--estimate",
        nargs="*",
        choices=PRESETS,
        default=["big"],
        help="presets estimated from the first measured one's parameter count",
    )
    parser.add_argument(
        "--vocab-size",
        type=int,
        default=37000,
        help="shared vocabulary (the paper's en-de BPE: 37000)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--grace", type=float, default=30.0, help="seconds")
    parser.add_argument(
        "--folder",
        help="where the checkpoints are written: a disk the runs write to "
        "(default: a temporary folder under runs/, removed afterwards)",
    )
    parser.add_argument("--child", choices=PRESETS, help=argparse.SUPPRESS)
    common.add_threads_argument(parser)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    parent = args.folder or "runs"
    created = not os.path.exists(parent)
    os.makedirs(parent, exist_ok=True)
    results = {}
    try:
        for preset in args.preset:
            folder = tempfile.mkdtemp(prefix=f"checkpoint_save_{preset}_", dir=parent)
            try:
                results[preset] = run_child(preset, args, folder)
            finally:
                shutil.rmtree(folder)
            results[preset].update(verdict(results[preset], args.grace))
    finally:
        if created:
            os.rmdir(parent)
    measured = results[args.preset[0]]
    estimates = {}
    for preset in args.estimate:
        if preset != measured["preset"]:
            if preset in results:
                count = results[preset]["parameters"]
            else:
                count = parameter_count(preset, args.vocab_size)
            estimates[preset] = estimate(measured, count)
    common.print_json(
        {
            "benchmark": "checkpoint_save",
            "vocab_size": args.vocab_size,
            "grace_seconds": args.grace,
            "folder": os.path.abspath(parent),
            "results": results,
            "estimates": estimates,
            "environment": common.environment(args.threads),
        }
    )


if __name__ == "__main__":
    main()
