"""Beam-search speed of an imported Marian model against transformers' generate().

A random Marian model of opus-mt-en-de's shape (d_model 512, 6 + 6
layers, 8 heads, feed-forward 2048, vocabulary 58,101, swish) is written
by transformers, in another Python that has torch and transformers
(`--hf-python`; CI installs neither), which also times `generate()`
(torch on CPU, `--threads` threads). This process imports it
(`load_marian`), exports the translator as a SavedModel, reloads it and
times its `ids` signature on the same source ids, at the same beam size
and threads. Every column makes the same number of tokens a source:
the source's length + `--new-tokens`, our Translator's limit
(`extra_length`); transformers and CTranslate2 are held to it by a minimum
and a maximum, ours reaches it because the random model rarely picks the
end token (each counts the tokens it made). Each column is the median of
`--repeats` timed calls after a warm-up call. Prints JSON.

With `--ctranslate2` (ctranslate2 installed in both Pythons; CI needs
neither), two more columns, beam search on the same pieces and threads:
the model converted by CTranslate2's own converter (`TransformersConverter`,
float32, timed in the other Python) and our CTranslate2 export of the
imported model (`export_ctranslate2`, float32), both made to give
`--new-tokens` tokens. On a machine busier than its cores, run with
`OMP_WAIT_POLICY=PASSIVE` (recorded in the JSON): CTranslate2's OpenMP
threads otherwise spin at each barrier, and on 2 shared cores under a load
of 5 both CTranslate2 models ran 20-30x slower at 2 threads than at 1.

    python benchmarks/marian_speed.py --hf-python /work/venv-hf/bin/python \
        --ctranslate2
"""

import argparse
import inspect
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
{HELPERS}
from transformers import GenerationConfig, MarianConfig, MarianMTModel

folder, fixture, vocab_size, threads, beams, new_tokens, batches, ct2, repeats = (
    sys.argv[1:])
vocab_size, threads, beams, new_tokens, repeats = map(
    int, (vocab_size, threads, beams, new_tokens, repeats))
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
        seconds, out = timed(lambda: model.generate(
            input_ids=ids, num_beams=beams, max_new_tokens=new_tokens,
            min_new_tokens=new_tokens), repeats)
    tokens = int(((out[:, 1:] != pad) & (out[:, 1:] != 0)).sum()) + len(batch)
    results[str(len(batch))] = {"seconds": seconds, "tokens": tokens}
report = {"torch": torch.__version__, "results": results}
with torch.no_grad():  # greedy on the largest batch, to compare the tokens
    out = model.generate(input_ids=torch.tensor(json.loads(batches)[-1]),
                         num_beams=1, max_new_tokens=new_tokens)
report["greedy"] = out[:, 1:].tolist()
if ct2 == "1":
    import ctranslate2
    ctranslate2.converters.TransformersConverter(folder).convert(folder + "-ct2")
    translator = ctranslate2.Translator(folder + "-ct2", intra_threads=threads)
    report["ctranslate2"] = ctranslate2.__version__
    for batch in json.loads(batches):
        source = [[pieces[i] for i in row] for row in batch]
        report["results"][str(len(batch))]["ctranslate2"] = time_ctranslate2(
            translator, source, beams, new_tokens, repeats)
print(json.dumps(report))

"""


def timed(call, repeats):
    """The median seconds of `repeats` calls of `call()`, and its last result."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        seconds.append(time.perf_counter() - start)
    return sorted(seconds)[len(seconds) // 2], result


def time_ctranslate2(translator, source, beams, new_tokens, repeats):
    """Median seconds and tokens (counted as transformers' are: the pieces
    made, and one a source) of beam search on `source`, token lists."""
    translator.translate_batch(source[:1], beam_size=beams, max_decoding_length=2)
    seconds, results = timed(
        lambda: translator.translate_batch(
            source,
            beam_size=beams,
            max_decoding_length=new_tokens,
            min_decoding_length=new_tokens,
        ),
        repeats,
    )
    tokens = sum(len(result.hypotheses[0]) + 1 for result in results)
    return {"seconds": seconds, "tokens": tokens}


def greedy_identical_share(theirs, ours, limit):
    """The share of rows whose greedy tokens are the same: transformers'
    (Marian ids, padded) against ours (Marian ids, -1 after the end). A
    row that reaches the limit is compared without its last token, which
    transformers forces to the end token and ours leaves to the argmax."""
    same = 0
    for their_row, our_row in zip(theirs, ours, strict=True):
        mine = [int(token) for token in our_row if token >= 0]
        their_row = list(their_row)
        their_row = their_row[: their_row.index(0) + 1 if 0 in their_row else limit]
        if len(mine) == len(their_row) == limit:
            mine, their_row = mine[:-1], their_row[:-1]
        same += mine == their_row
    return same / len(theirs)


def source_batches(sizes, seed=0):
    """Random Marian source ids: (B, SOURCE_LENGTH - 1) pieces then </s>."""
    rng = np.random.default_rng(seed)
    batches = []
    for size in sizes:
        ids = rng.integers(2, VOCAB_SIZE - 1, size=(size, SOURCE_LENGTH))
        ids[:, -1] = 0
        batches.append(ids.tolist())
    return batches


def ours(
    folder, batches, beams, new_tokens, export_dir, repeats, ctranslate2_threads=None
):
    """Median seconds and tokens of our exported SavedModel's `ids` signature,
    and with `ctranslate2_threads` of our CTranslate2 export on that many
    threads."""
    import tensorflow as tf

    from keras_transformer.decoding import decode
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
        seconds, out = timed(lambda ids=ids: signature(ids=ids)["ids"].numpy(), repeats)
        results[str(len(batch))] = {"seconds": seconds, "tokens": int((out != 0).sum())}
    greedy, _ = decode(
        model, ours_of[np.array(batches[-1])], beam_size=1, extra_length=new_tokens
    )  # (B, 1, L), our ids
    greedy = greedy.numpy()[:, 0]
    results["greedy"] = np.where(greedy > 0, order[np.maximum(greedy, 1) - 1], -1)
    if ctranslate2_threads:
        import ctranslate2

        from keras_transformer.export import export_ctranslate2

        path = export_ctranslate2(translator, export_dir + "-ct2")
        ct2 = ctranslate2.Translator(path, intra_threads=ctranslate2_threads)
        pieces = tokenizer.pieces()[0]
        for batch in batches:  # without the end token, which the export adds
            source = [[pieces[i] for i in row[:-1]] for row in ours_of[np.array(batch)]]
            results[str(len(batch))]["ctranslate2"] = time_ctranslate2(
                ct2, source, beams, SOURCE_LENGTH + new_tokens, repeats
            )
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hf-python", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--ctranslate2", action="store_true")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed calls a column (the median)"
    )
    args = parser.parse_args(argv)
    set_threads(args.threads)
    batches = source_batches(args.batch_sizes)
    with tempfile.TemporaryDirectory() as folder:
        hf_dir = os.path.join(folder, "hf")
        process = subprocess.run(
            [
                args.hf_python,
                "-c",
                REFERENCE.replace(
                    "{HELPERS}",
                    inspect.getsource(timed) + inspect.getsource(time_ctranslate2),
                ),
                hf_dir,
                FIXTURE,
                str(VOCAB_SIZE),
                str(args.threads),
                str(args.beam_size),
                str(SOURCE_LENGTH + args.new_tokens),
                json.dumps(batches),
                str(int(args.ctranslate2)),
                str(args.repeats),
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
            args.repeats,
            args.threads if args.ctranslate2 else None,
        )
    greedy_share = greedy_identical_share(
        reference["greedy"], mine.pop("greedy"), SOURCE_LENGTH + args.new_tokens
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
        if args.ctranslate2:
            for name, times in (
                ("ctranslate2_converter", theirs.pop("ctranslate2")),
                ("ours_ctranslate2", us.pop("ctranslate2")),
            ):
                rows[size][f"{name}_tokens_per_s"] = times["tokens"] / times["seconds"]
                rows[size][name] = times
    print_json(
        {
            "benchmark": "marian_speed",
            "shape": {"d_model": 512, "layers": "6+6", "vocab_size": VOCAB_SIZE},
            "beam_size": args.beam_size,
            "new_tokens": args.new_tokens,
            "tokens_a_source": SOURCE_LENGTH + args.new_tokens,
            "source_length": SOURCE_LENGTH,
            "torch": reference["torch"],
            "ctranslate2": reference.get("ctranslate2"),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "repeats": args.repeats,
            "batches": rows,
            "greedy_identical_share": greedy_share,
            "environment": environment(args.threads),
        }
    )


if __name__ == "__main__":
    main()
