"""Fine-tuning on another domain: a Ding model tuned on software messages.

Trains the default job (`keras-transformer train`: Ding's German-English
dictionary phrases, de->en) and fine-tunes that run on a different
German-English text, the messages of the gettext catalogues installed on
this machine (`benchmarks/gettext_corpus.py --language de`, German source,
English target), with `keras-transformer train --init-from` and its default
fine-tuning length. Then it scores both exports on both test sets with beam
search (each export's own beam and alpha, the run's defaults) and sacreBLEU
(13a, mixed case) and chrF:

- the new domain (gettext test) before and after fine-tuning: the gain;
- Ding's test split before and after: what the fine-tuning forgot.

    python benchmarks/fine_tuning.py --work-dir /tmp/fine_tuning

Everything goes under `--work-dir`: the gettext corpus (`gettext-de-en/`),
Ding's test split as files (`ding-test.de`, `ding-test.en`), the runs
(`ding/`, `tuned/`), their exports (`ding_saved/`, `saved/`), the
translations (`translations/`) and each command's output (`logs/`). A
finished run (its results.json) is not trained again, so a rerun only
scores. Both runs use the defaults, --seed included. Prints one JSON object.

Each model is scored the same way on both test sets: its export translates
the source file (`keras-transformer translate EXPORT FILE`), and
`keras_transformer.evaluation.corpus_scores` scores the lines against the
references. (`keras-transformer evaluate` scores a run on its own corpus
only.) The runs' own test scores (results.json, on their own test sets) are
reported beside them as a check.
"""

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = [sys.executable, "-m", "keras_transformer.cli"]


def write_gettext_corpus(folder):
    """Writes the gettext German-English corpus (gettext_corpus.py's splits)
    into `folder` unless it is there; its summary (catalogues, pair counts)."""
    summary = os.path.join(folder, "summary.json")
    if os.path.exists(summary):
        with open(summary) as file:
            return json.load(file)
    sys.path.insert(0, HERE)
    import gettext_corpus

    arguments = ["gettext_corpus.py", folder, "--language", "de"]
    output = io.StringIO()
    saved, sys.argv = sys.argv, arguments
    try:
        with contextlib.redirect_stdout(output):
            gettext_corpus.main()
    finally:
        sys.argv = saved
    result = json.loads(output.getvalue())
    with open(summary, "w") as file:
        json.dump(result, file)
    return result


def run_logged(command, log_path):
    """Runs `command`, its output into `log_path`; seconds it took."""
    started = time.time()
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        subprocess.run(command, stdout=log, stderr=log, check=True)
    return round(time.time() - started, 1)


def train(output_dir, arguments, log_path):
    """A `train` run into `output_dir` (skipped when finished): its
    results.json, the command and the seconds it took (None if skipped)."""
    command = [*CLI, "train", "--output-dir", output_dir, *arguments]
    results_path = os.path.join(output_dir, "results.json")
    seconds = None
    if not os.path.exists(results_path):
        seconds = run_logged(command, log_path)
    with open(results_path) as file:
        results = json.load(file)
    return results, command, seconds


def write_ding_test(run_dir, prefix):
    """Writes the Ding run's own test split as `prefix`.de / `prefix`.en."""
    if os.path.exists(prefix + ".en"):
        return count_lines(prefix + ".en")
    from keras_transformer.data import dataset_to_lists
    from keras_transformer.recipe.data import load_splits
    from keras_transformer.recipe.run_directory import RunDirectory

    config = RunDirectory(run_dir).read_config()
    pairs = load_splits(config.data, config.training.seed).splits["test"]
    sources, targets = dataset_to_lists(pairs)
    for lines, language in ((sources, "de"), (targets, "en")):
        with open(f"{prefix}.{language}", "w", encoding="utf-8") as file:
            file.writelines(" ".join(line.split()) + "\n" for line in lines)
    return len(sources)


def training_pairs(run_dir):
    """The training pairs a pass of the run read (its pass_size.json)."""
    with open(os.path.join(run_dir, "pass_size.json")) as file:
        return json.load(file)["settings"]["training_pairs"]


def count_lines(path):
    with open(path, encoding="utf-8") as file:
        return sum(1 for _ in file)


def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file]


def score_export(export_path, source, reference, output, log_path):
    """BLEU and chrF of the export's translations of `source` (written to
    `output`) against `reference`."""
    from keras_transformer.evaluation import corpus_scores

    seconds = None
    if not os.path.exists(output):
        started = time.time()
        with open(output + ".part", "w") as out, open(log_path, "a") as log:
            command = [*CLI, "translate", export_path, source]
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            subprocess.run(command, stdout=out, stderr=log, check=True)
        os.rename(output + ".part", output)
        seconds = round(time.time() - started, 1)
    hypotheses, references = read_lines(output), read_lines(reference)
    scores = corpus_scores(hypotheses, references, "en")
    return {
        "bleu": round(scores["bleu"], 2),
        "chrf": round(scores["chrf"], 2),
        "sentences": len(references),
        "translate_seconds": seconds,
        "bleu_signature": scores["bleu_signature"],
    }


def run_summary(results, command, seconds):
    """What the report keeps of a run's results.json."""
    return {
        "command": " ".join(command),
        "own_test_bleu": round(results["bleu"], 2),
        "own_test_chrf": round(results["chrf"], 2),
        "own_test_sentences": results["test_sentences"],
        "updates": results["updates"],
        "steps": results["steps"],
        "epochs_trained": results["epochs_trained"],
        "exported_weights": results["exported_weights"],
        "fit_seconds": results["fit_seconds"],
        "fit_cpu_seconds": results["fit_cpu_seconds"],
        "total_seconds": results["total_seconds"],
        "command_seconds": seconds,
        "precision": results["precision"],
        "export_path": results["export_path"],
        "warmup_steps": results["job"]["training"].get("warmup_steps"),
        "learning_rate_scale": results["job"]["training"].get("learning_rate_scale"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", default="/tmp/fine_tuning")
    args = parser.parse_args()
    work = os.path.abspath(args.work_dir)
    logs = os.path.join(work, "logs")
    translations = os.path.join(work, "translations")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(translations, exist_ok=True)

    corpus = os.path.join(work, "gettext-de-en")
    corpus_summary = write_gettext_corpus(corpus)

    def files(split):
        return [os.path.join(corpus, f"{split}.{lang}") for lang in ("de", "en")]

    ding_dir = os.path.join(work, "ding")
    ding, ding_command, ding_seconds = train(
        ding_dir,
        ["--export-dir", os.path.join(work, "ding_saved")],
        os.path.join(logs, "ding_train.log"),
    )
    tuned, tuned_command, tuned_seconds = train(
        os.path.join(work, "tuned"),
        [
            *("--init-from", ding_dir),
            *("--train-files", *files("train")),
            *("--valid-files", *files("valid")),
            *("--test-files", *files("test")),
            *("--export-dir", os.path.join(work, "saved")),
        ],
        os.path.join(logs, "tuned_train.log"),
    )

    ding_test = os.path.join(work, "ding-test")
    ding_test_sentences = write_ding_test(ding_dir, ding_test)
    test_sets = {
        "gettext": files("test"),
        "ding": [ding_test + ".de", ding_test + ".en"],
    }
    models = {"ding": ding, "tuned": tuned}
    scores = {}
    # The scores that no run has reported first, then those of each run's
    # own test set (which should repeat results.json's).
    order = [("ding", "gettext"), ("tuned", "ding"), ("tuned", "gettext")]
    for model, test in [*order, ("ding", "ding")]:
        source, reference = test_sets[test]
        scores[f"{model}_on_{test}"] = score_export(
            models[model]["export_path"],
            source,
            reference,
            os.path.join(translations, f"{model}-on-{test}.en"),
            os.path.join(logs, "translate.log"),
        )

    from common import environment  # after the runs: the load now

    def difference(metric, test):
        after = scores[f"tuned_on_{test}"][metric]
        return round(after - scores[f"ding_on_{test}"][metric], 2)

    result = {
        "work_dir": work,
        "corpora": {
            "gettext_de_en": corpus_summary,
            "ding": {"test": ding_test_sentences},
        },
        "training_pairs": {
            "ding": training_pairs(ding_dir),
            "tuned": training_pairs(os.path.join(work, "tuned")),
        },
        "scores": scores,
        "gain_on_gettext": {m: difference(m, "gettext") for m in ("bleu", "chrf")},
        "change_on_ding": {m: difference(m, "ding") for m in ("bleu", "chrf")},
        "runs": {
            "ding": run_summary(ding, ding_command, ding_seconds),
            "tuned": run_summary(tuned, tuned_command, tuned_seconds),
        },
        "date": time.strftime("%Y-%m-%d"),
        "environment": environment(),
    }
    print(json.dumps(result, indent=2), flush=True)


if __name__ == "__main__":
    main()
