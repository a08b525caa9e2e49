"""Decoding speed side by side: ours, keras-hub's samplers, an uncached loop.

Generated tokens per second for greedy and beam-4 decoding of random
sources (no padding) with randomly initialised models of the same shape,
every sequence forced to exactly `--new-tokens` tokens (the end id is one
no model can produce, -1, and every limit equals `--new-tokens`):

- ours: `keras_transformer.decoding.decode` in a `tf.function` traced for
  the input's shape (`ours_tf_function`), the same with `jit_compile=True`
  (`ours_xla`), and in a `tf.function` with the input signature
  `[None, None]` int32, as `Translator.translate_ids` serves it
  (`ours_signature`, no XLA; `--saved-model` adds `ours_saved_model`, the
  same function exported with `tf.saved_model.save` and reloaded);
- keras-hub: `TransformerEncoder`/`TransformerDecoder` stacks with
  `TokenAndPositionEmbedding` and a Dense head, decoded with
  `GreedySampler` / `BeamSampler(num_beams=4)` over keras-hub's key/value
  caches, in a `tf.function` without and with `jit_compile=True`
  (`keras_hub`, `keras_hub_xla`);
- greedy only: the TensorFlow tutorial's loop, which runs our decoder on
  the whole prefix at every step without a cache (`tutorial_no_cache`; the
  encoder runs once, where the tutorial re-runs it too);
- `--ctranslate2`: CTranslate2 (OpenNMT's C++ engine) with our model's
  weights (`transformer_spec`, as `keras-transformer export --format
  ctranslate2` writes them), in float32 and int8, each at 1 and at all
  cores' intra-op threads (`ctranslate2_float32_1t`, ...), forced to the
  same number of tokens (`min_decoding_length`); its sources are one id
  shorter, since CTranslate2 appends the end token. `ratios` then compares
  our signature with each engine at its best thread count;
- `--prefix`: ours with the first half of every output given as a prefix
  (`decode(prefix=...)`, one token repeated), in a `tf.function` and with
  XLA (`ours_prefix_half`, `ours_prefix_half_xla`): the same number of
  tokens out, half of them fed in one teacher-forced pass that fills the
  cache; `ratios` compares each with the same variant without a prefix;
- `--jax`: ours on the JAX backend, `decode` under `jax.jit` with the same
  weights (`jax_jit`), timed by `decode_speed_jax.py` in a subprocess after
  the TensorFlow rows (not interleaved with them, and at JAX's own threads
  whatever `--threads` says); `ratios` adds jax_jit / ours_signature and
  jax_jit / ours_xla.

`ops_per_step` counts the ops of each decoding loop's body, ours and
keras-hub's, as traced (before TensorFlow's graph optimizations, without
constants and identities): the per-step overhead that dominates at batch 1.

Tokens per second = batch * new tokens / the median wall time of one call
(encoder, cache set-up and the whole loop; beam search counts the tokens
of the returned sequences, not of every beam). Variants are timed in
interleaved rounds after a warm-up, so a change in the machine's load hits
them alike. `ratios` divides ours by the matching keras-hub variant and
`targets` checks the goals of the decoding-speed issue.

    python benchmarks/decode_speed.py               # the full grid, ~5 min
    python benchmarks/decode_speed.py --quick       # a smoke run
    python benchmarks/decode_speed.py --batch-size 32 --search greedy
    python benchmarks/decode_speed.py --ctranslate2 --threads 1
    python benchmarks/decode_speed.py --jax --search greedy beam_4
"""

import argparse
import functools
import inspect
import os
import tempfile
import time

import common
import keras
import keras_hub
import numpy as np
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.decoding import decode
from keras_transformer.special_ids import START_ID
from keras_transformer.training.saved_layout import load_weights

PREFIX_ID = 5  # the token of `--prefix`'s prefixes
SEARCHES = {"greedy": 1, "beam_4": 4}

FULL = dict(
    common.preset_shape("small", 8000),
    source_length=32,
    new_tokens=32,
    batch_sizes=[1, 32],
    repeats=7,
)
QUICK = dict(
    common.QUICK_SHAPE,
    source_length=8,
    new_tokens=8,
    batch_sizes=[1, 4],
    repeats=3,
)

# (ours, reference, goal): our tokens/s over the reference's should be >= goal.
TARGETS = {
    "greedy": [
        ("ours_xla", "keras_hub_xla", 1.5),
        ("ours_signature", "keras_hub", 2.0, 1),  # batch 1 only
    ],
    "beam_4": [
        ("ours_xla", "keras_hub_xla", 2.0),
        ("ours_tf_function", "keras_hub", 2.0),
    ],
}


class SignatureDecoder(tf.Module):
    """`decode` behind a `[None, None]` int32 signature, like `translate_ids`.

    `Translator.translate_ids` with its beam size, except that the end id is
    `common.NEVER_ID` (the Translator's is fixed by its tokenizer) so that every
    step runs.
    """

    def __init__(self, model, beam_size, new_tokens, decode_fn=decode):
        super().__init__(name="signature_decoder")
        self.model = model
        self.decode_fn = decode_fn
        self.beam_size = beam_size
        self.new_tokens = new_tokens

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="ids")])
    def translate_ids(self, ids):
        output_ids, scores = self.decode_fn(
            self.model,
            ids,
            beam_size=self.beam_size,
            **common.forced_length(self.new_tokens),
        )
        return {"ids": output_ids[:, 0], "score": scores[:, 0]}


def ours_variants(model, beam_size, new_tokens, saved_model_dir=None, decode_fn=decode):
    """Our decoding as named callables of int32 source ids (B, S)."""

    def run(ids, **xla):
        output_ids, _ = decode_fn(
            model, ids, beam_size=beam_size, **common.forced_length(new_tokens), **xla
        )
        return output_ids[:, 0]  # (B, N)

    # XLA compiles fixed shapes: caches as fixed buffers (a baseline tree
    # older than `fixed_cache` has only those)
    xla = {"fixed_cache": True}
    if "fixed_cache" not in inspect.signature(decode_fn).parameters:
        xla = {}

    signature = SignatureDecoder(model, beam_size, new_tokens, decode_fn)
    variants = {
        "ours_tf_function": tf.function(run),
        "ours_xla": tf.function(functools.partial(run, **xla), jit_compile=True),
        "ours_signature": lambda ids: signature.translate_ids(ids)["ids"],
    }
    if saved_model_dir is not None:
        path = os.path.join(saved_model_dir, f"beam_{beam_size}")
        tf.saved_model.save(
            signature, path, signatures={"ids": signature.translate_ids}
        )
        served = tf.saved_model.load(path).signatures["ids"]
        variants["ours_saved_model"] = lambda ids: served(ids=ids)["ids"]
    return variants


def prefix_variants(model, beam_size, new_tokens):
    """Ours with the first half of each output given: `ours_variants`'
    `ours_tf_function` and `ours_xla` with a prefix."""

    def run(ids, **xla):
        prefix = np.full((ids.shape[0], new_tokens // 2), PREFIX_ID, "int32")
        output_ids, _ = decode(
            model,
            ids,
            beam_size=beam_size,
            prefix=prefix,
            **common.forced_length(new_tokens),
            **xla,
        )
        return output_ids[:, 0]  # (B, N)

    xla = functools.partial(run, fixed_cache=True)
    return {
        "ours_prefix_half": tf.function(run),
        "ours_prefix_half_xla": tf.function(xla, jit_compile=True),
    }


def hub_variants(model, beam_size, new_tokens):
    """keras-hub sampling as named callables of int32 source ids (B, S)."""
    if beam_size == 1:
        sampler = keras_hub.samplers.GreedySampler()
    else:
        sampler = keras_hub.samplers.BeamSampler(num_beams=beam_size)

    def run(ids):
        return common.hub_generate(model, sampler, ids, new_tokens, START_ID)[:, 1:]

    return {
        "keras_hub": tf.function(run),
        "keras_hub_xla": tf.function(run, jit_compile=True),
    }


def tutorial_variant(model, new_tokens):
    """Greedy decoding that re-runs the decoder on the whole prefix each step.

    The loop of the TensorFlow tutorial "Neural machine translation with a
    Transformer and Keras" (`Translator.__call__`), with our model and the
    encoder run once.
    """

    @tf.function
    def run(ids):
        encoder_outputs, encoder_mask = model.encode(ids)
        batch_size = tf.shape(ids)[0]

        def body(step, prefix):  # prefix (B, step + 1)
            logits = model.decode(prefix, encoder_outputs, encoder_mask)
            tokens = tf.argmax(logits[:, -1], axis=-1, output_type=tf.int32)
            return step + 1, tf.concat([prefix, tokens[:, None]], axis=1)

        _, prefix = tf.while_loop(
            lambda step, prefix: step < new_tokens,
            body,
            (tf.constant(0), tf.fill([batch_size, 1], START_ID)),
            shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, None])),
        )
        return prefix[:, 1:]  # (B, N)

    return {"tutorial_no_cache": run}


class IdVocabulary:
    """A tokenizer stand-in for `transformer_spec`: piece i is "t<i>".

    Ids 0 to 3 are the special pieces of `SubwordTokenizer`.
    """

    unknown_id, start_id, end_id = 3, START_ID, 2
    SPECIAL = ("<pad>", "<s>", "</s>", "<unk>")

    def __init__(self, vocab_size):
        self.vocab_size = vocab_size
        self.names = [*self.SPECIAL, *(f"t{i}" for i in range(4, vocab_size))]

    def pieces(self):
        """`(source pieces, target pieces)`, as `SubwordTokenizer.pieces`."""
        return self.names, self.names

    def id_to_piece(self, ids):
        return tf.constant([self.names[i] for i in ids])


def ctranslate2_variants(model, beam_size, new_tokens, positions, folder):
    """CTranslate2 with `model`'s weights, float32 and int8, 1 and all threads,
    with position encodings for `positions` tokens."""
    import ctranslate2

    from keras_transformer.export.ctranslate2_model import transformer_spec

    vocabulary = IdVocabulary(model.config.vocab_size)
    index = {piece: i for i, piece in enumerate(vocabulary.names)}
    variants = {}
    for quantization in ("float32", "int8"):
        path = os.path.join(folder, f"ctranslate2_{quantization}")
        if not os.path.exists(path):
            spec = transformer_spec(model, vocabulary, max_length=positions)
            spec.validate()
            spec.optimize(quantization=quantization)
            os.makedirs(path)
            spec.save(path)
        for threads in sorted({1, os.cpu_count()}):
            engine = ctranslate2.Translator(path, intra_threads=threads)

            def run(ids, engine=engine):
                sources = [
                    [vocabulary.names[i] for i in row[:-1]] for row in ids.numpy()
                ]  # CTranslate2 appends the end token
                results = engine.translate_batch(
                    sources,
                    beam_size=beam_size,
                    max_decoding_length=new_tokens,
                    min_decoding_length=new_tokens,
                    max_input_length=0,
                )
                return tf.constant(
                    [[index[t] for t in r.hypotheses[0]] for r in results]
                )  # (B, N)

            variants[f"ctranslate2_{quantization}_{threads}t"] = run
    return variants


def jax_rows(model, settings, searches, quick, folder):
    """`decode_speed_jax.py`'s `jax_jit` rows for `model`, with its weights.

    Runs the script in a subprocess under KERAS_BACKEND=jax with the same
    shape, sources, new tokens, batch sizes and repeats.

    Returns:
        `({search: {"batch_<B>": {"jax_jit": {...}}}}, its environment)`.
    """
    weights = os.path.join(folder, "ours.weights.h5")
    model.save_weights(weights)
    arguments = ["--config", "small", "--weights", weights, "--search", *searches]
    arguments += ["--batch-size", *map(str, settings["batch_sizes"])]
    for name in ("repeats", "new_tokens", "source_length"):
        arguments += ["--" + name.replace("_", "-"), str(settings[name])]
    if quick:  # decode_speed_jax.py's quick "small" is QUICK's shape
        arguments.append("--quick")
    result = common.run_script("decode_speed_jax.py", arguments, "jax")
    (run,) = result["runs"]
    for key in common.SHAPE_KEYS:  # and its full "small" is FULL's
        if run["model"][key] != settings[key]:
            raise RuntimeError(f"JAX model's {key}: {run['model'][key]}.")
    return run["results"], result["environment"]


def best_ctranslate2(speed, quantization):
    """The tokens/s of the fastest thread count of one CTranslate2 variant."""
    prefix = f"ctranslate2_{quantization}_"
    speeds = [value for name, value in speed.items() if name.startswith(prefix)]
    return max(speeds) if speeds else None


def loop_body_ops(function, ids):
    """Ops in the body of the largest `tf.while_loop` that `function` traces.

    Counted in the traced graph, before TensorFlow's graph optimizations;
    constants, identities and no-ops are left out.
    """
    graph = function.get_concrete_function(ids).graph.as_graph_def()
    return max(
        sum(node.op not in ("Const", "Identity", "NoOp") for node in body.node_def)
        for body in graph.library.function
        if body.signature.name.startswith("while_body")
    )


def time_variants(variants, ids, repeats, new_tokens):
    """Times each variant on `ids`: first call, then interleaved rounds.

    Returns:
        {name: {"tokens_per_second", "median_seconds", "first_call_seconds"}}.
    """
    first_call = {}
    for name, function in variants.items():
        start = time.perf_counter()
        outputs = function(ids).numpy()
        first_call[name] = time.perf_counter() - start
        if outputs.shape != (ids.shape[0], new_tokens):
            raise RuntimeError(f"{name} returned {outputs.shape} tokens.")
        function(ids)  # a second warm-up call
    times = {name: [] for name in variants}
    for _ in range(repeats):
        for name, function in variants.items():
            times[name].append(common.seconds(function, ids))
    tokens = ids.shape[0] * new_tokens
    return {
        name: {
            "tokens_per_second": common.rounded(tokens / common.median(times[name])),
            "median_seconds": common.rounded(common.median(times[name])),
            "first_call_seconds": common.rounded(first_call[name], 3),
        }
        for name in variants
    }


def ratios_and_targets(results):
    """Ours over keras-hub for matching variants, and the issue's goals."""
    pairs = [
        ("ours_tf_function", "keras_hub"),
        ("ours_signature", "keras_hub"),
        ("ours_saved_model", "keras_hub"),
        ("ours_xla", "keras_hub_xla"),
        ("ours_xla", "tutorial_no_cache"),
        ("ours_tf_function", "tutorial_no_cache"),
        ("jax_jit", "ours_signature"),
        ("jax_jit", "ours_xla"),
        ("ours_prefix_half", "ours_tf_function"),
        ("ours_prefix_half_xla", "ours_xla"),
    ]
    ratios, targets = {}, []
    for search, by_batch in results.items():
        ratios[search] = {}
        for batch_key, variants in by_batch.items():
            speed = {name: v["tokens_per_second"] for name, v in variants.items()}
            ratios[search][batch_key] = {
                f"{ours}/{reference}": common.ratio(speed[ours], speed[reference])
                for ours, reference in pairs
                if ours in speed and reference in speed
            }
            float32 = best_ctranslate2(speed, "float32")
            int8 = best_ctranslate2(speed, "int8")
            if float32 and int8:
                signature = speed["ours_signature"]
                ratios[search][batch_key].update(
                    {
                        "ours_signature/ctranslate2_float32_best": common.ratio(
                            signature, float32
                        ),
                        "ctranslate2_int8_best/ours_signature": common.ratio(
                            int8, signature
                        ),
                    }
                )
                goals = [("ours_signature/ctranslate2_float32_best", 0.8)]
                if batch_key == "batch_1":
                    goals.append(("ctranslate2_int8_best/ours_signature", 2.0))
                targets.extend(
                    {
                        "name": f"{search} {batch_key}: {name}",
                        "goal": goal,
                        "ratio": ratios[search][batch_key][name],
                        "met": ratios[search][batch_key][name] >= goal,
                    }
                    for name, goal in goals
                )
            for ours, reference, goal, *only_batch in TARGETS[search]:
                if only_batch and batch_key != f"batch_{only_batch[0]}":
                    continue
                if ours not in speed or reference not in speed:
                    continue
                value = common.ratio(speed[ours], speed[reference])
                targets.append(
                    {
                        "name": f"{search} {batch_key}: {ours}/{reference}",
                        "goal": goal,
                        "ratio": value,
                        "met": value is not None and value >= goal,
                    }
                )
    return ratios, targets


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="a tiny model and few repeats"
    )
    parser.add_argument(
        "--batch-size", type=int, nargs="+", help="batch sizes (default 1 32)"
    )
    parser.add_argument(
        "--search", nargs="+", choices=sorted(SEARCHES), default=list(SEARCHES)
    )
    parser.add_argument("--repeats", type=int, help="timed rounds (default 7)")
    parser.add_argument("--new-tokens", type=int, help="tokens generated (32)")
    parser.add_argument(
        "--saved-model",
        action="store_true",
        help="also time our decoder exported as a SavedModel and reloaded",
    )
    parser.add_argument(
        "--ctranslate2",
        action="store_true",
        help="also time CTranslate2 with the same weights, float32 and int8",
    )
    parser.add_argument(
        "--baseline",
        metavar="GIT_REF",
        help="also time ours as of this commit, with the same weights, as "
        "baseline_tf_function, baseline_xla and baseline_signature: an A/B of a change",
    )
    parser.add_argument(
        "--prefix",
        action="store_true",
        help="also time ours with half of each output given as a prefix",
    )
    parser.add_argument(
        "--jax",
        action="store_true",
        help="also time ours on the JAX backend under jax.jit, with the same "
        "weights, in a subprocess (decode_speed_jax.py)",
    )
    common.add_threads_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    common.set_threads(args.threads)  # before TensorFlow runs anything
    settings = dict(QUICK if args.quick else FULL)
    for name in ("batch_size", "repeats", "new_tokens"):
        value = getattr(args, name)
        if value is not None:
            settings["batch_sizes" if name == "batch_size" else name] = value
    new_tokens, source_length = settings["new_tokens"], settings["source_length"]
    shape = {key: settings[key] for key in common.SHAPE_KEYS}
    environment = common.environment(args.threads)

    positions = max(new_tokens, source_length) + 1  # a source or an output
    keras.utils.set_random_seed(0)
    config = kt.TransformerConfig(**shape)
    ours = kt.build_transformer(config)
    baseline = None
    if args.baseline:
        package = common.package_at(args.baseline)
        baseline = package.build_transformer(
            package.TransformerConfig(**config.to_dict())
        )
        # The same weights, through a file: `load_weights` reads the layout
        # of either version (the order of `weights` may differ).
        weights = os.path.join(tempfile.mkdtemp(), "baseline.weights.h5")
        baseline.save_weights(weights)
        load_weights(ours, weights)
    hub = common.HubTransformer(
        sequence_length=positions,
        dropout=0.1,
        **shape,
    )
    rng = np.random.default_rng(0)
    hub(
        {
            "encoder_inputs": np.ones((1, 2), "int32"),
            "decoder_inputs": np.ones((1, 2), "int32"),
        }
    )

    results, ops_per_step, jax_environment = {}, {}, None
    with tempfile.TemporaryDirectory() as saved_model_dir:
        for search in args.search:
            beam_size = SEARCHES[search]
            variants = {
                **ours_variants(
                    ours,
                    beam_size,
                    new_tokens,
                    saved_model_dir if args.saved_model else None,
                ),
                **hub_variants(hub, beam_size, new_tokens),
            }
            if baseline is not None:
                variants.update(
                    (name.replace("ours", "baseline"), run)
                    for name, run in ours_variants(
                        baseline,
                        beam_size,
                        new_tokens,
                        decode_fn=package.decode,
                    ).items()
                    if name in ("ours_tf_function", "ours_xla", "ours_signature")
                )
            if args.prefix:
                variants.update(prefix_variants(ours, beam_size, new_tokens))
            if beam_size == 1:
                variants.update(tutorial_variant(ours, new_tokens))
            if args.ctranslate2:
                variants.update(
                    ctranslate2_variants(
                        ours, beam_size, new_tokens, positions, saved_model_dir
                    )
                )
            results[search] = {}
            for batch_size in settings["batch_sizes"]:
                ids = tf.constant(
                    rng.integers(
                        3, settings["vocab_size"], (batch_size, source_length)
                    ),
                    tf.int32,
                )
                results[search][f"batch_{batch_size}"] = time_variants(
                    variants, ids, settings["repeats"], new_tokens
                )
            ops_per_step[search] = {
                "ours": loop_body_ops(variants["ours_tf_function"], ids),
                "keras_hub": loop_body_ops(variants["keras_hub"], ids),
            }
        if args.jax:
            rows, jax_environment = jax_rows(
                ours, settings, args.search, args.quick, saved_model_dir
            )
            for search, by_batch in rows.items():
                for batch_key, row in by_batch.items():
                    results[search][batch_key].update(row)
    ratios, targets = ratios_and_targets(results)
    common.print_json(
        {
            "benchmark": "decode_speed",
            "quick": args.quick,
            "model": {
                **shape,
                "parameters": {
                    "ours": ours.count_params(),
                    "keras_hub": hub.count_params(),
                },
            },
            "baseline": args.baseline,
            "source_length": source_length,
            "new_tokens": new_tokens,
            "repeats": settings["repeats"],
            "unit": "generated tokens per second (batch * new_tokens / median "
            "seconds per call); beam search counts the returned sequence only",
            "results": results,
            "ops_per_step": ops_per_step,
            "ratios": ratios,
            "targets": targets,
            "environment": environment,
            "jax_environment": jax_environment,
            "load_average_1m_at_end": common.rounded(os.getloadavg()[0], 3),
        }
    )


if __name__ == "__main__":
    main()
