"""Beam-search speed of an imported Marian model against transformers' generate().

A random Marian model of opus-mt-en-de's shape (d_model 512, 6 + 6
layers, 8 heads, feed-forward 2048, vocabulary 58,101, swish) is written
by transformers, in another Python that has torch and transformers
(`--hf-python`; CI installs neither), which also times `generate()`
(torch on CPU, `--threads` threads). This process imports it
(`load_marian`), exports the translator as a SavedModel, reloads it and
times its `ids` signature on the same source ids, at the same beam size
and threads. Both make `--new-tokens` tokens (the model is random, so the
end token is rarely chosen; both count the tokens they made). Prints JSON.

    python benchmarks/marian_speed.py --hf-python /work/venv-hf/bin/python
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import environment, print_json, ratio, set_threads  # noqa: E402

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "tests", "fixtures", "marian", "shared_swish"
)
VOCAB_SIZE = 58101
SOURCE_LENGTH = 20

REFERENCE = r"""
import json, os, shutil, sys, time
import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel

folder, fixture, vocab_size, threads, beams, new_tokens, batches = sys.argv[1:]
vocab_size, threads, beams, new_tokens = map(
    int, (vocab_size, threads, beams, new_tokens))
torch.set_num_threads(threads)
pieces = list(json.load(open(os.path.join(fixture, "vocab.json"))))[:-1]
pieces += [f"\u2581x{i}" for i in range(vocab_size - 1 - len(pieces))] + ["<pad>"]
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "vocab.json"), "w") as file:
    json.dump({p: i for i, p in enumerate(pieces)}, file)
for name in ("source.spm", "target.spm"):
    shutil.copy(os.path.join(fixture, name), folder)
pad = vocab_size - 1
config = MarianConfig(vocab_size=vocab_size, decoder_vocab_size=vocab_size,
    d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
    decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
    activation_function="swish", scale_embedding=True, max_position_embeddings=512,
    pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0)
torch.manual_seed(0)
model = MarianMTModel(config).eval()
model.generation_config = GenerationConfig(bad_words_ids=[[pad]],
    decoder_start_token_id=pad, eos_token_id=0, pad_token_id=pad, num_beams=beams)
model.save_pretrained(folder)
results = {}
for batch in json.loads(batches):
    ids = torch.tensor(batch)
    with torch.no_grad():
        model.generate(input_ids=ids[:1], num_beams=beams, max_new_tokens=2)
        start = time.perf_counter()
        out = model.generate(input_ids=ids, num_beams=beams,
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens)
        seconds = time.perf_counter() - start
    tokens = int(((out[:, 1:] != pad) & (out[:, 1:] != 0)).sum()) + len(batch)
    results[str(len(batch))] = {"seconds": seconds, "tokens": tokens}
print(json.dumps({"torch": torch.__version__, "results": results}))
"""


def source_batches(sizes, seed=0):
    """Random Marian source ids: (B, SOURCE_LENGTH - 1) pieces then </s>."""
    rng = np.random.default_rng(seed)
    batches = []
    for size in sizes:
        ids = rng.integers(2, VOCAB_SIZE - 1, size=(size, SOURCE_LENGTH))
        ids[:, -1] = 0
        batches.append(ids.tolist())
    return batches


def ours(folder, batches, beams, new_tokens, export_dir):
    """Tokens/s of our exported SavedModel's `ids` signature."""
    import tensorflow as tf

    from keras_transformer.export import Translator, export_translator
    from keras_transformer.marian import load_marian, vocabulary

    model, tokenizer, _ = load_marian(folder)
    translator = Translator(
        model, tokenizer, beam_size=beams, alpha=1.0, extra_length=new_tokens
    )
    path = export_translator(translator, export_dir, "marian", version=1)
    signature = tf.saved_model.load(path).signatures["ids"]
    source_vocab = json.load(open(os.path.join(folder, "vocab.json")))
    order = vocabulary.marian_order(source_vocab)
    ours_of = np.empty(len(order), "int32")
    ours_of[order] = np.arange(1, len(order) + 1)
    results = {}
    for batch in batches:
        ids = tf.constant(ours_of[np.array(batch)])
        signature(ids=ids[:1])
        start = time.perf_counter()
        out = signature(ids=ids)["ids"].numpy()
        seconds = time.perf_counter() - start
        results[str(len(batch))] = {"seconds": seconds, "tokens": int((out != 0).sum())}
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hf-python", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32])
    args = parser.parse_args(argv)
    set_threads(args.threads)
    batches = source_batches(args.batch_sizes)
    with tempfile.TemporaryDirectory() as folder:
        hf_dir = os.path.join(folder, "hf")
        process = subprocess.run(
            [
                args.hf_python,
                "-c",
                REFERENCE,
                hf_dir,
                FIXTURE,
                str(VOCAB_SIZE),
                str(args.threads),
                str(args.beam_size),
                str(args.new_tokens),
                json.dumps(batches),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        reference = json.loads(process.stdout.strip().splitlines()[-1])
        mine = ours(
            hf_dir,
            batches,
            args.beam_size,
            args.new_tokens,
            os.path.join(folder, "export"),
        )
    rows = {}
    for size in map(str, args.batch_sizes):
        theirs, us = reference["results"][size], mine[size]
        rows[size] = {
            "transformers_tokens_per_s": theirs["tokens"] / theirs["seconds"],
            "ours_saved_model_tokens_per_s": us["tokens"] / us["seconds"],
            "speedup": ratio(
                us["tokens"] / us["seconds"], theirs["tokens"] / theirs["seconds"]
            ),
            "transformers": theirs,
            "ours": us,
        }
    print_json(
        {
            "benchmark": "marian_speed",
            "shape": {"d_model": 512, "layers": "6+6", "vocab_size": VOCAB_SIZE},
            "beam_size": args.beam_size,
            "new_tokens": args.new_tokens,
            "source_length": SOURCE_LENGTH,
            "torch": reference["torch"],
            "batches": rows,
            "environment": environment(args.threads),
        }
    )


if __name__ == "__main__":
    main()
