"""What the benchmark scripts share: timing, the environment, reference models.

The scripts print one JSON object on stdout and nothing else there
(TensorFlow's logs go to stderr). This module imports TensorFlow only where
a function needs it, so that `train_speed_jax.py` and `decode_speed_jax.py`
run without it; `run_script` runs one script from another under another
Keras backend (`decode_speed.py --jax`).

The keras-hub reference model lives here because both benchmarks use it:
`HubTransformer` trains like any Keras model and decodes with keras-hub's
key/value caches (`TransformerDecoder(self_attention_cache=...,
self_attention_cache_update_index=...)`), as keras-hub's own seq2seq models
(BART) do.
"""

import importlib
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import keras
import keras_hub
import numpy as np

import keras_transformer as kt
from keras_transformer.special_ids import START_ID
from keras_transformer.training.precision import linux_cpu_fields

# The hyper-parameters that give a model its shape, the same for every model
# a benchmark compares.
SHAPE_KEYS = (
    "vocab_size",
    "d_model",
    "num_heads",
    "d_ff",
    "num_encoder_layers",
    "num_decoder_layers",
)
# The shape of the --quick smoke runs.
QUICK_SHAPE = dict(
    vocab_size=1000,
    d_model=64,
    num_heads=2,
    d_ff=128,
    num_encoder_layers=1,
    num_decoder_layers=1,
)


def preset_shape(preset, vocab_size):
    """The `SHAPE_KEYS` of `kt.TransformerConfig`'s preset `preset`, as a dict.

    Example:

    >>> preset_shape("small", 8000)["d_model"]
    256
    """
    config = getattr(kt.TransformerConfig, preset)(vocab_size)
    return {key: getattr(config, key) for key in SHAPE_KEYS}


def median(values):
    """The median of a non-empty list of numbers."""
    return statistics.median(values)


def seconds(function, *args):
    """Wall-clock seconds of `function(*args)`, its outputs fetched to NumPy."""
    start = time.perf_counter()
    outputs = function(*args)
    keras.tree.map_structure(np.asarray, outputs)
    return time.perf_counter() - start


def add_threads_argument(parser):
    """Adds `--threads`, the value `set_threads` takes, to an argparse parser."""
    parser.add_argument(
        "--threads",
        type=int,
        help="TensorFlow intra- and inter-op threads (default: all cores); "
        "1 is steadier on a machine shared with other work",
    )


def set_threads(threads):
    """Caps TensorFlow's intra- and inter-op threads (None: leave the default).

    Must run before TensorFlow executes anything.
    """
    if threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def environment(threads=None):
    """Versions and machine facts, including the load (the numbers are noisy)."""
    backend = keras.backend.backend()
    return {
        "python": platform.python_version(),
        "keras_backend": backend,
        backend: importlib.import_module(backend).__version__,
        "keras": keras.__version__,
        "keras_hub": keras_hub.__version__,
        "machine": platform.machine(),
        "cpu": cpu_description(),
        "cpu_count": os.cpu_count(),
        "threads": threads or "default",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        "devices": keras.distribution.list_devices(),
    }


def cpu_description():
    """The CPU's model name and its matmul-relevant instruction sets (Linux)."""
    fields = linux_cpu_fields()
    if not fields:
        return platform.processor() or None
    flags = set(fields.get("flags", "").split())
    wanted = ("avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile")
    return {
        "model": fields.get("model name"),
        "flags": [flag for flag in wanted if flag in flags],
    }


def print_json(result):
    """Prints `result` as indented JSON on stdout."""
    print(json.dumps(result, indent=2, sort_keys=False), flush=True)


def rounded(value, digits=4):
    """`value` rounded to `digits` significant digits (None stays None)."""
    if value is None:
        return None
    return float(f"{value:.{digits}g}")


def ratio(numerator, denominator):
    """numerator / denominator, rounded; None when either is missing."""
    if not numerator or not denominator:
        return None
    return rounded(numerator / denominator, 3)


def run_script(script, arguments, backend):
    """Runs the benchmark `script` (a file name in benchmarks/) with
    `arguments` in a fresh Python under Keras backend `backend`, with the
    repository root on PYTHONPATH; returns the JSON it prints.

    Its stderr (logs, progress) passes through to this process's stderr.
    """
    folder = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.dirname(folder), os.environ.get("PYTHONPATH", "")]
    process = subprocess.run(
        [sys.executable, os.path.join(folder, script), *arguments],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        env={
            **os.environ,
            "KERAS_BACKEND": backend,
            "PYTHONPATH": os.pathsep.join(path for path in paths if path),
        },
    )
    if process.returncode != 0:
        raise RuntimeError(f"{script} exited with {process.returncode}.")
    return json.loads(process.stdout)


class HubTransformer(keras.Model):
    """An encoder-decoder Transformer built from keras-hub layers.

    Source and target each have a `TokenAndPositionEmbedding` (learned
    positions), then `TransformerEncoder` and `TransformerDecoder` stacks
    (post-norm, keras-hub's default) and a `Dense` head: the recipe of the
    keras.io example "English-to-Spanish translation with KerasHub", with
    explicit padding masks (token id 0 is padding).

    Args:
        vocab_size: tokens in the shared vocabulary.
        sequence_length: the most positions the embeddings hold.
        d_model: model width.
        num_heads: attention heads.
        d_ff: inner width of the feed-forward networks.
        num_encoder_layers: encoder layers.
        num_decoder_layers: decoder layers.
        dropout: keras-hub's dropout (sub-layer outputs and attention).
    """

    def __init__(
        self,
        vocab_size,
        sequence_length,
        d_model,
        num_heads,
        d_ff,
        num_encoder_layers,
        num_decoder_layers,
        dropout=0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads

        def embedding(name):
            return keras_hub.layers.TokenAndPositionEmbedding(
                vocab_size, sequence_length, d_model, name=name
            )

        self.source_embedding = embedding("source_embedding")
        self.target_embedding = embedding("target_embedding")
        self.encoder_layers = [
            keras_hub.layers.TransformerEncoder(
                d_ff, num_heads, dropout=dropout, name=f"encoder_{i}"
            )
            for i in range(num_encoder_layers)
        ]
        self.decoder_layers = [
            keras_hub.layers.TransformerDecoder(
                d_ff, num_heads, dropout=dropout, name=f"decoder_{i}"
            )
            for i in range(num_decoder_layers)
        ]
        self.head = keras.layers.Dense(vocab_size, name="head")

    def encode(self, source_ids, training=None):
        """Source ids (B, S) -> encoder outputs (B, S, D) and mask (B, S)."""
        mask = source_ids != 0  # (B, S)
        x = self.source_embedding(source_ids)  # (B, S, D)
        for layer in self.encoder_layers:
            x = layer(x, padding_mask=mask, training=training)
        return x, mask

    def call(self, inputs, training=None):
        encoder_outputs, encoder_mask = self.encode(
            inputs["encoder_inputs"], training=training
        )
        target_ids = inputs["decoder_inputs"]  # (B, T)
        x = self.target_embedding(target_ids)  # (B, T, D)
        for layer in self.decoder_layers:
            x = layer(
                x,
                encoder_sequence=encoder_outputs,
                decoder_padding_mask=target_ids != 0,
                encoder_padding_mask=encoder_mask,
                training=training,
            )
        return keras.ops.cast(self.head(x), "float32")  # (B, T, V)

    def empty_caches(self, batch_size, length):
        """Zero self-attention caches, one (B, 2, length, h, D / h) per layer."""
        shape = (batch_size, 2, length, self.num_heads, self.head_dim)
        zeros = keras.ops.zeros(shape, self.compute_dtype)
        return tuple(zeros for _ in self.decoder_layers)

    def decode_with_cache(
        self,
        token_ids,
        encoder_outputs,
        encoder_mask,
        self_caches,
        cross_caches,
        index,
        cross_index=None,
    ):
        """Decodes `token_ids` (B, t) at position `index` against the caches.

        With `cross_index=0` the cross-attention caches are (re)computed
        from `encoder_outputs`; with `None` they are only read.

        Returns:
            `(logits (B, t, V), self_caches, cross_caches)`.
        """
        x = self.target_embedding(token_ids, start_index=index)  # (B, t, D)
        new_self_caches, new_cross_caches = [], []
        for layer, self_cache, cross_cache in zip(
            self.decoder_layers, self_caches, cross_caches, strict=True
        ):
            x, self_cache, cross_cache = layer(
                x,
                encoder_sequence=encoder_outputs,
                encoder_padding_mask=encoder_mask,
                self_attention_cache=self_cache,
                self_attention_cache_update_index=index,
                cross_attention_cache=cross_cache,
                cross_attention_cache_update_index=cross_index,
            )
            new_self_caches.append(self_cache)
            new_cross_caches.append(cross_cache)
        logits = keras.ops.cast(self.head(x), "float32")
        return logits, tuple(new_self_caches), tuple(new_cross_caches)


NEVER_ID = -1  # an end id no model produces, so every step runs


def forced_length(new_tokens):
    """`decode`'s arguments that make every output exactly `new_tokens`
    tokens long: the end id `NEVER_ID`, and limits of `new_tokens`."""
    return dict(
        start_id=START_ID,
        end_id=NEVER_ID,
        extra_length=new_tokens,
        max_length=new_tokens,
    )


def hub_generate(model, sampler, source_ids, new_tokens, start_id=START_ID):
    """Decodes `new_tokens` tokens per source with a keras-hub sampler.

    The pattern of keras-hub's `Seq2SeqLM.generate_step`: the encoder runs
    once, one decoder pass over the start token seeds the cross-attention
    caches (keras-hub seeds with a pass over its prompt), and the sampler's
    loop feeds one token per step to `decode_with_cache`. Encoder outputs
    and caches ride in the sampler's cache, so `BeamSampler` tiles and
    reorders them. No stop token: every step runs.

    Args:
        model: a `HubTransformer`.
        sampler: e.g. `keras_hub.samplers.GreedySampler()`.
        source_ids: int32 (B, S).
        new_tokens: N, tokens to generate.
        start_id: the first target token.

    Returns:
        int32 (B, N + 1), the start token then the generated ones.
    """
    import tensorflow as tf  # decode_speed.py's reference, a TensorFlow program

    batch_size = tf.shape(source_ids)[0]
    encoder_outputs, encoder_mask = model.encode(source_ids)
    prompt = tf.concat(
        [
            tf.fill([batch_size, 1], start_id),
            tf.zeros([batch_size, new_tokens], tf.int32),
        ],
        axis=1,
    )  # (B, N + 1)
    self_caches = model.empty_caches(batch_size, new_tokens + 1)
    cross_caches = model.empty_caches(batch_size, tf.shape(source_ids)[1])
    _, self_caches, cross_caches = model.decode_with_cache(
        prompt[:, :1],
        encoder_outputs,
        encoder_mask,
        self_caches,
        cross_caches,
        index=0,
        cross_index=0,
    )

    def next_fn(prompt, cache, index):
        self_caches, cross_caches, encoder_outputs, encoder_mask = cache
        cache_index = index - 1  # the position of the token fed
        tokens = keras.ops.slice(prompt, [0, cache_index], [tf.shape(prompt)[0], 1])
        logits, self_caches, _ = model.decode_with_cache(
            tokens,
            encoder_outputs,
            encoder_mask,
            self_caches,
            cross_caches,
            cache_index,
        )  # (B', 1, V)
        cache = (self_caches, cross_caches, encoder_outputs, encoder_mask)
        return logits[:, 0], None, cache

    return sampler(
        next=next_fn,
        prompt=prompt,
        cache=(self_caches, cross_caches, encoder_outputs, encoder_mask),
        index=1,
        mask=prompt != 0,
        stop_token_ids=None,
    )


def package_at(ref):
    """`keras_transformer` as of git commit `ref`, imported under another name.

    The package's files at `ref` are copied to a temporary folder as
    `keras_transformer_at_<ref>`, with every mention of the package name
    (imports and Keras registrations) renamed, so that both versions build
    models side by side in one process: an A/B of a change, interleaved.
    """
    name = "keras_transformer_at_" + "".join(c for c in ref if c.isalnum())
    root = tempfile.mkdtemp(prefix="ab_")
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "keras_transformer"],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    os.rename(os.path.join(root, "keras_transformer"), os.path.join(root, name))
    for folder, _, files in os.walk(os.path.join(root, name)):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                with open(path) as f:
                    text = f.read().replace("keras_transformer", name)
                with open(path, "w") as f:
                    f.write(text)
    sys.path.insert(0, root)
    return importlib.import_module(name)
