"""What a run folder that already holds a run means for a new one.

A run resumes only with the same data, vocabulary and model: those
settings are `MUST_MATCH`. Other training settings may change on a resume
(with a warning); evaluation and output settings change nothing that
training did.
"""

import dataclasses
import os

from keras_transformer.recipe.run_directory import RunDirectory, check_writable

# Settings a run's data, vocabulary and weights follow: a run folder resumes
# only with the same ones ("model" stands for the whole section).
MUST_MATCH = (
    "data.corpus",
    "data.source_language",
    "data.target_language",
    "data.train_files",
    "data.valid_files",
    "data.test_files",
    "data.extra_train_split",
    "data.vocab_size",
    "data.vocab",
    "training.init_from",
    "model",
)
# Sections that change nothing training did.
NOT_TRAINING = ("evaluation", "output")


@dataclasses.dataclass(frozen=True)
class Folders:
    """Where this process writes: its run folder, the chief's, its exports."""

    run: RunDirectory
    chief: RunDirectory
    export_dir: str


def worker_folders(config, strategy):
    """The `Folders` of this process, checked for writing.

    Under "multi_worker" the workers other than the chief write below
    `<folder>/workers/` (`worker_directory`).
    """
    from keras_transformer.training import worker_directory

    output = config.output
    folders = Folders(
        run=RunDirectory(worker_directory(strategy, output.output_dir)),
        chief=RunDirectory(output.output_dir),
        export_dir=output.export_dir and worker_directory(strategy, output.export_dir),
    )
    for folder in (folders.run.path, folders.export_dir):
        if folder:
            check_writable(folder)
    return folders


def _flat(config):
    """{"section.key": value} of a config, the model section whole."""
    values = {}
    for section, fields in config.to_dict().items():
        if section == "version":
            continue
        if section == "model":
            values["model"] = fields
            continue
        for key, value in fields.items():
            values[f"{section}.{key}"] = value
    return values


def _differences(previous, config):
    old, new = _flat(previous), _flat(config)
    return {name: (old[name], new[name]) for name in new if old[name] != new[name]}


def settle_previous_run(run_dir, config, log):
    """Settles what an earlier run in `run_dir` means for `config`.

    With `overwrite`, the earlier run is deleted. A run of other data,
    vocabulary or model settings is a ValueError naming them. A finished run
    with the same training settings is not trained, scored or exported
    again: its saved results are returned. Otherwise (nothing there, or a
    run to resume) None.
    """
    if not run_dir.exists():
        return None
    if config.output.overwrite:
        log(f"Deleting the earlier run in {run_dir.path} (overwrite).")
        run_dir.clear()
        return None
    differences = _differences(run_dir.read_config(), config)
    differing = [
        f"{name}: {old!r} there, {new!r} now"
        for name, (old, new) in differences.items()
        if name in MUST_MATCH
    ]
    if differing:
        raise ValueError(
            f"{run_dir.path} holds a run of other data, vocabulary or model settings "
            f"({'; '.join(differing)}). Pass --overwrite to start over there, or "
            "another --output-dir."
        )
    if os.path.exists(run_dir.results) and not _training_changes(differences):
        results = run_dir.read_results()
        log(
            f"The run in {run_dir.path} is finished: test BLEU {results['bleu']:.2f}"
            f", chrF {results['chrf']:.2f}{_ter(results)}, export "
            f"{results['export_path']}. Nothing"
            " was trained again; pass --overwrite to start over, or "
            "`keras-transformer evaluate` to rescore."
        )
        return results
    return None


def changed_training_settings(run_dir, config):
    """The training settings of `config` that differ from the run in `run_dir`.

    Returns:
        ["section.key: old -> new", ...]; empty when nothing changed or no
        run is there.

    Example:

    >>> from keras_transformer.recipe.config import RunConfig
    >>> changed_training_settings(RunDirectory("no/such/run"), RunConfig())
    []
    """
    if not run_dir.exists():
        return []
    return _training_changes(_differences(run_dir.read_config(), config))


def _training_changes(differences):
    """["section.key: old -> new", ...] of `_differences` that training sees."""
    return [
        f"{name}: {old!r} -> {new!r}"
        for name, (old, new) in differences.items()
        if name.partition(".")[0] not in NOT_TRAINING
    ]


def _ter(results):
    """ ", TER x" of results that have it (runs before TER was scored do not)."""
    return f", TER {results['ter']:.2f}" if "ter" in results else ""
