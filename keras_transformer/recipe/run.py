"""`run(config)`: corpus -> tokenizer -> fit -> BLEU -> export, a step a line.

Everything a run writes goes to its `RunDirectory` (`config.output.output_dir`)
and the exported SavedModel to `export_dir/export_name/<version>/`.
"""

import contextlib
import math
import time

import keras

from keras_transformer.export import export_translator
from keras_transformer.models import Transformer
from keras_transformer.recipe import trainer
from keras_transformer.recipe.best_weights import read_record
from keras_transformer.recipe.data import (
    align_training_pairs,
    load_run_data,
    load_splits,
    pass_size,
    settle_vocabulary,
)
from keras_transformer.recipe.evaluation import score_test_split
from keras_transformer.recipe.fine_tuning import settle_init_from
from keras_transformer.recipe.plan import make_plan
from keras_transformer.recipe.resume import (
    changed_training_settings,
    settle_previous_run,
    worker_folders,
)
from keras_transformer.training import (
    global_dtype_policy,
    make_strategy,
    resolve_jit_compile,
    resolve_precision,
    strategy_devices,
)
from keras_transformer.training.checkpoints import average_checkpoints
from keras_transformer.training.saved_layout import load_weights


def run(config, log=print):
    """Trains, scores and exports; returns the results also in results.json.

    Under the "multi_worker" strategy every host runs the same `config`: the
    chief writes the run folder and the export, the other workers write
    their copies below `<folder>/workers/`, and all resume from the chief's
    checkpoints. A run folder of the same data and model resumes; a
    finished one returns its saved results.

    Raises:
        RunFolderInUse: another process writes to the run folder.
    """
    started = time.time()
    strategy = make_strategy(
        config.runtime.strategy,
        config.runtime.logical_cpus,
        single_device=config.training.gradient_accumulation > 1,
    )
    folders = worker_folders(config, strategy)
    # The chief is the run folder's one writer; the other workers write
    # their own folders below it.
    chief = folders.run.path == folders.chief.path
    with folders.run.lock() if chief else contextlib.nullcontext():
        return _run(config, strategy, folders, started, log)


def _run(config, strategy, folders, started, log):
    # One-line errors before the run folder is used, the cheap checks first:
    config, source = settle_init_from(config)  # a bad --init-from
    config = settle_vocabulary(config, folders.run)  # a bad --vocab
    corpus = load_splits(config.data, config.training.seed, log)  # bad data
    finished = settle_previous_run(folders.run, config, log)
    if finished is not None:
        return finished
    changed = changed_training_settings(folders.run, config)
    folders.run.write_config(config)
    corpus = align_training_pairs(config, corpus, folders.run, log)
    keras.utils.set_random_seed(config.training.seed)
    precision = resolve_precision(config.runtime.precision)
    with global_dtype_policy(precision):
        data = load_run_data(config, folders.run, corpus, log)
        plan = plan_run(config, data, strategy, precision, folders.run, source)
        trained = trainer.train(
            plan, config, data, folders, strategy, changed, log, source
        )
        last_epoch = math.ceil(trained.checkpoints.step / plan.steps_per_epoch)
        exported = average_and_save(trained, config, folders.run, log, last_epoch)
        scores, translations = score_test_split(trained.translator, data, config, log)
        export_path = export(trained.translator, config, folders.export_dir, log)
        log_samples(data.test, translations, config.evaluation.samples, log)
    test_sentences = scores.pop("sentences")
    results = {
        **scores,
        "test_sentences": test_sentences,
        "steps": trained.checkpoints.step,
        "epochs": plan.epochs,
        "epochs_trained": last_epoch,
        "exported_weights": exported,
        "updates": plan.updates,
        "fit_seconds": round(trained.fit_seconds, 1),
        "fit_cpu_seconds": round(trained.fit_cpu_seconds, 1),
        "precision": precision,
        "history": trained.history,  # this run's epochs (not those before a resume)
        "total_seconds": round(time.time() - started, 1),
        "export_path": export_path,
        "job": config.to_dict(),
        "model_config": plan.model.to_dict(),
    }
    folders.run.write_results(results)
    return results


def plan_run(config, data, strategy, precision, run_dir, source=None):
    """The `TrainingPlan` of `config` on `data` under `strategy`."""
    replicas = strategy.num_replicas_in_sync
    jit_compile = resolve_jit_compile(
        config.runtime.jit_compile, strategy_devices(strategy)
    )
    sizes = {
        "train": data.corpus.training_pairs,
        "validation": len(data.validation[0]),
        "test": len(data.test[0]),
    }
    batches, estimated = pass_size(data, config, replicas, run_dir)
    return make_plan(
        config,
        sizes,
        data.tokenizer.vocab_size,
        batches,
        replicas,
        precision,
        jit_compile,
        batches_estimated=estimated,
        source=source,
    )


def average_and_save(trained, config, run_dir, log, last_epoch):
    """Sets the run's final weights and saves them as its model.

    They are the average of the last `average_last` checkpoints if asked,
    else the best epoch's (`export_weights` "best": the lowest validation
    loss) or the last (of epoch `last_epoch`). Returns {"weights":
    "average", "best" or "last", "epoch": theirs, None for an average}.
    """
    saved = trained.checkpoints.manager.checkpoints
    last = config.evaluation.average_last
    best = read_record(run_dir.best)
    if last > 1 and len(saved) > 1:
        averaged = saved[-last:]
        average_checkpoints(trained.model, averaged)
        log(f"Averaged the last {len(averaged)} checkpoints.")
        chosen = {"weights": "average", "epoch": None}
    elif config.evaluation.export_weights == "best" and best:
        load_weights(trained.model, run_dir.best_weights)
        log(
            f"The weights of epoch {best['epoch']}, of the lowest validation loss "
            f"({best['val_loss']:.4f}), are the run's model."
        )
        chosen = {"weights": "best", "epoch": best["epoch"]}
    else:
        chosen = {"weights": "last", "epoch": last_epoch}
    run_dir.save_model(translation_model(trained.model))
    return chosen


def translation_model(model):
    """`model` as it translates: of a guided alignment run, the same weights
    in a model without the alignment output, whose output is the logits."""
    if not model.alignment_output:
        return model
    plain = Transformer(model.config, dtype=model.dtype_policy, name=model.name)
    plain.set_weights(model.get_weights())
    return plain


def export(translator, config, export_dir, log):
    """Exports the translator as a SavedModel; its path (None without one)."""
    if not export_dir:
        return None
    path = export_translator(
        translator,
        export_dir,
        config.output.export_name,
        dtype_policy=resolve_precision(config.output.export_precision),
    )
    log(f"Exported the translator to {path}")
    return path


def log_samples(test, translations, samples, log):
    """Logs the first `samples` test sources, references and translations."""
    sources, references = test
    for source, reference, translation in list(
        zip(sources, references, translations, strict=True)
    )[:samples]:
        log(
            f"  source:      {source}\n  reference:   {reference}\n"
            f"  translation: {translation}"
        )
