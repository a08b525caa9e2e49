"""Training throughput on the JAX backend: ours beside keras-hub's layers.

Needs only keras, keras-hub, jax and numpy; TensorFlow is never imported, so
it runs where TensorFlow is not installed, e.g. a GPU machine with jax, keras
3.15 and keras-hub 0.32. From the repository root (the package need not be
installed; PYTHONPATH=. finds it), on one GPU:

    KERAS_BACKEND=jax PYTHONPATH=. python benchmarks/train_speed_jax.py \
        --config base big > benchmarks/results/train_speed_jax_gpu.json

Two encoder-decoder Transformers of the same shape (d_model, heads, d_ff,
layers, vocabulary; dropout 0.1 on sub-layer outputs and attention
probabilities) train with `model.fit` on the same random token batches:

- `ours`: `keras_transformer.build_transformer` (post-norm, one embedding
  matrix shared by source, target and the output projection, sinusoids);
- `keras_hub`: `TokenAndPositionEmbedding` + `TransformerEncoder` +
  `TransformerDecoder` (post-norm) + a Dense head (`common.HubTransformer`):
  separate source and target embeddings and head (keras-hub's layers have
  no shared embedding with a tied projection) and learned positions, so it
  has more parameters; the matmul FLOPs per step are the same.

Both use Keras's sparse cross-entropy on logits and Adam (beta_2 0.98,
epsilon 1e-9): the package's label-smoothed loss and fused Adam are
TensorFlow code. Each step is one XLA program (`jit_compile=True`). Batches
hold a token budget of target tokens (25,000 for base and big, the paper's
batch size; as many source tokens), of sequences of `length` tokens.

For each configuration and precision (float32, mixed_bfloat16) the models
take turns: a first `fit` (compilation, warm-up steps), then rounds in
which each trains one timed window. Target tokens per second = window steps
* batch * length / the median window time. MFU divides the model's matmul
FLOPs per second (`train_measures.FLOPS_FORMULA`) by the best rate of a
jitted square matmul in the same dtype, measured in the same run.

    KERAS_BACKEND=jax python benchmarks/train_speed_jax.py --config small
    KERAS_BACKEND=jax python benchmarks/train_speed_jax.py --quick --config small
"""

import argparse
import os
import time

import common
import jax
import jax.numpy as jnp
import keras
import numpy as np
from train_measures import (
    FLOPS_FORMULA,
    BatchEndTimes,
    add_utilisation,
    matmul_flops_per_step,
)

import keras_transformer.models as ktm


def preset(name, vocab_size, length, tokens):
    """A preset's shape with batches of `tokens` target tokens (at least 1 row)."""
    shape = common.preset_shape(name, vocab_size)
    return dict(shape, length=length, batch_size=max(1, tokens // length))


CONFIGS = {
    "small": preset("small", 8000, length=64, tokens=2048),  # CPU-sized
    "base": preset("base", 37000, length=64, tokens=25000),
    "big": preset("big", 37000, length=64, tokens=25000),
}
QUICK_CONFIGS = {
    name: dict(config, **common.QUICK_SHAPE, length=16, batch_size=8)
    for name, config in CONFIGS.items()
}
PRECISIONS = ("float32", "mixed_bfloat16")
MODELS = ("ours", "keras_hub")
DROPOUT = 0.1
FULL = dict(warmup_steps=3, window_steps=10, windows=5)
QUICK = dict(warmup_steps=1, window_steps=2, windows=2)


def build_model(name, config):
    """`name`'s model for `config`, under the current global dtype policy."""
    shape = {key: config[key] for key in common.SHAPE_KEYS}
    if name == "ours":
        return ktm.build_transformer(
            ktm.TransformerConfig(
                **shape,
                dropout=DROPOUT,
                attention_dropout=DROPOUT,
            )
        )
    return common.HubTransformer(
        sequence_length=config["length"], dropout=DROPOUT, **shape
    )


def random_batches(config, steps, seed=0):
    """`steps` batches of random ids (no padding): (inputs, labels) arrays."""
    rng = np.random.default_rng(seed)
    rows, length = steps * config["batch_size"], config["length"]
    source = rng.integers(3, config["vocab_size"], (rows, length), dtype="int32")
    target = rng.integers(3, config["vocab_size"], (rows, length + 1), dtype="int32")
    inputs = {"encoder_inputs": source, "decoder_inputs": target[:, :-1]}
    return inputs, target[:, 1:]


def matmul_peak(size, repeats=5, chained=8):
    """Best FLOPs/s of `chained` jitted (size x size) matmuls per dtype."""
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((size, size)) / size**0.5, "float32")

    @jax.jit
    def chain(x):
        for _ in range(chained):
            x = x @ x
        return x

    peaks = {}
    for dtype in ("float32", "bfloat16"):
        x = a.astype(dtype)
        chain(x).block_until_ready()  # compile
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            chain(x).block_until_ready()
            best = min(best, time.perf_counter() - start)
        peaks[dtype] = {"peak": common.rounded(chained * 2 * size**3 / best)}
    return {"size": size, "flops_per_second": peaks}


def fit(model, batches, steps, batch_size, timer):
    """`steps` training steps on the first `steps` batches of `batches`."""
    inputs, labels = batches
    rows = steps * batch_size
    return model.fit(
        {name: array[:rows] for name, array in inputs.items()},
        labels[:rows],
        batch_size=batch_size,
        epochs=1,
        shuffle=False,
        callbacks=[timer],
        verbose=0,
    )


def benchmark_group(config, precision, models, settings):
    """Builds, compiles and times `models` for one config and precision."""
    window = 1 + settings["window_steps"]
    first = 1 + settings["warmup_steps"]
    batches = random_batches(config, max(window, first))
    built, results = {}, {}
    for name in models:
        keras.utils.set_random_seed(0)
        keras.mixed_precision.set_global_policy(precision)
        try:
            model = build_model(name, config)
        finally:
            keras.mixed_precision.set_global_policy("float32")
        model.compile(
            optimizer=keras.optimizers.Adam(1e-4, beta_2=0.98, epsilon=1e-9),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=True,
        )
        timer = BatchEndTimes()
        start = time.perf_counter()
        history = fit(model, batches, first, config["batch_size"], timer)
        built[name] = (model, timer)
        results[name] = {
            "parameters": model.count_params(),
            "time_to_first_batch_seconds": common.rounded(timer.times[0] - start, 3),
            "first_loss": common.rounded(history.history["loss"][0], 4),
            "window_seconds": [],
        }
    for _ in range(settings["windows"]):
        for name, (model, timer) in built.items():
            timer.times = []
            fit(model, batches, window, config["batch_size"], timer)
            seconds = timer.times[-1] - timer.times[0]
            results[name]["window_seconds"].append(common.rounded(seconds))
    tokens = settings["window_steps"] * config["batch_size"] * config["length"]
    for result in results.values():
        result["tokens_per_second"] = common.rounded(
            tokens / common.median(result["window_seconds"])
        )
    return results


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", nargs="+", choices=list(CONFIGS), default=["small"])
    parser.add_argument(
        "--precision", nargs="+", choices=PRECISIONS, default=list(PRECISIONS)
    )
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--quick", action="store_true", help="tiny shapes, few steps")
    parser.add_argument("--windows", type=int, help="timed windows per model (5)")
    parser.add_argument("--window-steps", type=int, help="steps per window (10)")
    parser.add_argument(
        "--matmul-size",
        type=int,
        help="side of the peak-rate matmul (default 8192 on an accelerator, "
        "1024 on a CPU, 128 with --quick)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if keras.backend.backend() != "jax":
        raise SystemExit("Run with KERAS_BACKEND=jax (see the top of this script).")
    settings = dict(QUICK if args.quick else FULL)
    for name in ("windows", "window_steps"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    device = jax.devices()[0]
    matmul_size = args.matmul_size or (
        128 if args.quick else 1024 if device.platform == "cpu" else 8192
    )
    environment = {**common.environment(), "device_kind": device.device_kind}
    peaks = matmul_peak(matmul_size)
    runs = []
    for config_name in args.config:
        config = configs[config_name]
        for precision in args.precision:
            results = benchmark_group(config, precision, args.models, settings)
            add_utilisation(results, config, precision, peaks["flops_per_second"])
            ours = results.get("ours", {}).get("tokens_per_second")
            hub = results.get("keras_hub", {}).get("tokens_per_second")
            runs.append(
                {
                    "config": config_name,
                    "precision": precision,
                    "models": results,
                    "ratios": {"ours/keras_hub": common.ratio(ours, hub)},
                }
            )
    common.print_json(
        {
            "benchmark": "train_speed_jax",
            "quick": args.quick,
            "configs": {name: configs[name] for name in args.config},
            "settings": {**settings, "dropout": DROPOUT, "jit_compile": True},
            "unit": "target tokens per second (window steps * batch * length / "
            "median window seconds)",
            "flops_formula": FLOPS_FORMULA,
            "matmul_flops_per_step": {
                name: matmul_flops_per_step(configs[name]) for name in args.config
            },
            "matmul_peak": peaks,
            "runs": runs,
            "environment": environment,
            "load_average_1m_at_end": common.rounded(os.getloadavg()[0], 3),
        }
    )


if __name__ == "__main__":
    main()
