"""`keras-transformer translate` on a whole file: a baseline source tree,
this one, and CTranslate2, on the same weights and the same file, in one run.

    git worktree add --detach /tmp/baseline 0a7a895
    python benchmarks/translate_file.py RUN_DIR --baseline-src /tmp/baseline \\
        > benchmarks/results/translate_file.json

(results/translate_file_epyc_busy.json: RUN_DIR /tmp/st-model,
`--signature-batches 4`.)

RUN_DIR is a `keras-transformer train` run's folder (model.keras,
tokenizer.model, job.json). Each source tree exports its own SavedModel of
those weights (`keras-transformer export`, with PYTHONPATH set to the tree)
and translates Ding's test sources (or `--texts`) through its own
`translate` command in a fresh process, beam 4, all cores; this tree also
exports and runs CTranslate2 (float32). Per row: wall and CPU seconds
(user + system of the child, `resource.getrusage`), output words per
second, and the seconds of a one-line file (the start-up). Baseline and new
are compared line by line (share identical, BLEU against the references).
The SavedModel's `beam` signature alone (the TF Serving path) is timed at
batch 32 on the file's first batches, after one warm-up call. Runs of the
rows are interleaved, `--repeats` rounds, medians reported.

`--quick` (the test suite's smoke run): an untrained tiny model on 40 lines,
no CTranslate2 row, the one-line start-up timed for this tree only, and both
trees' `beam` signatures timed in one process.

Prints one JSON object on stdout.
"""

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]

# Run in a fresh process (PYTHONPATH: a source tree): the `beam` signature
# of each SavedModel alone, on the first `batches` batches of a file; one
# JSON line per SavedModel.
SIGNATURE_TIMER = """
import json, sys, time
import tensorflow as tf
import tensorflow_text  # noqa: F401
path, beam, batch, batches, *exports = sys.argv[1:]
beam, batch, batches = int(beam), int(batch), int(batches)
tf.config.threading.set_intra_op_parallelism_threads(0)
with open(path, encoding="utf-8") as file:
    lines = [line.rstrip("\\n") for line in file][: batch * batches]
chunks = [lines[start : start + batch] for start in range(0, len(lines), batch)]
for export in exports:
    loaded = tf.saved_model.load(export)
    alpha = float(loaded.defaults["alpha"].numpy())
    def call(texts):
        outputs = loaded.signatures["beam"](
            text=tf.constant(texts),
            beam_size=tf.constant(beam),
            alpha=tf.constant(alpha),
        )
        return [text.decode() for text in outputs["translation"].numpy()]
    call(chunks[0])
    started = time.perf_counter()
    words = sum(len(text.split()) for chunk in chunks for text in call(chunk))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "words": words, "sentences": len(lines)}))
"""


def tree_env(tree):
    """The environment of a child process that imports the package from `tree`."""
    return {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3"}


def cli(tree, *arguments, stdout=subprocess.DEVNULL):
    """Runs `keras-transformer ARGUMENTS` from the source tree `tree`;
    returns (wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", *arguments],
        check=True,
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=tree_env(tree),
        cwd=tree,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run_for_older_trees(run_dir, folder):
    """A copy of the run folder without the model-config fields that hold
    their defaults, which a tree older than the field cannot read (it then
    builds the same model from its own defaults), and with the run's
    `model.max_length` in the model config, where older trees read their
    decoding limit."""
    import dataclasses
    import shutil
    import zipfile

    from keras_transformer.models import TransformerConfig
    from keras_transformer.recipe.config import RunConfig
    from keras_transformer.recipe.run_directory import RunDirectory

    defaults = {
        field.name: field.default
        for field in dataclasses.fields(TransformerConfig)
        if field.default is not dataclasses.MISSING
    }

    run = RunDirectory(run_dir)
    max_length = (run.read_config() if run.exists() else RunConfig()).model.max_length

    def trimmed(config):
        return {
            **{
                key: value
                for key, value in config.items()
                if key not in defaults or value != defaults[key]
            },
            "max_length": max_length,
        }

    copy = folder / "run_for_older_trees"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("checkpoints"))
    config_file = copy / "model_config.json"
    if config_file.exists():
        config = trimmed(json.loads(config_file.read_text()))
        config_file.write_text(json.dumps(config))
    with zipfile.ZipFile(run_dir / "model.keras") as source:
        files = {name: source.read(name) for name in source.namelist()}
    saved = json.loads(files["config.json"])
    saved["config"]["config"] = trimmed(saved["config"]["config"])
    files["config.json"] = json.dumps(saved).encode()
    with zipfile.ZipFile(copy / "model.keras", "w") as target:
        for name, data in files.items():
            target.writestr(name, data)
    return copy


def export_all(run_dir, trees, folder, with_ctranslate2):
    """{row name: export path}: a SavedModel per source tree (a tree given
    twice, as the smoke test gives this one, is exported once), and
    CTranslate2's."""
    exports, by_tree = {}, {}
    older = run_for_older_trees(run_dir, folder)
    for name, tree in trees.items():
        if tree not in by_tree:
            output = folder / f"saved_model_{name}"
            run = run_dir if tree == trees["new"] else older
            cli(tree, "export", str(run), "--format", "saved_model", "-o", str(output))
            by_tree[tree] = str(output / "1")
        exports[name] = by_tree[tree]
    if with_ctranslate2:
        output = folder / "ctranslate2"
        cli(
            trees["new"],
            "export",
            str(run_dir),
            "--format",
            "ctranslate2",
            "-o",
            str(output),
        )
        exports["ctranslate2"] = str(output)
    return exports


def translate_rows(exports, trees, texts, one_line, folder, args):
    """Per row: median wall, CPU and start-up seconds (with `--quick`, the
    start-up of "new" only), output words per second, and the translations
    (of the last round)."""
    runs = {name: {"wall": [], "cpu": [], "startup": []} for name in exports}
    startup_rows = ["new"] if args.quick else list(exports)
    translations = {}
    for _ in range(args.repeats):
        for name, export in exports.items():
            tree = trees.get(name, trees["new"])
            common = ["--beam-size", str(args.beam_size), "--threads", "0"]
            common += ["--batch-size", str(args.batch_size)]
            output = folder / f"{name}.txt"
            with open(output, "w") as file:
                wall, cpu = cli(
                    tree, "translate", export, str(texts), *common, stdout=file
                )
            runs[name]["wall"].append(wall)
            runs[name]["cpu"].append(cpu)
            if name in startup_rows:
                runs[name]["startup"].append(
                    cli(tree, "translate", export, str(one_line), *common)[0]
                )
            translations[name] = output.read_text(encoding="utf-8").splitlines()
    rows = {}
    for name, timings in runs.items():
        wall = statistics.median(timings["wall"])
        words = sum(len(line.split()) for line in translations[name])
        rows[name] = {
            "wall_seconds": round(wall, 2),
            "cpu_seconds": round(statistics.median(timings["cpu"]), 2),
        }
        if timings["startup"]:
            startup = statistics.median(timings["startup"])
            rows[name]["one_line_seconds"] = round(startup, 2)
        rows[name]["output_words"] = words
        rows[name]["words_per_second"] = round(words / wall, 1)
    return rows, translations


def signature_rows(exports, trees, texts, args):
    """Words per second of each tree's SavedModel `beam` signature alone: a
    process per tree, or with `--quick` one process for all of them."""
    runs = {name: [] for name in trees}
    groups = [list(trees)] if args.quick else [[name] for name in trees]
    for _ in range(args.repeats):
        for names in groups:
            command = [sys.executable, "-c", SIGNATURE_TIMER, str(texts)]
            command += [str(args.beam_size), "32", str(args.signature_batches)]
            command += [exports[name] for name in names]
            env = tree_env(trees[names[-1]])
            result = subprocess.run(
                command, check=True, capture_output=True, text=True, env=env
            )
            for name, line in zip(names, result.stdout.splitlines(), strict=True):
                runs[name].append(json.loads(line))
    rows = {}
    for name, results in runs.items():
        seconds = statistics.median(result["seconds"] for result in results)
        rows[name] = {
            "batch_size": 32,
            "sentences": results[0]["sentences"],
            "seconds": round(seconds, 3),
            "words_per_second": round(results[0]["words"] / seconds, 1),
        }
    return rows


def comparison(translations, references):
    """Baseline against new: the share of identical lines and BLEU of each."""
    from keras_transformer.evaluation import corpus_scores

    baseline, new = translations["baseline"], translations["new"]
    same = sum(a == b for a, b in zip(baseline, new, strict=True)) / len(new)
    result = {"identical_line_share": round(same, 4)}
    if references is not None:
        for name, lines in translations.items():
            result[f"bleu_{name}"] = round(corpus_scores(lines, references)["bleu"], 2)
        result["bleu_new_minus_baseline"] = round(
            result["bleu_new"] - result["bleu_baseline"], 2
        )
    return result


def quick_run(folder, sources):
    """A run folder with an untrained tiny model (the smoke test's)."""
    import keras

    import keras_transformer as kt
    from keras_transformer.data import train_tokenizer
    from keras_transformer.recipe.config import RunConfig
    from keras_transformer.recipe.run_directory import RunDirectory

    keras.utils.set_random_seed(0)
    tokenizer = train_tokenizer(sources, vocab_size=120, byte_fallback=False)
    config = kt.TransformerConfig.tiny(tokenizer.vocab_size, d_model=16, d_ff=32)
    run = RunDirectory(folder / "run")
    os.makedirs(folder / "run", exist_ok=True)
    tokenizer.save(run.tokenizer)
    run.write_config(
        RunConfig.from_dict({"model": {"preset": "tiny", "max_length": 12}})
    )
    kt.build_transformer(config).save(run.model)
    return folder / "run"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", nargs="?", help="a train run's folder")
    parser.add_argument(
        "--baseline-src", required=True, help="the baseline's source tree"
    )
    parser.add_argument("--texts", help="a sentence a line (default: Ding's test)")
    parser.add_argument("--references", help="with --texts: a reference a line")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--signature-batches", type=int, default=8)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="an untrained tiny model, 40 lines, no CTranslate2 (a smoke run)",
    )
    args = parser.parse_args(argv)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="translate_file_"))
    references = None
    if args.texts is None:
        from keras_transformer.data import load_ding_pairs

        pairs = load_ding_pairs()["test"][: 40 if args.quick else None]
        texts = folder / "test.de"
        texts.write_text("".join(source + "\n" for source, _ in pairs))
        references = [target for _, target in pairs]
    else:
        texts = pathlib.Path(args.texts)
        if args.references:
            references = pathlib.Path(args.references).read_text().splitlines()
    one_line = folder / "one_line.txt"
    one_line.write_text(texts.read_text(encoding="utf-8").split("\n")[0] + "\n")
    run_dir = args.run_dir and pathlib.Path(args.run_dir).resolve()
    if args.quick:
        run_dir = quick_run(folder, texts.read_text(encoding="utf-8").splitlines())
    try:
        import ctranslate2  # noqa: F401

        with_ctranslate2 = not args.quick
    except ImportError:
        with_ctranslate2 = False
    trees = {"baseline": pathlib.Path(args.baseline_src).resolve(), "new": REPO}
    exports = export_all(run_dir, trees, folder, with_ctranslate2)
    rows, translations = translate_rows(exports, trees, texts, one_line, folder, args)
    new = rows["new"]["wall_seconds"]
    ratios = {
        "new_vs_baseline_speed-up": round(rows["baseline"]["wall_seconds"] / new, 3)
    }
    if with_ctranslate2:
        ratios["new_vs_ctranslate2_speed"] = round(
            rows["ctranslate2"]["wall_seconds"] / new, 3
        )
    signature = signature_rows(exports, trees, texts, args)
    ratios["signature_new_vs_baseline_words_per_second"] = round(
        signature["new"]["words_per_second"]
        / signature["baseline"]["words_per_second"],
        3,
    )
    from common import cpu_description  # benchmarks/common.py

    print(
        json.dumps(
            {
                "benchmark": "translate_file",
                "run_dir": str(run_dir),
                "baseline_src": str(trees["baseline"]),
                "texts": str(args.texts or "ding test"),
                "sentences": len(translations["new"]),
                "beam_size": args.beam_size,
                "batch_size": args.batch_size,
                "threads": "all cores",
                "cpu": cpu_description(),
                "cpu_count": os.cpu_count(),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "repeats": args.repeats,
                "translate": rows,
                "signature_beam": signature,
                "baseline_vs_new": comparison(translations, references),
                "ratios": ratios,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
