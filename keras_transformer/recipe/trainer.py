"""The trainer: the compiled model, its checkpoints, callbacks and `fit`.

Training resumes where it stopped: a run restores its newest readable
checkpoint (weights, optimizer slots and step counter, so the learning-rate
schedule too) and goes on from the next step.
"""

import dataclasses
import importlib.util
import math
import sys
import time
import warnings

import keras

from keras_transformer.evaluation import BleuCallback
from keras_transformer.export import Translator
from keras_transformer.export.streaming import signature_texts
from keras_transformer.models import build_transformer
from keras_transformer.plots import AttentionImages
from keras_transformer.recipe.best_weights import BestWeights
from keras_transformer.recipe.config import sample_size
from keras_transformer.training import (
    GuidedAlignmentLoss,
    LabelSmoothedCrossEntropy,
    MaskedAccuracy,
    fix_distributed_fit,
    transformer_optimizer,
)
from keras_transformer.training.checkpoints import (
    CheckpointCallback,
    TrainingCheckpoints,
    TrainingInterrupted,
)
from keras_transformer.training.duration import TimeEstimate
from keras_transformer.training.saved_layout import load_weights


def compiled_model(plan, config, run_dir, strategy):
    """The model of `plan`, compiled in `strategy`'s scope (XLA if the plan says).

    Writes the run's model config and schedule (for `average` and `plot`).
    """
    run_dir.write_model_config(plan.model)
    training = config.training
    guided = config.data.guided_alignment
    with strategy.scope():  # variables, optimizer slots and metrics mirrored
        model = fix_distributed_fit(
            build_transformer(plan.model, alignment_output=guided)
        )
        optimizer = transformer_optimizer(
            plan.model.d_model,
            plan.warmup_steps,
            plan.learning_rate_scale,
            gradient_accumulation_steps=plan.gradient_accumulation,
            cooldown_steps=plan.cooldown_steps,
            total_steps=plan.updates,
            weight_decay=training.weight_decay or None,
        )
        # Read from the optimizer built here: `compile` may wrap it in a
        # LossScaleOptimizer (mixed_float16), whose config has no schedule.
        run_dir.write_schedule(optimizer.get_config()["learning_rate"]["config"])
        loss = LabelSmoothedCrossEntropy(training.label_smoothing)
        metrics, weights = [MaskedAccuracy()], None
        if guided:  # the outputs {"logits", "alignment"}
            heads = plan.model.alignment_heads
            loss = {"logits": loss, "alignment": GuidedAlignmentLoss(heads)}
            weights = {"logits": 1.0, "alignment": training.alignment_weight}
            metrics = {"logits": metrics}
        model.compile(
            optimizer=optimizer,
            loss=loss,
            loss_weights=weights,
            metrics=metrics,
            jit_compile=plan.jit_compile,
        )
    return model


def restore_checkpoints(model, run_dir, chief_run_dir, config, strategy):
    """The run's `TrainingCheckpoints` and the step restored (0 if new).

    A worker other than the chief writes its own checkpoints but starts
    where the chief's are.
    """
    with strategy.scope():
        checkpoints = TrainingCheckpoints(
            model,
            run_dir.checkpoints,
            max_to_keep=max(config.evaluation.average_last, 2),
        )
        if run_dir.path == chief_run_dir.path:
            return checkpoints, checkpoints.restore()
        return checkpoints, TrainingCheckpoints(
            model, chief_run_dir.checkpoints
        ).restore()


def callbacks(checkpoints, translator, data, config, run_dir, steps_left, log):
    """The checkpoint saver and the logging callbacks of a run."""
    saver = CheckpointCallback(checkpoints, config.training.checkpoint_every)
    chosen = [saver, keras.callbacks.TerminateOnNaN()]
    bleu_sources, bleu_targets = data.validation
    bleu_sample = sample_size(config.evaluation.bleu_sample)
    if bleu_sample != 0:
        chosen.append(
            BleuCallback(
                signature_texts(translator.greedy),
                bleu_sources[:bleu_sample],
                bleu_targets[:bleu_sample],
                target_language=config.data.target_language,
            )
        )
    chosen += [
        BestWeights(
            run_dir.best_weights,
            run_dir.best,
            patience=config.training.early_stopping,
        ),
        keras.callbacks.CSVLogger(run_dir.history, append=True),
        keras.callbacks.TensorBoard(run_dir.logs),
        TimeEstimate(steps_left, log),
    ]
    if importlib.util.find_spec("matplotlib"):
        short = [text for text in bleu_sources if len(text) <= 60][:3]
        chosen.append(
            AttentionImages(translator.attention, short, run_dir.attention_logs)
        )
    else:
        log(
            "TensorBoard attention images need matplotlib, left out: "
            'pip install -e ".[plots]" adds it.'
        )
    return saver, chosen


def fit_from(model, stream_at, validation, step, plan, callbacks):
    """Trains from global `step` to the plan's last.

    Keras epochs always start at a step that is a multiple of
    `steps_per_epoch`; after a resume mid-epoch, a first `fit` finishes the
    interrupted epoch with the remaining steps. Each `fit` reads
    `stream_at(its first step)`: the training stream, or after a resume a
    new one of its own (`RunData.training_stream`), never the stream read
    again up to the step.

    Returns:
        {epoch number (from 1): {metric: value}}: the logs of the epochs
        this call trained (loss, accuracy, validation loss and BLEU).
    """
    steps_per_epoch = plan.steps_per_epoch
    epochs = math.ceil(plan.total_steps / steps_per_epoch)
    epoch, offset = divmod(step, steps_per_epoch)
    segments = []
    if offset:
        segments.append((epoch, epoch + 1, steps_per_epoch - offset))
        epoch += 1
    if epoch < epochs:
        segments.append((epoch, epochs, steps_per_epoch))
    history = {}
    for first_epoch, end_epoch, steps in segments:
        fitted = model.fit(
            stream_at(step),
            validation_data=validation,
            initial_epoch=first_epoch,
            epochs=end_epoch,
            steps_per_epoch=steps,
            callbacks=callbacks,
            shuffle=False,  # the stream is shuffled; Keras cannot shuffle it
            verbose=1 if sys.stdout.isatty() else 2,
        )
        for index, epoch in enumerate(fitted.epoch):  # a keras.callbacks.History
            # An epoch stopped by a signal during its validation lacks the
            # metrics after the stop (BLEU): the last epoch, since it ends
            # the training, so each other metric's values still line up.
            history[epoch + 1] = {
                name: round(float(values[index]), 4)
                for name, values in fitted.history.items()
                if index < len(values)
            }
        if model.stop_training:
            break
        step = end_epoch * steps_per_epoch
    return history


def check_stopped_well(saver, checkpoints):
    """Raises what a stopped `fit` means: an interruption or a diverged loss."""
    if saver.interrupted_by:
        raise TrainingInterrupted(
            f"Stopped by {saver.interrupted_by} at step {checkpoints.step}, saved in"
            f" {checkpoints.manager.latest_checkpoint}. Rerun the same command to"
            " resume."
        )
    if saver.loss_not_finite:
        raise FloatingPointError(
            f"Training stopped near step {checkpoints.step}: the loss is not finite."
            f" The last good checkpoint is {checkpoints.manager.latest_checkpoint};"
            " lower learning_rate_scale or raise warmup_steps, then rerun to"
            " resume from it."
        )


@dataclasses.dataclass
class Trained:
    """What `train` leaves: the model, its translator, checkpoints, history."""

    model: keras.Model
    translator: Translator
    checkpoints: TrainingCheckpoints
    history: dict
    fit_seconds: float
    fit_cpu_seconds: float  # all threads of the process


def train(plan, config, data, folders, strategy, changed, log, source=None):
    """Builds or restores the model of `plan` and trains it to the plan's end.

    Logs the plan's summary first (and `changed`, the training settings
    changed since the run started, when it resumes). A new fine-tuning run
    starts from the weights of its `source` (a `fine_tuning.Source`).

    Raises:
        TrainingInterrupted: stopped by a signal, after a checkpoint.
        FloatingPointError: the loss diverged.
    """
    model = compiled_model(plan, config, folders.run, strategy)
    checkpoints, step = restore_checkpoints(
        model, folders.run, folders.chief, config, strategy
    )
    log(plan.summary(model.count_params(), step))
    if source and not step:
        with warnings.catch_warnings():  # its optimizer's: this one starts afresh
            warnings.filterwarnings("ignore", "Skipping variable loading for optim")
            load_weights(model, source.model)
        log(f"Starting from the weights of {source.model}.")
    if step and changed:
        log(
            "Warning: resuming with training settings changed since the run"
            f" started ({', '.join(changed)}). Training goes on with the new"
            " ones; the learning-rate schedule follows the new epochs and steps."
        )
    evaluation = config.evaluation
    translator = Translator(
        model,
        data.tokenizer,
        evaluation.beam_size,
        evaluation.alpha,
        scoring=evaluation.scoring,
        max_length=config.model.max_length,
    )
    saver, chosen = callbacks(
        checkpoints, translator, data, config, folders.run, plan.total_steps - step, log
    )
    replicas = strategy.num_replicas_in_sync
    started, cpu_started = time.time(), time.process_time()
    history = fit_from(
        model,
        lambda step: data.training_stream(config, replicas, step),
        data.validation_batches(config, replicas),
        step,
        plan,
        chosen,
    )
    fit_seconds = time.time() - started
    fit_cpu_seconds = time.process_time() - cpu_started
    check_stopped_well(saver, checkpoints)
    return Trained(
        model, translator, checkpoints, history, fit_seconds, fit_cpu_seconds
    )
