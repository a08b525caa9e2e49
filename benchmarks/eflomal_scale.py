"""What `train --train-alignments eflomal` costs as the corpus grows.

Writes corpora of N pairs to disk as `scale.py` does (Ding's training
pairs repeated, each copy numbered) and aligns each with
`data.eflomal_alignment.align_corpus`, the step a guided alignment run
takes before training, in a child process per corpus:

    python benchmarks/eflomal_scale.py --pairs 100000 400000 --work-dir /tmp/scale

Prints, as JSON, for each N: `seconds` (the whole step: reading, eflomal
both ways, writing the intersection), `peak_rss_gb` (the child's peak
resident memory, eflomal's C process included) and `links`, with the
seconds and gigabytes per million pairs, to extrapolate to WMT14's 4.5M.
"""

import argparse
import json
import os
import subprocess
import sys
import time

# The corpora are written by a child too: this process imports no
# TensorFlow, so a child's peak memory is its own (a child starts as a copy
# of its parent's pages, which its peak counts until it runs its program).
WRITE = (
    "import sys\n"
    "from scale import ding_pairs, write_corpus\n"
    "pairs = ding_pairs()\n"
    "for path, count in zip(sys.argv[1::2], sys.argv[2::2]):\n"
    "    write_corpus(path, pairs, int(count))\n"
)
CHILD = (
    "import sys\n"
    "from keras_transformer.data.eflomal_alignment import align_corpus\n"
    "print(align_corpus((sys.argv[1],), sys.argv[2]))\n"
)


def measure(corpus, output):
    """(seconds, peak RSS in GB, links) of aligning `corpus` in a child."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, corpus, output],
        stdout=subprocess.PIPE,
        text=True,
    )
    links = int(child.stdout.read().split()[-1])
    # This child's own rusage: its peak RSS, or its children's (eflomal's).
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if status:
        raise RuntimeError(f"aligning {corpus} failed ({status})")
    return seconds, usage.ru_maxrss / 2**20, links


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[100_000, 400_000])
    parser.add_argument("--work-dir", default="/tmp/scale")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    corpora = {
        count: os.path.join(args.work_dir, f"corpus-{count}.tsv")
        for count in sorted(args.pairs)
    }
    subprocess.run(
        [sys.executable, "-c", WRITE]
        + [str(value) for item in corpora.items() for value in item[::-1]],
        check=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    results = []
    for count, corpus in corpora.items():
        seconds, peak_gb, links = measure(
            corpus, os.path.join(args.work_dir, f"alignments-{count}.txt")
        )
        millions = count / 1e6
        results.append(
            {
                "pairs": count,
                "seconds": round(seconds, 1),
                "peak_rss_gb": round(peak_gb, 2),
                "links": links,
                "seconds_per_million_pairs": round(seconds / millions),
                "gb_per_million_pairs": round(peak_gb / millions, 2),
            }
        )
    print(json.dumps({"cpus": os.cpu_count(), "corpora": results}, indent=1))


if __name__ == "__main__":
    main()
