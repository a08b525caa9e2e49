"""Concurrent requests against an export, loaded the way TF Serving loads it.

`tensorflow_model_server` loads a SavedModel with TensorFlow's C++ loader
into a TF1 session and runs each request as a `Session::Run` of a
signature, from as many threads as there are requests in flight. This
script does the same from Python: `tf.compat.v1.saved_model.loader.load`
into `tf.compat.v1.Session`s (one per model copy, with the session's
thread pools set as `--tensorflow_intra_op_parallelism` and
`--tensorflow_inter_op_parallelism` set them), in a process that imports
TensorFlow and tensorflow-text only, never keras_transformer.

The workload: items drawn from a pool of source texts of mixed lengths (1
word to past the export's `max_length`, from `--texts`, one sentence a
line) and bad inputs (empty, whitespace, 10,000 characters, invalid
UTF-8), in requests of 1 to 64 items (and some of 0) to the
`serving_default`, `greedy`, `beam` and `controlled` signatures. In
`controlled` each item carries its own prefix and controls (`row_controls`),
so one request mixes rows of different settings, as TF Serving's batcher
mixes requests. Every item's answer was first computed alone (a batch of
one, sequentially); under load each answer must equal it: the same
translation, the score within 1e-4.

For each concurrency level (client threads sending requests back to back)
it reports failed and differing answers, p50 / p95 / p99 latency and
sentences per second; then the resident memory after warm-up and after all
requests. `serve_http.py` sends the same workload over HTTP.
`--configs` first compares session thread settings at the highest level.

    python benchmarks/serve_load.py saved_models/translator/1 \\
        --texts test.de --requests 3400

Prints one JSON object on stdout.
"""

import argparse
import json
import os
import platform
import queue
import random
import statistics
import sys
import threading
import time

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

SIGNATURES = ("serving_default", "greedy", "beam", "controlled")
BEAM = {"beam_size": 3, "alpha": 0.6}  # the `beam` signature's scalars
# The `controlled` signature's per-row inputs: each item draws its own.
ROW_CHOICES = {
    "prefix": (b"", b"", b"The ", b"It is", b"a "),
    "repetition_penalty": (1.0, 1.3),
    "no_repeat_ngram_size": (0, 2, 3),
    "min_length": (0, 4),
    "disable_unk": (False, True),
    "banned": ((b"",), (b"the", b""), (b"und", b"a")),
    # single letters: words of every vocabulary, the test's reversal too
    "required": ((b"",), (b"",), (b"e",), (b"o", b"")),
}
ROW_TYPES = {
    "prefix": object,
    "repetition_penalty": np.float32,
    "no_repeat_ngram_size": np.int32,
    "min_length": np.int32,
    "disable_unk": bool,
    "banned": object,
    "required": object,
}
BAD_INPUTS = (
    b"",
    b" \t ",
    b"\xff\xfe Guten \xc3 Morgen \xed\xa0\x80",  # invalid UTF-8
    ("Abend " * 1700).encode(),  # 10,200 characters
    b"x" * 10_000,
)
SCORE_TOLERANCE = 1e-4
MEMORY_BOUND = 0.10  # RSS may grow by 10% of the warm-up RSS at most


def resident_mib():
    """This process's resident memory (VmRSS), in MiB."""
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise OSError("No VmRSS in /proc/self/status.")


class SessionModel:
    """One copy of the export in a TF1 session, as TF Serving holds it.

    Args:
        path: the export's version folder.
        intra_op, inter_op: the session's thread pools (0: TensorFlow's
            default, the number of cores).
    """

    def __init__(self, path, intra_op=0, inter_op=0):
        config = tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=intra_op,
            inter_op_parallelism_threads=inter_op,
        )
        self.session = tf.compat.v1.Session(graph=tf.Graph(), config=config)
        meta_graph = tf.compat.v1.saved_model.loader.load(self.session, ["serve"], path)
        self.signatures = {name: meta_graph.signature_def[name] for name in SIGNATURES}

    def run(self, name, texts, rows=None):
        """Signature `name` on a list of bytes (and for `controlled`, the
        `row_controls` of each) -> (translations, scores)."""
        signature = self.signatures[name]
        feed = {
            signature.inputs[key].name: value
            for key, value in signature_inputs(name, texts, rows).items()
        }
        outputs = self.session.run(
            [signature.outputs[key].name for key in ("translation", "score")],
            feed_dict=feed,
        )
        return list(outputs[0]), list(outputs[1])


def signature_inputs(name, texts, rows):
    """The inputs of signature `name`, by input name, for `texts` (bytes)
    and, for `controlled`, their `row_controls`."""
    inputs = {"text": np.array(texts, dtype=object)}
    if name == "beam":
        inputs.update(BEAM)
    if name == "controlled":
        for key, dtype in ROW_TYPES.items():
            if key in ("banned", "required"):  # (B, N): padded with "", as
                # TF Serving pads
                width = max([1, *(len(row[key]) for row in rows)])
                values = np.full((len(rows), width), b"", dtype=object)
                for index, row in enumerate(rows):
                    values[index, : len(row[key])] = row[key]
            else:
                values = np.array([row[key] for row in rows], dtype=dtype)
            inputs[key] = values
    return inputs


def row_controls(index):
    """The `controlled` inputs of pool item `index`, drawn once per item."""
    rng = random.Random(index)
    return {key: rng.choice(choices) for key, choices in ROW_CHOICES.items()}


def call(model, name, pool, items):
    """Signature `name` on the pool's `items` -> (translations, scores)."""
    return model.run(name, [pool[i] for i in items], [row_controls(i) for i in items])


def make_pool(sentences, size, max_words, seed):
    """`size` texts of 1 to `max_words` words from `sentences`, plus bad ones."""
    rng = random.Random(seed)
    words = " ".join(sentences).split()
    pool = []
    for _ in range(size):
        length = min(int(np.exp(rng.uniform(0, np.log(max_words)))), max_words)
        start = rng.randrange(len(words) - length)
        pool.append(" ".join(words[start : start + length]).encode())
    return pool + list(BAD_INPUTS)


def make_requests(pool, count, seed):
    """`count` (signature, item indices) requests: mostly small, up to 64."""
    rng = random.Random(seed)
    requests = []
    for _ in range(count):
        draw = rng.random()
        if draw < 0.02:
            batch = 0
        elif draw < 0.70:
            batch = rng.randint(1, 4)
        elif draw < 0.95:
            batch = rng.randint(5, 16)
        else:
            batch = rng.randint(17, 64)
        items = [rng.randrange(len(pool)) for _ in range(batch)]
        requests.append((rng.choice(SIGNATURES), items))
    return requests


def reference_answers(model, pool):
    """{(signature, item index): (translation, score)}, each item alone."""
    return {
        (name, index): tuple(value[0] for value in call(model, name, pool, [index]))
        for name in SIGNATURES
        for index in range(len(pool))
    }


def warm_up(model, pool):
    """Runs every signature on the largest batches the load will send."""
    longest = sorted(range(len(pool)), key=lambda index: len(pool[index]))[-64:]
    for name in SIGNATURES:
        for batch in (1, 16, 64, 0):
            call(model, name, pool, longest[:batch])


def run_level(models, pool, requests, threads, references):
    """Sends `requests` from `threads` client threads, model copies in turn."""
    work = queue.Queue()
    for number, request in enumerate(requests):
        work.put((number, request))
    latencies, failures, differing = [], [], []
    lock = threading.Lock()

    def client(copy):
        model = models[copy % len(models)]
        while True:
            try:
                number, (name, items) = work.get_nowait()
            except queue.Empty:
                return
            started = time.perf_counter()
            try:
                translations, scores = call(model, name, pool, items)
            except Exception as error:  # a failed request, reported
                with lock:
                    failures.append(f"request {number}: {error!r}"[:300])
                continue
            elapsed = time.perf_counter() - started
            wrong = [
                index
                for index, translation, score in zip(
                    items, translations, scores, strict=True
                )
                if references[name, index][0] != translation
                or abs(references[name, index][1] - score) > SCORE_TOLERANCE
            ]
            with lock:
                latencies.append(elapsed)
                if wrong or len(translations) != len(items):
                    differing.append({"request": number, "items": wrong})

    print(f"{len(requests)} requests from {threads} threads...", file=sys.stderr)
    started = time.perf_counter()
    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    sentences = sum(len(items) for _, items in requests)
    milliseconds = sorted(1000 * latency for latency in latencies)
    return {
        "threads": threads,
        "requests": len(requests),
        "sentences": sentences,
        "failed": len(failures),
        "differing": len(differing),
        "failures": failures[:5],
        "differing_examples": differing[:5],
        "p50_ms": round(statistics.median(milliseconds), 1),
        "p95_ms": round(milliseconds[int(0.95 * (len(milliseconds) - 1))], 1),
        "p99_ms": round(milliseconds[int(0.99 * (len(milliseconds) - 1))], 1),
        "sentences_per_second": round(sentences / seconds, 1),
        "seconds": round(seconds, 1),
    }


def cpu_name():
    """The CPU's model name from /proc/cpuinfo, else the platform's."""
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_models(path, copies, intra_op, inter_op):
    return [SessionModel(path, intra_op, inter_op) for _ in range(copies)]


def compare_configs(path, configs, pool, requests, threads, references):
    """Sentences per second of each `copies x intra-op threads` setting."""
    results = []
    for config in configs:
        copies, intra = (int(part) for part in config.split("x"))
        models = load_models(path, copies, intra, intra)
        for model in models:
            warm_up(model, pool)
        level = run_level(models, pool, requests, threads, references)
        results.append({"config": config, **level})
        del models
    return results


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument(
        "--texts", required=True, help="source sentences, one a line (UTF-8)"
    )
    parser.add_argument("--threads", default="1,4,16", help="concurrency levels")
    parser.add_argument(
        "--requests", type=int, default=3400, help="requests per level (3400)"
    )
    parser.add_argument("--pool", type=int, default=200, help="distinct texts (200)")
    parser.add_argument(
        "--max-words", type=int, default=80, help="longest text, in words (80)"
    )
    parser.add_argument(
        "--copies", type=int, default=1, help="model copies (sessions) for the load"
    )
    parser.add_argument(
        "--intra-op", type=int, default=0, help="session intra-op threads (0: cores)"
    )
    parser.add_argument(
        "--inter-op", type=int, default=0, help="session inter-op threads (0: cores)"
    )
    parser.add_argument(
        "--configs",
        default="",
        help="compare copies x threads first, e.g. 1x2,1x1,2x1 (default: none)",
    )
    parser.add_argument(
        "--config-requests", type=int, default=300, help="requests per config"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    with open(args.texts, encoding="utf-8") as file:
        sentences = [line.strip() for line in file if line.strip()]
    pool = make_pool(sentences, args.pool, args.max_words, args.seed)
    levels = [int(threads) for threads in args.threads.split(",")]

    models = load_models(args.saved_model, args.copies, args.intra_op, args.inter_op)
    warm_up(models[0], pool)
    print(f"Translating the {len(pool)} texts alone...", file=sys.stderr)
    references = reference_answers(models[0], pool)
    configs = []
    if args.configs:
        configs = compare_configs(
            args.saved_model,
            args.configs.split(","),
            pool,
            make_requests(pool, args.config_requests, args.seed + 1),
            max(levels),
            references,
        )
    for model in models[1:]:
        warm_up(model, pool)
    warm_memory = resident_mib()
    results = [
        run_level(
            models,
            pool,
            make_requests(pool, args.requests, args.seed + 2 + number),
            threads,
            references,
        )
        for number, threads in enumerate(levels)
    ]
    final_memory = resident_mib()
    assert "keras_transformer" not in sys.modules  # the server's view only
    growth = final_memory - warm_memory
    print(
        json.dumps(
            {
                "benchmark": "serve_load",
                "loader": "tf.compat.v1.saved_model.loader.load (TF1 session)",
                "export": args.saved_model,
                "tensorflow": tf.__version__,
                "machine": f"{cpu_name()}, {os.cpu_count()} cores",
                "settings": {
                    key: getattr(args, key)
                    for key in ("copies", "intra_op", "inter_op", "pool", "seed")
                },
                "signatures": list(SIGNATURES),
                "beam": BEAM,
                "controlled_rows": {
                    k: [str(v) for v in c] for k, c in ROW_CHOICES.items()
                },
                "configs": configs,
                "levels": results,
                "total_requests": sum(level["requests"] for level in results),
                "memory_mib": {
                    "after_warm_up": round(warm_memory, 1),
                    "after_load": round(final_memory, 1),
                    "growth": round(growth, 1),
                    "bound": round(MEMORY_BOUND * warm_memory, 1),
                    "within_bound": growth <= MEMORY_BOUND * warm_memory,
                },
                "all_answers_equal": all(
                    not level["failed"] and not level["differing"]
                    for level in results + configs
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
