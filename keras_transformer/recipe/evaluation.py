"""Scoring a run: its test score, its averaged checkpoints, `evaluate`."""

import dataclasses

import tensorflow as tf

from keras_transformer.data import dataset_to_lists
from keras_transformer.data.tokenizer import load_tokenizer
from keras_transformer.decoding_defaults import decoding_settings
from keras_transformer.evaluation import corpus_scores, format_scores
from keras_transformer.export import Translator
from keras_transformer.export.streaming import signature_texts, translate_batches
from keras_transformer.models import build_transformer
from keras_transformer.recipe.data import load_splits
from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.training import global_dtype_policy, resolve_precision
from keras_transformer.training.checkpoints import average_checkpoints

DECODING_BATCH = 64  # sentences per call when a run decodes its own splits


def translate_all(signature, texts, description=None):
    """The translations of `texts` (a list of str) by a `Translator` signature."""
    batches = translate_batches(
        signature_texts(signature), texts, DECODING_BATCH, len(texts), description
    )
    return [translation for batch in batches for translation in batch]


def score(signature, sources, targets, target_language, description):
    """BLEU, chrF and TER (`corpus_scores`) of a `Translator` signature on the
    pairs, with `"sentences"` added; also the translations."""
    translations = translate_all(signature, sources, description)
    scores = corpus_scores(translations, targets, target_language)
    return {**scores, "sentences": len(sources)}, translations


def averaged_model(output_dir, last=None):
    """A run's model with the mean weights of its last `last` checkpoints.

    Reads the run folder (model config, checkpoints, and the run's config
    when there), so it works on an interrupted run too. The model computes
    in the run's precision (float32 when the run's config is missing and
    `last` is given). Only the checkpoints still on disk can be averaged: a
    run keeps `max(average_last, 2)` of them.

    Args:
        output_dir: the `output_dir` of a `keras-transformer train` run.
        last: average the last `last` checkpoints (1: the newest alone);
            None for the run's own `average_last`.

    Returns:
        (model, checkpoint paths averaged).
    """
    run = RunDirectory(output_dir)
    config = run.read_config() if run.exists() or last is None else None
    last = config.evaluation.average_last if last is None else last
    precision = resolve_precision(config.runtime.precision) if config else "float32"
    return checkpoints_model(run, last, precision)


def checkpoints_model(run, last, dtype_policy):
    """`averaged_model` of a `RunDirectory` with `last` and the policy known."""
    if last < 1:
        raise ValueError(f"last must be >= 1, got {last}.")
    model_config = run.read_model_config()
    with global_dtype_policy(dtype_policy):
        model = build_transformer(model_config)
    paths = run.checkpoint_paths()[-last:]
    return average_checkpoints(model, paths), paths


def evaluate_run(
    output_dir, split="validation", last=None, beam_size=None, alpha=None, sample=None
):
    """BLEU and chrF of a run's averaged checkpoints on a split of its corpus.

    Reads the run folder, so it also scores a run that is still training or
    was interrupted. By default it averages and decodes as the run did, so
    on `"test"` with the run's `test_sample` it repeats the run's own test
    score.

    Args:
        output_dir: the `output_dir` of a `keras-transformer train` run.
        split: `"validation"` or `"test"`.
        last: average the last `last` checkpoints (1: the newest alone);
            None for the run's `average_last`.
        beam_size: beams, 1 for greedy decoding; None for the run's.
        alpha: the length-penalty exponent of beam search; None for the
            run's.
        sample: score only the first `sample` sentences (all when None).

    Returns:
        `corpus_scores` of the translations (BLEU, chrF, TER, signatures) with
        `"sentences"`, `"sources_cut"` (the sources longer than the model's
        limit, scored cut to it) and `"checkpoints"` (the paths averaged).
    """
    if split not in ("validation", "test"):
        raise ValueError(f"split must be 'validation' or 'test', got {split!r}.")
    run = RunDirectory(output_dir)
    config = run.read_config()
    evaluation = config.evaluation
    beam_size, alpha = decoding_settings(
        beam_size, alpha, dataclasses.asdict(evaluation)
    )
    pairs = load_splits(config.data, config.training.seed).splits[split]
    sources, targets = dataset_to_lists(pairs.take(sample or -1))
    model, paths = checkpoints_model(
        run,
        evaluation.average_last if last is None else last,
        resolve_precision(config.runtime.precision),
    )
    translator = Translator(
        model,
        load_tokenizer(run.tokenizer),
        beam_size,
        alpha,
        scoring=evaluation.scoring,
        max_length=config.model.max_length,
    )
    scores, _ = score(
        translator.translate,
        sources,
        targets,
        config.data.target_language,
        f"Decoding {split}",
    )
    cut = long_sources(translator.tokenizer, sources, translator.max_length - 1)
    return {**scores, "sources_cut": cut, "checkpoints": paths}


def score_test_split(translator, data, config, log):
    """The run's test score, decoded as its export translates (beam search
    with the run's settings) and logged; (scores, translations)."""
    evaluation = config.evaluation
    sources, targets = data.test
    scores, translations = score(
        translator.translate,
        sources,
        targets,
        config.data.target_language,
        "Test decoding",
    )
    first, signatures = format_scores(scores).split("\n", 1)
    log(
        f"Test {first} (beam {evaluation.beam_size}, alpha {evaluation.alpha}, "
        f"{len(sources)} sentences)\n{signatures}"
    )
    limit = translator.max_length - 1
    cut = long_sources(translator.tokenizer, sources, limit)
    if cut:
        log(
            f"Warning: {cut} test sources are longer than the model's limit of "
            f"{limit} pieces and were scored cut to it (`keras-transformer "
            "translate` splits such lines)."
        )
    return scores, translations


def long_sources(tokenizer, texts, limit):
    """How many of `texts` have more than `limit` pieces."""
    if not texts:
        return 0
    lengths = tokenizer.tokenize(texts).row_lengths()  # (N,)
    return int(tf.reduce_sum(tf.cast(lengths > limit, tf.int32)))
