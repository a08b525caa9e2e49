"""The command line's own-data path on large corpora: memory, start, resume.

Writes a parallel corpus of N pairs to disk (Ding's training pairs repeated,
each copy numbered, so sources stay distinct and the hash hold-out keeps
its share) and runs `keras-transformer train --train-files CORPUS.tsv` with
its defaults, stopped after a few updates, in a child process per
measurement:

    python benchmarks/scale.py --pairs 1000000 4500000 --work-dir /tmp/scale

For each N (and for Ding's own pairs written the same way, the baseline of
the same run) it prints, as JSON:

- `peak_rss_gb`: the child's peak resident memory;
- `seconds_to_first_update`: from the command's start to its first
  checkpoint (written after update 1: `--checkpoint-every 1`);
- `seconds_per_update`: the median time between the checkpoints of the
  second epoch (epochs of `--updates` steps, a checkpoint after each), against
  Ding's in the same run;
- `seconds_to_first_update_after_kill`: a run killed with SIGKILL after
  its checkpoint at `--updates`, restarted: from the restart to its next
  checkpoint (the restart resumes from `checkpoint_before_kill`);
- with `--replay-step S`, `replay`: the seconds to the first batch of the
  training stream, of that stream skipped to step S (how a resume read
  its data before), and of the stream a run resumed at S reads now.

Each run writes under `--work-dir`; the corpora are kept there for reruns.
"""

import argparse
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

CHECKPOINT = re.compile(r"ckpt-(\d+)\.index$")


def write_corpus(path, pairs, count):
    """Writes `count` pairs to the TSV `path`: `pairs` repeated, numbered."""
    if os.path.exists(path):
        return path
    with open(path + ".part", "w", encoding="utf-8") as file:
        for index in range(count):
            source, target = pairs[index % len(pairs)]
            copy = index // len(pairs)
            suffix = f" ({copy})" if copy else ""
            file.write(f"{source}{suffix}\t{target}{suffix}\n")
    os.rename(path + ".part", path)
    return path


def ding_pairs():
    from keras_transformer.data import dataset_to_lists, load_translation_corpus

    train = load_translation_corpus("ding", "de", "en", splits=("train",))["train"]
    sources, targets = dataset_to_lists(train)
    return list(zip(sources, targets, strict=True))


def command(corpus, output_dir, updates, epochs):
    return [
        sys.executable,
        *("-m", "keras_transformer.cli", "train", "--train-files", corpus),
        *("--output-dir", output_dir, "--export-dir=", "--samples", "0"),
        *("--epochs", str(epochs), "--steps-per-epoch", str(updates)),
        *("--checkpoint-every", "1", "--test-sample", "16", "--bleu-sample", "0"),
        *("--average-last", str(epochs * updates)),  # keeps every checkpoint
    ]


def checkpoints(output_dir):
    """{step: modification time} of the run's checkpoints."""
    folder = os.path.join(output_dir, "checkpoints")
    found = {}
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        match = CHECKPOINT.match(name)
        if match:
            found[int(match.group(1))] = os.path.getmtime(os.path.join(folder, name))
    return found


def wait_for_step(process, output_dir, step, timeout):
    """Seconds until a checkpoint at `step` or later exists (None: it ended)."""
    started = time.time()
    while time.time() - started < timeout:
        if any(saved >= step for saved in checkpoints(output_dir)):
            return time.time() - started
        if process.poll() is not None:
            return None
        time.sleep(0.2)
    raise TimeoutError(f"no checkpoint at step {step} in {timeout} s")


def measure(corpus, work_dir, name, updates, timeout):
    """The measurements of one corpus (see the module docstring)."""
    output_dir = os.path.join(work_dir, f"run-{name}")
    subprocess.run(["rm", "-rf", output_dir], check=True)
    log = open(os.path.join(work_dir, f"{name}.log"), "w")
    full = subprocess.Popen(
        command(corpus, output_dir, updates, epochs=2), stdout=log, stderr=log
    )
    first = wait_for_step(full, output_dir, 1, timeout)
    _, status, usage = os.wait4(full.pid, 0)  # this child's own peak memory
    saved = checkpoints(output_dir)
    second_epoch = [saved[step] for step in sorted(saved) if step > updates]
    restarted = os.path.join(work_dir, f"run-{name}-killed")
    subprocess.run(["rm", "-rf", restarted], check=True)
    killed = subprocess.Popen(
        command(corpus, restarted, updates, epochs=2), stdout=log, stderr=log
    )
    wait_for_step(killed, restarted, updates, timeout)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    last = max(checkpoints(restarted))
    resumed = subprocess.Popen(
        command(corpus, restarted, updates, epochs=2), stdout=log, stderr=log
    )
    after_kill = wait_for_step(resumed, restarted, last + 1, timeout)
    resumed.kill()
    resumed.wait()
    return {
        "corpus_pairs": sum(1 for _ in open(corpus, encoding="utf-8")),
        "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),  # ru_maxrss: KiB
        "seconds_to_first_update": first and round(first, 1),
        "seconds_per_update": _median_gap(second_epoch),
        "checkpoint_before_kill": last,
        "seconds_to_first_update_after_kill": after_kill and round(after_kill, 1),
        "exit_status": os.waitstatus_to_exitcode(status),
    }


def replay_cost(corpus, run_dir, step):
    """Seconds to the first training batch: of the stream, of the stream
    skipped to `step` (how a resume read the data before issue 41), and of
    a resumed run's own stream at `step` (how it reads it now); in-process,
    with the tokenizer of the run in `run_dir`."""
    from keras_transformer.data import SubwordTokenizer
    from keras_transformer.recipe.config import RunConfig
    from keras_transformer.recipe.data import RunData, load_splits

    config = RunConfig.from_dict({"data": {"train_files": [corpus]}})
    tokenizer = SubwordTokenizer.load(os.path.join(run_dir, "tokenizer.model"))
    data = RunData(load_splits(config.data), ([], []), ([], []), tokenizer)
    streams = {
        "stream": lambda: data.training_stream(config, 1),
        f"stream_skipped_to_{step}": lambda: data.training_stream(config, 1).skip(step),
        f"own_stream_at_{step}": lambda: data.training_stream(config, 1, step),
    }
    seconds = {}
    for name, stream in streams.items():
        started = time.time()
        next(iter(stream()))
        seconds[name] = round(time.time() - started, 1)
    return seconds


def _median_gap(times):
    """The median of the gaps between sorted `times` (None without two)."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return round(statistics.median(gaps), 2) if gaps else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[1_000_000, 4_500_000])
    parser.add_argument("--work-dir", default="/tmp/keras-transformer-scale")
    parser.add_argument("--updates", type=int, default=10, help="updates an epoch")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds a step")
    parser.add_argument(
        "--replay-step",
        type=int,
        default=0,
        help="also time a resume's first batch at this step, replayed and not,"
        " on the first --pairs corpus",
    )
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    pairs = ding_pairs()
    corpora = {
        "ding": write_corpus(os.path.join(args.work_dir, "ding.tsv"), pairs, len(pairs))
    }
    for count in args.pairs:
        path = os.path.join(args.work_dir, f"pairs-{count}.tsv")
        corpora[str(count)] = write_corpus(path, pairs, count)
    results = {
        name: measure(corpus, args.work_dir, name, args.updates, args.timeout)
        for name, corpus in corpora.items()
    }
    if args.replay_step:
        name = str(args.pairs[0])
        run_dir = os.path.join(args.work_dir, f"run-{name}")
        results["replay"] = replay_cost(corpora[name], run_dir, args.replay_step)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
