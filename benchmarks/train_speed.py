"""Training throughput side by side: ours, keras-hub layers, the TF tutorial.

Three encoder-decoder Transformers of the same shape train with `model.fit`
on the same random token batches (no padding), with the same loss and
optimizer (our `LabelSmoothedCrossEntropy(0.1)` and `transformer_optimizer`)
and dropout 0.1 on sub-layer outputs and attention probabilities:

- `ours`: `keras_transformer.build_transformer` (shared embeddings, tied
  output projection);
- `keras_hub`: `TokenAndPositionEmbedding` + `TransformerEncoder` +
  `TransformerDecoder` (post-norm) + a Dense head (`common.HubTransformer`);
- `tf_tutorial`: the model of the TensorFlow tutorial "Neural machine
  translation with a Transformer and Keras": stock
  `keras.layers.MultiHeadAttention` (key_dim = d_model / heads), Add +
  LayerNormalization after each sub-layer, a Dense-Dense-Dropout
  feed-forward network, concatenated sine/cosine positions, Keras masks
  from `mask_zero=True`, a Dense head.

For each configuration, precision (float32, mixed_bfloat16) and
`compile(jit_compile=...)` setting, the models take turns: a first `fit`
(time to first batch = tracing and compiling, then warm-up steps), then
rounds in which each model trains one timed window. Target tokens per
second = window steps * batch * target length / the median window time
(between the ends of the first and last batch of the window, as a
callback sees them).

Model FLOPs utilisation (MFU) divides the model's matmul FLOPs per second
by the best float32 (or bfloat16) `tf.matmul` rate measured in the same
run; `flops_formula` in the output states what is counted.

    python benchmarks/train_speed.py                   # everything, ~25 min
    python benchmarks/train_speed.py --config small --precision float32 --jit both
    python benchmarks/train_speed.py --quick --config tiny --jit off
"""

import argparse
import os
import time
import warnings

import common
import keras
import numpy as np
import tensorflow as tf
from train_measures import (
    FLOPS_FORMULA,
    BatchEndTimes,
    add_utilisation,
    matmul_flops_per_step,
)

import keras_transformer as kt

CONFIGS = {  # the presets' shapes
    "tiny": dict(common.preset_shape("tiny", 8000), length=32, batch_size=64),
    "small": dict(common.preset_shape("small", 8000), length=64, batch_size=32),
}
QUICK_CONFIGS = {  # --quick: the same names, smaller shapes, for smoke runs
    name: dict(
        config,
        **common.QUICK_SHAPE,
        batch_size=16,
        length=config["length"] // 2,
    )
    for name, config in CONFIGS.items()
}
PRECISIONS = ("float32", "mixed_bfloat16")
JIT = {"off": (False,), "on": (True,), "both": (False, True)}
MODELS = ("ours", "keras_hub", "tf_tutorial")
DROPOUT = 0.1
FULL = dict(warmup_steps=3, window_steps=5, windows=5, matmul_size=2048)
QUICK = dict(warmup_steps=1, window_steps=3, windows=2, matmul_size=512)


# The TensorFlow tutorial's model, with casts so it also runs mixed precision.


def tutorial_positional_encoding(length, depth):
    """The tutorial's encoding: sines in the first half, cosines in the second."""
    depth = depth / 2
    positions = np.arange(length)[:, np.newaxis]  # (L, 1)
    depths = np.arange(depth)[np.newaxis, :] / depth  # (1, D / 2)
    angle_rads = positions / (10000**depths)  # (L, D / 2)
    encoding = np.concatenate([np.sin(angle_rads), np.cos(angle_rads)], axis=-1)
    return tf.cast(encoding, tf.float32)  # (L, D)


class TutorialPositionalEmbedding(keras.layers.Layer):
    def __init__(self, vocab_size, d_model, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.embedding = keras.layers.Embedding(vocab_size, d_model, mask_zero=True)
        self.pos_encoding = tutorial_positional_encoding(2048, d_model)

    def compute_mask(self, *args, **kwargs):
        return self.embedding.compute_mask(*args, **kwargs)

    def call(self, x):
        length = tf.shape(x)[1]
        x = self.embedding(x)  # (B, T, D)
        x *= tf.cast(tf.math.sqrt(float(self.d_model)), x.dtype)
        return x + tf.cast(self.pos_encoding[tf.newaxis, :length, :], x.dtype)


class TutorialBaseAttention(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__()
        self.mha = keras.layers.MultiHeadAttention(**kwargs)
        self.layernorm = keras.layers.LayerNormalization()
        self.add = keras.layers.Add()


class TutorialCrossAttention(TutorialBaseAttention):
    def call(self, x, context):
        attn_output = self.mha(query=x, key=context, value=context)
        return self.layernorm(self.add([x, attn_output]))


class TutorialGlobalSelfAttention(TutorialBaseAttention):
    def call(self, x):
        attn_output = self.mha(query=x, value=x, key=x)
        return self.layernorm(self.add([x, attn_output]))


class TutorialCausalSelfAttention(TutorialBaseAttention):
    def call(self, x):
        attn_output = self.mha(query=x, value=x, key=x, use_causal_mask=True)
        return self.layernorm(self.add([x, attn_output]))


class TutorialFeedForward(keras.layers.Layer):
    def __init__(self, d_model, dff, dropout_rate=0.1):
        super().__init__()
        self.seq = keras.Sequential(
            [
                keras.layers.Dense(dff, activation="relu"),
                keras.layers.Dense(d_model),
                keras.layers.Dropout(dropout_rate),
            ]
        )
        self.add = keras.layers.Add()
        self.layer_norm = keras.layers.LayerNormalization()

    def call(self, x):
        return self.layer_norm(self.add([x, self.seq(x)]))


class TutorialEncoderLayer(keras.layers.Layer):
    def __init__(self, *, d_model, num_heads, dff, dropout_rate=0.1):
        super().__init__()
        self.self_attention = TutorialGlobalSelfAttention(
            num_heads=num_heads, key_dim=d_model // num_heads, dropout=dropout_rate
        )
        self.ffn = TutorialFeedForward(d_model, dff, dropout_rate)

    def call(self, x):
        return self.ffn(self.self_attention(x))


class TutorialEncoder(keras.layers.Layer):
    def __init__(self, *, num_layers, d_model, num_heads, dff, vocab_size, rate):
        super().__init__()
        self.pos_embedding = TutorialPositionalEmbedding(vocab_size, d_model)
        self.enc_layers = [
            TutorialEncoderLayer(
                d_model=d_model, num_heads=num_heads, dff=dff, dropout_rate=rate
            )
            for _ in range(num_layers)
        ]
        self.dropout = keras.layers.Dropout(rate)

    def call(self, x):
        x = self.dropout(self.pos_embedding(x))
        for layer in self.enc_layers:
            x = layer(x)
        return x


class TutorialDecoderLayer(keras.layers.Layer):
    def __init__(self, *, d_model, num_heads, dff, dropout_rate=0.1):
        super().__init__()
        arguments = dict(
            num_heads=num_heads, key_dim=d_model // num_heads, dropout=dropout_rate
        )
        self.causal_self_attention = TutorialCausalSelfAttention(**arguments)
        self.cross_attention = TutorialCrossAttention(**arguments)
        self.ffn = TutorialFeedForward(d_model, dff, dropout_rate)

    def call(self, x, context):
        x = self.causal_self_attention(x=x)
        x = self.cross_attention(x=x, context=context)
        return self.ffn(x)


class TutorialDecoder(keras.layers.Layer):
    def __init__(self, *, num_layers, d_model, num_heads, dff, vocab_size, rate):
        super().__init__()
        self.pos_embedding = TutorialPositionalEmbedding(vocab_size, d_model)
        self.dropout = keras.layers.Dropout(rate)
        self.dec_layers = [
            TutorialDecoderLayer(
                d_model=d_model, num_heads=num_heads, dff=dff, dropout_rate=rate
            )
            for _ in range(num_layers)
        ]

    def call(self, x, context):
        x = self.dropout(self.pos_embedding(x))
        for layer in self.dec_layers:
            x = layer(x, context)
        return x


class TutorialTransformer(keras.Model):
    def __init__(self, *, config, rate):
        super().__init__()
        shape = dict(
            d_model=config["d_model"],
            num_heads=config["num_heads"],
            dff=config["d_ff"],
            vocab_size=config["vocab_size"],
            rate=rate,
        )
        self.encoder = TutorialEncoder(num_layers=config["num_encoder_layers"], **shape)
        self.decoder = TutorialDecoder(num_layers=config["num_decoder_layers"], **shape)
        self.final_layer = keras.layers.Dense(config["vocab_size"])

    def call(self, inputs, training=None):
        # `training` must be an argument here: without it Keras 3 does not
        # pass `fit`'s training=True down, and every dropout stays off.
        context = self.encoder(inputs["encoder_inputs"])  # (B, S, D)
        x = self.decoder(inputs["decoder_inputs"], context)  # (B, T, D)
        logits = self.final_layer(x)  # (B, T, V)
        try:  # as the tutorial: no Keras mask on the logits to rescale the loss
            del logits._keras_mask
        except AttributeError:
            pass
        return tf.cast(logits, tf.float32)


def build_model(name, config, package=kt):
    """The model `name` for `config`, under the current global dtype policy;
    "ours" and "baseline" are built by `package` (`--baseline`'s for the latter)."""
    shape = {key: config[key] for key in common.SHAPE_KEYS}
    if name in ("ours", "baseline"):
        return package.build_transformer(
            package.TransformerConfig(
                **shape,
                dropout=DROPOUT,
                attention_dropout=DROPOUT,
            )
        )
    if name == "keras_hub":
        return common.HubTransformer(
            sequence_length=config["length"], dropout=DROPOUT, **shape
        )
    return TutorialTransformer(config=config, rate=DROPOUT)


def random_dataset(config, batches=8, seed=0):
    """`batches` distinct random batches, repeated: ({inputs}, labels)."""
    rng = np.random.default_rng(seed)
    size, length = batches * config["batch_size"], config["length"]
    source = rng.integers(3, config["vocab_size"], (size, length), dtype="int32")
    target = rng.integers(3, config["vocab_size"], (size, length + 1), dtype="int32")
    inputs = {"encoder_inputs": source, "decoder_inputs": target[:, :-1]}
    dataset = tf.data.Dataset.from_tensor_slices((inputs, target[:, 1:]))
    dataset = dataset.batch(config["batch_size"], drop_remainder=True)
    return dataset.repeat().prefetch(tf.data.AUTOTUNE)


def matmul_peak(size, repeats=5):
    """Best FLOPs/s of a (size x size) @ (size x size) `tf.matmul` per dtype.

    Each dtype is timed in a plain `tf.function` and with `jit_compile`;
    the peak is the best of both.
    """
    rng = np.random.default_rng(0)
    a = tf.constant(rng.standard_normal((size, size)), tf.float32)
    b = tf.constant(rng.standard_normal((size, size)), tf.float32)
    flops = 2 * size**3
    peaks = {}
    for dtype in (tf.float32, tf.bfloat16):
        x, y = tf.cast(a, dtype), tf.cast(b, dtype)
        rates = {}
        for jit in (False, True):
            function = tf.function(tf.matmul, jit_compile=jit)
            function(x, y).numpy()  # trace / compile
            best = min(common.seconds(function, x, y) for _ in range(repeats))
            rates["xla" if jit else "tf_function"] = common.rounded(flops / best)
        peaks[dtype.name] = {**rates, "peak": max(rates.values())}
    return {"size": size, "flops_per_second": peaks}


def warm_up_keras():
    """One short `fit` of a throwaway model, so that the first benchmarked
    model does not pay TensorFlow's and Keras's one-time start-up costs."""
    model = keras.Sequential([keras.layers.Embedding(10, 4), keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    ids = np.ones((8, 4), "int32")
    dataset = tf.data.Dataset.from_tensor_slices((ids, ids)).batch(4).repeat()
    model.fit(dataset, steps_per_epoch=2, shuffle=False, verbose=0)


def compiled(model, config, jit_compile, package=kt):
    model.compile(
        optimizer=package.transformer_optimizer(config["d_model"], warmup_steps=4000),
        loss=kt.LabelSmoothedCrossEntropy(label_smoothing=0.1),
        jit_compile=jit_compile,
    )
    return model


def benchmark_group(config, precision, jit_compile, models, settings, baseline=None):
    """Builds, compiles and times `models` for one config/precision/jit."""
    dataset = random_dataset(config)
    built, results = {}, {}
    for name in models:
        keras.utils.set_random_seed(0)
        keras.mixed_precision.set_global_policy(precision)
        package = baseline if name == "baseline" else kt
        try:
            model = compiled(
                build_model(name, config, package), config, jit_compile, package
            )
        finally:
            keras.mixed_precision.set_global_policy("float32")
        timer = BatchEndTimes()
        start = time.perf_counter()
        history = model.fit(
            dataset,
            epochs=1,
            steps_per_epoch=1 + settings["warmup_steps"],
            callbacks=[timer],
            shuffle=False,
            verbose=0,
        )
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
            model.fit(
                dataset,
                epochs=1,
                steps_per_epoch=1 + settings["window_steps"],
                callbacks=[timer],
                shuffle=False,
                verbose=0,
            )
            window = timer.times[-1] - timer.times[0]
            results[name]["window_seconds"].append(common.rounded(window))
    tokens = settings["window_steps"] * config["batch_size"] * config["length"]
    for result in results.values():
        result["tokens_per_second"] = common.rounded(
            tokens / common.median(result["window_seconds"])
        )
    return results


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--config", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS)
    )
    parser.add_argument(
        "--precision", nargs="+", choices=PRECISIONS, default=list(PRECISIONS)
    )
    parser.add_argument("--jit", choices=sorted(JIT), default="both")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument(
        "--quick", action="store_true", help="few steps and a small matmul peak"
    )
    parser.add_argument("--windows", type=int, help="timed windows per model (5)")
    parser.add_argument("--window-steps", type=int, help="steps per window (5)")
    parser.add_argument(
        "--baseline",
        metavar="GIT_REF",
        help="also time ours as of this commit (model and optimizer), "
        'as "baseline", interleaved with the others: an A/B of a change',
    )
    common.add_threads_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    common.set_threads(args.threads)  # before TensorFlow runs anything
    settings = dict(QUICK if args.quick else FULL)
    for name in ("windows", "window_steps"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    # The tutorial's layers drop Keras masks at their boundaries, as it does.
    warnings.filterwarnings("ignore", message=".*does not support masking.*")
    environment = common.environment(args.threads)
    peaks = matmul_peak(settings["matmul_size"])
    warm_up_keras()
    baseline = common.package_at(args.baseline) if args.baseline else None
    models = args.models + (["baseline"] if baseline else [])
    runs = []
    for config_name in args.config:
        config = configs[config_name]
        for precision in args.precision:
            for jit_compile in JIT[args.jit]:
                results = benchmark_group(
                    config, precision, jit_compile, models, settings, baseline
                )
                add_utilisation(results, config, precision, peaks["flops_per_second"])
                ours = results.get("ours", {}).get("tokens_per_second")
                runs.append(
                    {
                        "config": config_name,
                        "precision": precision,
                        "jit_compile": jit_compile,
                        "models": results,
                        "ratios": {
                            f"ours/{name}": common.ratio(
                                ours, result["tokens_per_second"]
                            )
                            for name, result in results.items()
                            if name != "ours" and ours
                        },
                    }
                )
    common.print_json(
        {
            "benchmark": "train_speed",
            "quick": args.quick,
            "configs": {name: configs[name] for name in args.config},
            "settings": {**settings, "dropout": DROPOUT, "attention_dropout": DROPOUT},
            "unit": "target tokens per second (window steps * batch * length / "
            "median window seconds)",
            "flops_formula": FLOPS_FORMULA,
            "matmul_flops_per_step": {
                name: matmul_flops_per_step(configs[name]) for name in args.config
            },
            "matmul_peak": peaks,
            "baseline": args.baseline,
            "runs": runs,
            "environment": environment,
            "load_average_1m_at_end": common.rounded(os.getloadavg()[0], 3),
        }
    )


if __name__ == "__main__":
    main()
