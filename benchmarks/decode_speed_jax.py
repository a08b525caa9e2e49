"""Decoding speed on the JAX backend: `decode` under `jax.jit`.

Needs only keras, keras-hub, jax and numpy; TensorFlow is never imported by
this script or the package's decoding (keras-hub loads it only where it is
installed), so it runs where TensorFlow is not installed, e.g. a GPU machine
with jax, keras and keras-hub. From the repository root (the package need
not be installed; PYTHONPATH=. finds it), on one GPU:

    KERAS_BACKEND=jax PYTHONPATH=. python benchmarks/decode_speed_jax.py \
        --config base big > benchmarks/results/decode_speed_jax_gpu.json

Generated tokens per second of `keras_transformer.decoding.decode`, greedy
(`--search greedy`) and beam 4 (`beam_4`), at batch sizes 1 and 32, of
random sources of `source_length` tokens (no padding) with a randomly
initialised model of a preset's shape (`--config small base big`: small
with a vocabulary of 8,000, the shape of `decode_speed.py`; base and big
with 37,000), every sequence forced to exactly `--new-tokens` tokens: the
end id is one no model can produce (-1) and every limit
(`extra_length`, `max_length`) equals `--new-tokens`.

The row `jax_jit` is `decode` under `jax.jit` for the sources' fixed shape,
the model's weights passed as the jitted function's arguments (a
`keras.StatelessScope` maps them onto the variables, as Keras's own JAX
trainer does): captured as constants instead, they made base compile
four times slower (24 s against 7 s on a CPU) and big's program hold its
weights. The first call compiles and is left out of the timing
(`first_call_seconds` reports it); after a second warm-up call, the
(search, batch) pairs of a config take turns in interleaved rounds, so a
change in the machine's load hits them alike. Tokens per second = batch *
new tokens / the median wall time of one call (`block_until_ready`;
encoder, cache set-up and the whole loop; beam search counts the tokens of
the returned sequences, not of every beam).

No eager row: `decode` called without `jax.jit` traces and compiles its
decoding loop (`lax.while_loop` over a step function made afresh each
call) on every call, about 2 s on a CPU for the small model, against
20 ms for the jitted call: it times XLA's compiler, not decoding.

`--weights PATH` loads a `.weights.h5` saved by an identically configured
model (`decode_speed.py --jax` passes `ours`'s, so that TensorFlow and JAX
decode with the same weights; one `--config` only).

    KERAS_BACKEND=jax python benchmarks/decode_speed_jax.py             # small
    KERAS_BACKEND=jax python benchmarks/decode_speed_jax.py --quick     # smoke
    KERAS_BACKEND=jax python benchmarks/decode_speed_jax.py --search greedy \
        --batch-size 1 8 64 --new-tokens 64
    python benchmarks/decode_speed.py --jax   # beside the TensorFlow rows
"""

import argparse
import os
import time

import common
import jax
import keras
import numpy as np

import keras_transformer.models as ktm
from keras_transformer.decoding import decode

SEARCHES = {"greedy": 1, "beam_4": 4}
CONFIGS = {
    "small": common.preset_shape("small", 8000),  # decode_speed.py's shape
    "base": common.preset_shape("base", 37000),
    "big": common.preset_shape("big", 37000),
}
QUICK_CONFIGS = {name: dict(common.QUICK_SHAPE) for name in CONFIGS}
FULL = dict(source_length=32, new_tokens=32, batch_sizes=[1, 32], repeats=7)
QUICK = dict(source_length=8, new_tokens=8, batch_sizes=[1, 4], repeats=3)


def build_model(shape, weights=None):
    """Our model of `shape` (`common.SHAPE_KEYS`), random or from `weights`."""
    keras.utils.set_random_seed(0)
    model = ktm.build_transformer(ktm.TransformerConfig(**shape))
    if weights is not None:
        model.load_weights(weights)
    return model


def jitted_decode(model, beam_size, new_tokens):
    """`decode` under `jax.jit`: a function of source ids (B, S) -> (B, 1, N).

    The weights are arguments of the compiled program, not constants in it.
    """
    variables = model.variables

    def run(values, ids):
        mapping = list(zip(variables, values, strict=True))
        with keras.StatelessScope(state_mapping=mapping):
            output_ids, _ = decode(
                model, ids, beam_size=beam_size, **common.forced_length(new_tokens)
            )
        return output_ids  # (B, 1, N)

    compiled = jax.jit(run)
    values = [variable.value for variable in variables]
    return lambda ids: compiled(values, ids)


def seconds(function, ids):
    """Wall-clock seconds of `function(ids)`, until its outputs are ready."""
    start = time.perf_counter()
    jax.block_until_ready(function(ids))
    return time.perf_counter() - start


def time_config(model, searches, settings, vocab_size):
    """Times `jax_jit` for each search and batch size, in interleaved rounds.

    Returns:
        {search: {"batch_<B>": {"jax_jit": {"tokens_per_second",
        "median_seconds", "first_call_seconds"}}}}.
    """
    rng = np.random.default_rng(0)
    new_tokens = settings["new_tokens"]
    cases = {}  # (search, batch size) -> (function, ids)
    first_call = {}
    for search in searches:
        function = jitted_decode(model, SEARCHES[search], new_tokens)
        for batch_size in settings["batch_sizes"]:
            ids = jax.device_put(
                rng.integers(
                    3, vocab_size, (batch_size, settings["source_length"]), "int32"
                )
            )
            start = time.perf_counter()
            outputs = np.asarray(function(ids))
            first_call[search, batch_size] = time.perf_counter() - start
            if outputs.shape != (batch_size, 1, new_tokens):
                raise RuntimeError(f"{search} returned {outputs.shape} tokens.")
            seconds(function, ids)  # a second warm-up call
            cases[search, batch_size] = function, ids
    times = {case: [] for case in cases}
    for _ in range(settings["repeats"]):
        for case, (function, ids) in cases.items():
            times[case].append(seconds(function, ids))
    results = {search: {} for search in searches}
    for (search, batch_size), values in times.items():
        median = common.median(values)
        results[search][f"batch_{batch_size}"] = {
            "jax_jit": {
                "tokens_per_second": common.rounded(batch_size * new_tokens / median),
                "median_seconds": common.rounded(median),
                "first_call_seconds": common.rounded(first_call[search, batch_size], 3),
            }
        }
    return results


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", nargs="+", choices=list(CONFIGS), default=["small"])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, few repeats")
    parser.add_argument(
        "--search", nargs="+", choices=sorted(SEARCHES), default=list(SEARCHES)
    )
    parser.add_argument(
        "--batch-size", type=int, nargs="+", help="batch sizes (default 1 32)"
    )
    parser.add_argument("--repeats", type=int, help="timed rounds (default 7)")
    parser.add_argument("--new-tokens", type=int, help="tokens generated (32)")
    parser.add_argument("--source-length", type=int, help="source tokens (32)")
    parser.add_argument(
        "--weights",
        metavar="PATH",
        help="a .weights.h5 of an identically configured model (one --config)",
    )
    args = parser.parse_args(argv)
    if args.weights and len(args.config) > 1:
        parser.error("--weights takes one --config")
    return args


def main(argv=None):
    args = parse_args(argv)
    if keras.backend.backend() != "jax":
        raise SystemExit("Run with KERAS_BACKEND=jax (see the top of this script).")
    settings = dict(QUICK if args.quick else FULL)
    for name in ("batch_size", "repeats", "new_tokens", "source_length"):
        value = getattr(args, name)
        if value is not None:
            settings["batch_sizes" if name == "batch_size" else name] = value
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    environment = {
        **common.environment(),
        "device_kind": jax.devices()[0].device_kind,
    }
    runs = []
    for config_name in args.config:
        shape = configs[config_name]
        model = build_model(shape, args.weights)
        runs.append(
            {
                "config": config_name,
                "model": {**shape, "parameters": model.count_params()},
                "results": time_config(
                    model, args.search, settings, shape["vocab_size"]
                ),
            }
        )
    common.print_json(
        {
            "benchmark": "decode_speed_jax",
            "quick": args.quick,
            "weights": args.weights,
            "source_length": settings["source_length"],
            "new_tokens": settings["new_tokens"],
            "batch_sizes": settings["batch_sizes"],
            "repeats": settings["repeats"],
            "unit": "generated tokens per second (batch * new_tokens / median "
            "seconds per call); beam search counts the returned sequence only",
            "runs": runs,
            "environment": environment,
            "load_average_1m_at_end": common.rounded(os.getloadavg()[0], 3),
        }
    )


if __name__ == "__main__":
    main()
