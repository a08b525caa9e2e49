"""Kills `keras-transformer train` at random moments; every run must recover.

    python benchmarks/crash_test.py --kills 50 --writes  # the full test
    python benchmarks/crash_test.py --kills 3 --quick    # the suite's version

A tiny run of the main job (a 32-wide model, 2 epochs of 4 steps, its
checkpoints averaged, the test split scored, the translator exported) reads
Ding's pairs from a TSV file on disk, so that every phase a real run has is
there: start-up, corpus scan, vocabulary, pass count, fit, checkpoint save,
best weights, averaging, test scoring, export, results. Each chain starts
in a fresh folder and kills the command with SIGKILL once per target, then
runs the same command again until it finishes:

- "phases" chains aim a kill at each phase in turn (the moment is drawn
  within the phase, as long as the undisturbed run spent in it; the short
  writes are hit when their temporary file is seen);
- "random" chains kill at moments drawn over the undisturbed run's length;
- with `--writes`, fresh runs are killed at their first, second, ... fsync
  (strace's fault injection), the moment each file of the run folder is
  written but not yet renamed into place, or renamed but its folder not yet
  flushed: SQLite's way of testing crashes, one write at a time.

The phase a kill hit is read off the process at that moment: the lines it
printed, the files of its run folder (partial files, TensorFlow's temporary
checkpoint files) and the corpus file it holds open. After each kill the
next run must resume at the newest complete checkpoint; after each chain
the run folder is checked: every JSON file parses, no partial file is left,
the tokenizer loads, the checkpoints restore and the newest is the planned
last step, results.json exists and counts every step, the model and the
best weights load, and the export loads and translates.

It prints one JSON object: kills, recoveries, the phases hit, corrupt files
and other problems (an empty list each when all is well); it exits 1 when
any problem was found. Nothing is timed here: the moments only place kills.
"""

import argparse
import csv
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

from crash_watch import PHASES, POLL_S, QUICK_TARGETS, Attempt, newest_checkpoint

from keras_transformer.recipe.run_directory import PARTIAL_PATTERN

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

EPOCHS = 2
STEPS_PER_EPOCH = 4
# What a run disturbed only by a refused second writer must share with an
# undisturbed one.
COMPARED = ("steps", "bleu", "chrf", "history")
# The phase in which a run-folder file (by its stem) is written.
WRITE_PHASES = {
    "job": "corpus scan",  # written once the corpus is read
    "model_config": "corpus scan",
    "tokenizer": "vocabulary",
    "pass_size": "pass count",
    "schedule": "fit",
    "best": "best weights",
    "model": "averaging",
    "results": "results",
}


def train_command(folder, corpus):
    """The tiny run's `keras-transformer train` command in `folder`."""
    return [
        sys.executable,
        "-m",
        "keras_transformer.cli",
        "train",
        f"--train-files={corpus}",
        "--preset=tiny",
        '--model={"d_model": 32, "d_ff": 64, "num_heads": 2}',
        "--vocab-size=500",
        "--max-length=24",
        "--tokens-per-batch=512",
        f"--epochs={EPOCHS}",
        f"--steps-per-epoch={STEPS_PER_EPOCH}",
        "--checkpoint-every=2",
        "--average-last=2",
        "--beam-size=2",
        "--bleu-sample=0",
        "--test-sample=8",
        "--samples=0",
        f"--output-dir={os.path.join(folder, 'run')}",
        f"--export-dir={os.path.join(folder, 'saved_models')}",
    ]


def write_corpus(path, pairs):
    """Writes `pairs` of Ding's training pairs to `path` as TSV, from the
    first again when there are fewer (a corpus long enough to watch it read)."""
    from keras_transformer.data.ding import load_ding_pairs

    train = load_ding_pairs()["train"]
    lines = [train[number % len(train)] for number in range(pairs)]
    with open(path, "w", encoding="utf-8") as file:
        file.writelines(f"{source}\t{target}\n" for source, target in lines)


def run_chain(folder, corpus, targets, durations, rng, killed=None):
    """Runs the command, killing it once per target, until it finishes;
    returns the attempts' records (`killed` first: a kill made before) and
    the problems seen."""
    command = train_command(folder, corpus)
    attempts, problems = [killed] if killed else [], []
    targets = list(targets)
    while True:
        record = Attempt(command, folder, corpus, durations, rng).run(targets)
        newest = attempts[-1]["newest_checkpoint"] if attempts else 0
        if record["planned"] and record["resumed_at"] != newest:
            problems.append(
                f"resumed at step {record['resumed_at']}, but the newest checkpoint"
                f" at the kill was {newest}"
            )
        attempts.append(record)
        if record["phase"] is None:  # not killed: it ended
            if record["returncode"] != 0:
                problems.append(f"the rerun failed: {record['output_tail']}")
            return attempts, problems


def second_writer(folder, corpus, rng):
    """Starts the command, then the same command on the same folder at a
    moment drawn while the first holds the folder; the second must be
    refused in one line and the first must finish. Returns what was seen."""
    command = train_command(folder, corpus)
    first = Attempt(command, folder, corpus, {}, rng)
    while first.phase() == "start-up" and first.process.poll() is None:
        time.sleep(POLL_S)  # the lock is held from before the corpus is read
    time.sleep(rng.uniform(0, 20))
    phase = first.phase()
    started = time.monotonic()
    second = subprocess.run(command, capture_output=True, text=True, check=False)
    refused_in = time.monotonic() - started
    finished = first.run([])
    return {
        "refused_in_seconds": round(refused_in, 2),
        "returncode": second.returncode,
        "message": second.stderr.strip(),
        "first_phase_then": phase,
        "first_finished": finished["returncode"] == 0,
    }


def check_run_folder(folder):
    """The corrupt or missing files of a finished run: (path, problem) pairs."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the export's tokenizer ops)

    import keras_transformer as kt
    from keras_transformer.data.tokenizer import load_tokenizer
    from keras_transformer.recipe.run_directory import RunDirectory

    run = RunDirectory(os.path.join(folder, "run"))
    found = []

    def check(path, read):
        try:
            read(path)
        except Exception as error:  # noqa: BLE001 (any failure is the finding)
            found.append((path, f"{type(error).__name__}: {error}"[:300]))

    for path in glob.glob(os.path.join(run.path, "**", "*.json"), recursive=True):
        check(path, lambda p: json.load(open(p, encoding="utf-8")))
    for path in glob.glob(
        os.path.join(run.path, "**", PARTIAL_PATTERN), recursive=True
    ):
        found.append((path, "a partial file was left"))
    check(run.tokenizer, lambda p: load_tokenizer(p).tokenize(["Guten Morgen"]))
    check(run.history, lambda p: _check_csv(p))
    check(run.model, lambda p: kt.load_model(p))
    check(run.best_weights, lambda p: kt.load_model(run.model).load_weights(p))
    steps = EPOCHS * STEPS_PER_EPOCH
    if newest_checkpoint(folder) != steps:
        found.append((run.checkpoints, f"newest checkpoint not step {steps}"))
    for path in tf.train.get_checkpoint_state(
        run.checkpoints
    ).all_model_checkpoint_paths:
        check(path, lambda p: tf.train.load_checkpoint(p).get_variable_to_shape_map())
    results = {}
    check(run.results, lambda p: results.update(json.load(open(p, encoding="utf-8"))))
    if results and (results["steps"], results["updates"]) != (steps, steps):
        found.append((run.results, f"steps {results['steps']}, not {steps}"))
    export = results.get("export_path") or ""
    check(export, lambda p: _translate(tf.saved_model.load(p)))
    return found, results


def _results(base, name):
    with open(os.path.join(base, name, "run", "results.json")) as file:
        return json.load(file)


def _check_csv(path):
    with open(path, encoding="utf-8") as file:
        rows = list(csv.reader(file))
    if len({len(row) for row in rows}) != 1:
        raise ValueError("rows of different lengths")


def _translate(model):
    outputs = model.signatures["serving_default"](text=["Guten Morgen!"])
    if outputs["translation"].shape != (1,):
        raise ValueError(f"translated to {outputs['translation']}")


def export_folders(folder):
    """(versions, staging folders left) of the chain's export."""
    names = os.listdir(os.path.join(folder, "saved_models", "translator"))
    return sum(name.isdigit() for name in names), sum(
        name.startswith(".") for name in names
    )


def chain_targets(number, left, rng, duration, quick):
    """The targets of chain `number`, at most `left`: every phase in turn
    (even chains) or three moments drawn over `duration` (odd ones);
    `quick`: the phases of `QUICK_TARGETS`."""
    if quick:
        return list(QUICK_TARGETS[:left])
    if number % 2 == 0:
        return list(PHASES[:left])
    return [("random", rng.uniform(0, duration)) for _ in range(min(3, left))]


def calibrate(base, corpus, rng):
    """Runs the command undisturbed: (seconds in each phase, its record)."""
    first_seen = {}
    folder = os.path.join(base, "undisturbed")
    attempt = Attempt(train_command(folder, corpus), folder, corpus, {}, rng)
    undisturbed = attempt.run([], first_seen)
    order = sorted(first_seen, key=first_seen.get)
    ends = [first_seen[phase] for phase in order[1:]] + [undisturbed["seconds"]]
    durations = {p: end - first_seen[p] for p, end in zip(order, ends, strict=True)}
    return durations, undisturbed


def crash_chains(report, base, corpus, durations, rng, kills, quick):
    """Runs chains until `kills` kills (`quick`: one chain); adds to `report`."""
    duration = report["undisturbed_seconds"] or 40.0
    number = 0
    while report["kills"] < kills and not (quick and number):
        targets = chain_targets(number, kills - report["kills"], rng, duration, quick)
        folder = os.path.join(base, f"chain-{number}")
        attempts, problems = run_chain(folder, corpus, targets, durations, rng)
        add_chain(report, f"chain {number}", folder, attempts, problems)
        number += 1
    report["chains"] = number


def write_kills(report, base, corpus, rng):
    """Kills fresh runs at their first, second, ... fsync, the moment a file
    of the run folder is written but not yet renamed into place (or renamed,
    its folder not yet flushed), by strace's fault injection; each is rerun
    until it finishes. Ends at the first run that makes fewer fsyncs."""
    number = 1
    while True:
        folder = os.path.join(base, f"write-{number}")
        inject = f"inject=fsync:signal=SIGKILL:when={number}"
        # Not --seccomp-bpf: with it, strace 6.1 injected nothing.
        strace = ["strace", "-f", "-qq", "-o", os.devnull]
        command = [*strace, "-e", "trace=fsync", "-e", inject]
        started = time.monotonic()
        ended = subprocess.run(
            command + train_command(folder, corpus), capture_output=True, check=False
        )
        if ended.returncode == 0:
            if number == 1:
                report["problems"].append("strace killed no run at its first fsync")
            return
        written = file_being_written(os.path.join(folder, "run"))
        report["writes_hit"][written] = report["writes_hit"].get(written, 0) + 1
        killed = {
            "phase": WRITE_PHASES.get(written.split(".")[0], "fit"),
            "seconds": round(time.monotonic() - started, 2),
            "newest_checkpoint": newest_checkpoint(folder),
            "missed": [],
        }
        attempts, problems = run_chain(folder, corpus, [], {}, rng, killed)
        add_chain(report, f"write {number}", folder, attempts, problems)
        number += 1


def file_being_written(run):
    """The file whose partial is left in `run`, else the newest file."""
    partials = glob.glob(os.path.join(run, PARTIAL_PATTERN))
    if partials:
        return re.sub(r"^\.|\.partial-\d+", "", os.path.basename(partials[0]))
    paths = [os.path.join(run, name) for name in os.listdir(run)]
    return os.path.basename(max(paths, key=os.path.getmtime))


def add_chain(report, name, folder, attempts, problems):
    """Adds a chain's kills, phases and problems to `report`, and the checks
    of its run folder once it finished."""
    killed = [attempt for attempt in attempts if attempt["phase"]]
    report["kills"] += len(killed)
    report["reruns"] += len(attempts) - 1
    for attempt in killed:
        hits = report["phases_hit"]
        hits[attempt["phase"]] = hits.get(attempt["phase"], 0) + 1
    report["missed_targets"] += sum(len(a["missed"]) for a in attempts)
    report["attempts"].append([[a["phase"], a["seconds"]] for a in attempts])
    report["problems"] += [f"{name}: {p}" for p in problems]
    if attempts[-1]["returncode"] == 0:
        corrupt, results = check_run_folder(folder)
        report["recoveries"] += not corrupt
        report["corrupt_files"] += [[name, path, why] for path, why in corrupt]
        versions, staging = export_folders(folder)
        report["export_versions_per_run"].append(versions)
        if staging:
            report["problems"].append(f"{name}: {staging} staging left")
        report["bleu"].append(results.get("bleu"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=100_000, help="corpus pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one chain, a kill in each QUICK_TARGETS phase; no undisturbed run",
    )
    parser.add_argument(
        "--writes",
        action="store_true",
        help="also kill fresh runs at each fsync of a run-folder file (strace)",
    )
    parser.add_argument("--folder", help="where the runs go (default: a temp folder)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = args.folder or tempfile.mkdtemp(prefix="crash-test-")
    os.makedirs(base, exist_ok=True)
    corpus = os.path.join(base, "train.tsv")
    write_corpus(corpus, args.pairs)
    started = time.monotonic()
    report = {
        "benchmark": "crash_test",
        "command": train_command("FOLDER", "train.tsv")[1:],
        "corpus_pairs": args.pairs,
        "undisturbed_seconds": None,
        "phase_seconds": {},
        "kills": 0,
        "recoveries": 0,
        "reruns": 0,
        "phases_hit": {},
        "missed_targets": 0,
        "writes_hit": {},
        "attempts": [],
        "corrupt_files": [],
        "problems": [],
        "export_versions_per_run": [],
        "bleu": [],
    }
    durations = {}
    if not args.quick:
        durations, undisturbed = calibrate(base, corpus, rng)
        report["undisturbed_seconds"] = undisturbed["seconds"]
        report["phase_seconds"] = {p: round(s, 2) for p, s in durations.items()}
        report["undisturbed_bleu"] = _results(base, "undisturbed")["bleu"]
    crash_chains(report, base, corpus, durations, rng, args.kills, args.quick)
    if args.writes:
        if not shutil.which("strace"):
            parser.error("--writes needs strace (apt-get install strace)")
        write_kills(report, base, corpus, rng)
    if not args.quick:
        second = second_writer(os.path.join(base, "second-writer"), corpus, rng)
        ours, theirs = _results(base, "second-writer"), _results(base, "undisturbed")
        second["differs_from_undisturbed"] = [
            key
            for key in ("steps", "bleu", "chrf", "history")
            if ours[key] != theirs[key]
        ]
        report["second_writer"] = second
        if second["returncode"] != 1 or len(second["message"].splitlines()) != 1:
            report["problems"].append(f"second writer: {second}")
    report["seconds"] = round(time.monotonic() - started, 1)
    json.dump(report, sys.stdout, indent=2)
    print()
    sys.exit(1 if report["corrupt_files"] or report["problems"] else 0)


if __name__ == "__main__":
    main()
