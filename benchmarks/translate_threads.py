"""`keras-transformer translate --threads N`: seconds for a file, by N and engine.

Each run is the command a user types, in a fresh process (the thread
count is fixed when TensorFlow or CTranslate2 starts), translating the
same file; runs of the settings are interleaved, `--repeats` rounds, and
the median is reported. A run on an empty file measures the start-up (the
import and the export's load), which is subtracted to give sentences per
second of translation alone.

    python benchmarks/translate_threads.py saved_models/translator/1 \\
        saved_models/translator-ct2 --texts test.de --threads 1 0

Prints one JSON object on stdout.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time


def run_seconds(export, path, threads, batch_size):
    """Wall seconds of one `translate` command over the file at `path`."""
    command = [sys.executable, "-m", "keras_transformer.cli", "translate", export]
    command += [path, "--threads", str(threads), "--batch-size", str(batch_size)]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exports", nargs="+", help="SavedModel or CTranslate2 exports")
    parser.add_argument("--texts", required=True, help="a sentence a line")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    with open(args.texts, encoding="utf-8") as file:
        sentences = sum(1 for _ in file)
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as empty:
        settings = [(e, t) for e in args.exports for t in args.threads]
        seconds = {setting: [] for setting in settings}
        startup = {setting: [] for setting in settings}
        for _ in range(args.repeats):
            for export, threads in settings:
                seconds[export, threads].append(
                    run_seconds(export, args.texts, threads, args.batch_size)
                )
                startup[export, threads].append(
                    run_seconds(export, empty.name, threads, args.batch_size)
                )
    rows = []
    for export, threads in settings:
        total = statistics.median(seconds[export, threads])
        start = statistics.median(startup[export, threads])
        rows.append(
            {
                "export": export,
                "threads": threads,
                "seconds": round(total, 2),
                "startup_seconds": round(start, 2),
                "sentences_per_second": round(sentences / max(total - start, 1e-3), 1),
            }
        )
    print(
        json.dumps(
            {
                "machine": platform.processor() or platform.machine(),
                "cores": len(os.sched_getaffinity(0)),
                "load_average": os.getloadavg(),
                "sentences": sentences,
                "batch_size": args.batch_size,
                "repeats": args.repeats,
                "rows": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
