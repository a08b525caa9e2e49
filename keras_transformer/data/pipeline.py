"""The tf.data pipeline from sentence pairs to `model.fit` batches."""

import functools
import math

import tensorflow as tf

from keras_transformer.alignment.links import piece_roles
from keras_transformer.data.alignment_targets import alignment_targets
from keras_transformer.data.checks import check_fraction
from keras_transformer.special_ids import END_ID, PAD_ID, START_ID

# Extra pairs `mix_pairs` shuffles together: all of Ding's 80,401 phrases,
# a bounded window of a larger split.
EXTRA_SHUFFLE_BUFFER = 100_000


def truncate_with_end_id(pieces, max_length):
    """The first `max_length - 1` piece ids, then the end id.

    The one truncation rule of encoder inputs and labels, in training
    (`model_example`) and in the exported translator alike.

    Args:
        pieces: int32 piece ids without start/end, one sequence (L,) or a
            ragged batch (B, None).
        max_length: the most ids in a result.

    Returns:
        The ids, of the kind of `pieces`: (<= max_length,) or ragged
        (B, None).

    Example:

    >>> truncate_with_end_id(tf.constant([7, 8, 9]), max_length=3).numpy()
    array([7, 8, 2], dtype=int32)
    >>> truncate_with_end_id(tf.ragged.constant([[7, 8, 9], []]), max_length=3)
    <tf.RaggedTensor [[7, 8, 2], [2]]>
    """
    if isinstance(pieces, tf.RaggedTensor):
        end = tf.fill([pieces.nrows(), 1], END_ID)  # (B, 1)
    else:
        end = tf.constant([END_ID])  # (1,)
    return tf.concat([pieces[..., : max_length - 1], end], axis=-1)


def has_pieces(ids):
    """Whether each row of `truncate_with_end_id` ids, padded (B, S), has a
    piece besides its end id -> bool (B,)."""
    return tf.reduce_sum(tf.cast(ids != PAD_ID, tf.int32), axis=1) > 1


def model_example(source_ids, target_ids, max_length):
    """One tokenized pair -> `({"encoder_inputs", "decoder_inputs"}, labels)`.

    The encoder input is the source pieces then the end id; the target
    sequence is the start id, the target pieces, the end id. Over-long
    sequences lose their last pieces (the end id is kept, see
    `truncate_with_end_id`), so the encoder input and the decoder input
    hold at most `max_length` ids. Labels are the decoder inputs shifted
    left by one.

    Args:
        source_ids: int32 (L,) source piece ids without start/end.
        target_ids: int32 (L,) target piece ids without start/end.
        max_length: the most ids in the encoder input and the decoder input.

    Example:

    >>> inputs, labels = model_example(
    ...     tf.constant([7, 8, 9]), tf.constant([5, 6]), max_length=3)
    >>> inputs["encoder_inputs"].numpy(), inputs["decoder_inputs"].numpy()
    (array([7, 8, 2], dtype=int32), array([1, 5, 6], dtype=int32))
    >>> labels.numpy()
    array([5, 6, 2], dtype=int32)
    """
    encoder_inputs = truncate_with_end_id(source_ids, max_length)
    target = tf.concat(
        [[START_ID], truncate_with_end_id(target_ids, max_length)], axis=0
    )
    inputs = {"encoder_inputs": encoder_inputs, "decoder_inputs": target[:-1]}
    return inputs, target[1:]


def mix_pairs(pairs, extra_pairs, extra_fraction, seed=None):
    """One pass over `pairs` with a share of `extra_pairs` drawn in at random.

    Each element comes from `extra_pairs` with probability `extra_fraction`
    and from `pairs` otherwise, until `pairs` runs out: about
    `len(pairs) / (1 - extra_fraction)` elements, every one of `pairs` once.
    The extra pairs are reshuffled (and repeated, if they run out) on every
    pass, so each pass draws a different sample of them. Use it to add a
    large, lower-quality corpus (such as Ding's dictionary phrases) without
    letting it crowd out the main one.

    Args:
        pairs: a finite `tf.data.Dataset` of (source, target) strings.
        extra_pairs: a finite dataset of the same structure.
        extra_fraction: the expected share of extra pairs, in (0, 1).
        seed: seed of the extra pairs' order and of the draws.

    Returns:
        A finite `tf.data.Dataset` of (source, target) strings.

    Example:

    >>> from keras_transformer.data import pairs_to_dataset
    >>> main = pairs_to_dataset([("Ja.", "Yes.")] * 90)
    >>> extra = pairs_to_dataset([("nein", "no")] * 500)
    >>> mixed = list(mix_pairs(main, extra, 0.25, seed=0).as_numpy_iterator())
    >>> sum(source == b"Ja." for source, _ in mixed), 20 < len(mixed) - 90 < 45
    (90, True)
    """
    check_fraction("extra_fraction", extra_fraction)
    size = int(extra_pairs.cardinality())
    buffer = min(size, EXTRA_SHUFFLE_BUFFER) if size > 0 else EXTRA_SHUFFLE_BUFFER
    extra_pairs = extra_pairs.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    return tf.data.Dataset.sample_from_datasets(
        [pairs, extra_pairs.repeat()],
        weights=[1.0 - extra_fraction, extra_fraction],
        seed=seed,
        stop_on_empty_dataset=True,
    )


def make_dataset(
    pairs,
    tokenizer,
    max_length=64,
    tokens_per_batch=4096,
    shuffle_buffer=20000,
    seed=None,
    repeat=False,
    drop_long=False,
    batch_multiple=1,
    sampling_alpha=None,
):
    """Batches of `({"encoder_inputs", "decoder_inputs"}, labels)` for `fit`.

    Pairs are tokenized, truncated to `max_length` ids (see `model_example`)
    or, with `drop_long=True`, dropped when longer; shuffled; bucketed by
    length and batched by a token budget as in the paper (section 5.1:
    batches of about 25k source and 25k target tokens). A bucket holding
    sequences of up to `L` ids gets batches of `tokens_per_batch // L`
    pairs, so no batch holds more than `tokens_per_batch` encoder ids, nor
    more than that many decoder ids, padding included.

    Under a `tf.distribute` strategy each batch is one global batch: `fit`
    splits it across all replicas, of all workers, so `tokens_per_batch` is
    the global budget and each of R replicas gets about
    `tokens_per_batch / R` tokens. Pass `batch_multiple=R`
    (`strategy.num_replicas_in_sync`) so batches divide evenly (without
    `repeat`, the last batch of each bucket holds what is left and may not).

    The dataset's auto-shard policy is `DATA`, chosen for multi-worker
    training: every worker reads, tokenizes and buckets the whole stream
    (so give every worker the same `seed`) and keeps only its replicas'
    share of each global batch. The batches, their order and the token
    budget are then those of a single-device run, whatever the number of
    workers (tested). The other policies do worse here: `OFF` trains every
    worker on the same batches; `FILE` needs as many input files as
    workers, and it, like sharding pairs before batching, makes each worker
    fill its own `tokens_per_batch` batches, multiplying the global batch
    by the number of workers. The cost is input work repeated on every
    worker, small next to the model's.

    Given `(source, target, alignment)` triples, each with its Pharaoh
    word alignment ("" for none), the batches are `aligned_example`s, for
    guided alignment training.

    Args:
        pairs: a `tf.data.Dataset` of (source, target) scalar strings, or of
            (source, target, alignment).
        tokenizer: a `SubwordTokenizer` or `MarianTokenizer` (what is used:
            `tokenize` for sources, `tokenize_target` for targets).
        max_length: the most ids in an encoder input and a decoder input.
        tokens_per_batch: the token budget of one batch.
        shuffle_buffer: pairs shuffled together (0 for no shuffling).
        seed: shuffling seed, for a reproducible order.
        repeat: repeat forever (for training with `steps_per_epoch`).
        drop_long: drop pairs longer than `max_length` instead of truncating.
        batch_multiple: round every bucket's batch size down to a multiple
            of this (at least `batch_multiple` pairs, which can exceed a
            budget that holds fewer of the longest pairs); the number of
            replicas under a strategy.
        sampling_alpha: tokenize with sampled segmentations
            (`tokenizer.sampling(sampling_alpha)`, subword regularisation),
            a new sample on every pass; None for the most likely one.

    Returns:
        A `tf.data.Dataset` of padded int32 batches.
    """
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2, got {max_length}.")
    if batch_multiple < 1:
        raise ValueError(f"batch_multiple must be >= 1, got {batch_multiple}.")
    if tokens_per_batch < max_length:
        raise ValueError(
            f"tokens_per_batch={tokens_per_batch} must be >= max_length={max_length}."
        )
    if shuffle_buffer:
        pairs = pairs.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        pairs = pairs.repeat()
    examples = _examples(pairs, tokenizer, max_length, drop_long, sampling_alpha)
    bounds, batch_sizes = bucket_sizes(max_length, tokens_per_batch, batch_multiple)
    batches = examples.bucket_by_sequence_length(
        element_length_func=_example_length,
        bucket_boundaries=bounds,
        bucket_batch_sizes=batch_sizes,
    )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA
    )
    return batches.prefetch(tf.data.AUTOTUNE).with_options(options)


def _examples(pairs, tokenizer, max_length, drop_long=False, sampling_alpha=None):
    """The `model_example`s of `pairs`, tokenized 256 pairs at a time; of
    triples, `aligned_example`s."""
    example = functools.partial(model_example, max_length=max_length)
    if len(pairs.element_spec) == 3:
        roles = [tf.constant(piece_roles(pieces)) for pieces in tokenizer.pieces()]
        example = functools.partial(aligned_example, max_length=max_length, roles=roles)
    if sampling_alpha is not None:
        tokenizer = tokenizer.sampling(sampling_alpha)
    tokenized = pairs.batch(256).map(
        lambda source, target, *alignment: (
            tokenizer.tokenize(source),
            tokenizer.tokenize_target(target),
            *alignment,
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    tokenized = tokenized.unbatch()  # (source_ids (L,), target_ids (L,)[, line])
    if drop_long:
        tokenized = tokenized.filter(
            lambda source, target, *alignment: (
                tf.maximum(tf.size(source), tf.size(target)) + 1 <= max_length
            )
        )
    return tokenized.map(example, num_parallel_calls=tf.data.AUTOTUNE)


def aligned_example(source_ids, target_ids, alignment, max_length, roles):
    """`model_example` with the pair's word alignment as a training target.

    Args:
        source_ids, target_ids, max_length: as for `model_example`.
        alignment: the pair's Pharaoh line (scalar string; "" for none).
        roles: the source's and the target's `alignment.piece_roles`.

    Returns:
        `(inputs, {"logits": labels, "alignment": (T, S) float32})`, the
        targets of `Transformer(alignment_output=True)`'s outputs (see
        `data.alignment_targets.alignment_targets`).
    """
    inputs, labels = model_example(source_ids, target_ids, max_length)
    links = alignment_targets(alignment, inputs["encoder_inputs"], labels, *roles)
    return inputs, {"logits": labels, "alignment": links}


def bucket_sizes(max_length, tokens_per_batch, batch_multiple=1):
    """`(bounds, batch_sizes)` of `make_dataset`'s length buckets.

    A bucket holds examples shorter than its (exclusive) bound, the last one
    those up to `max_length`; `batch_sizes` has one size more than `bounds`.

    Example:

    >>> bucket_sizes(32, 1024)
    ([9, 17, 25], [128, 64, 42, 32])
    """
    limits = _bucket_limits(max_length)
    sizes = [tokens_per_batch // limit for limit in limits + [max_length]]
    sizes = [max(size // batch_multiple, 1) * batch_multiple for size in sizes]
    return [limit + 1 for limit in limits], sizes


def batches_in_pass(
    pairs,
    tokenizer,
    scale=1.0,
    max_length=64,
    tokens_per_batch=4096,
    batch_multiple=1,
    sampling_alpha=None,
):
    """The batches `make_dataset` makes of one pass over `pairs` times `scale`.

    Counts the examples of each length bucket and divides by the bucket's
    batch size, rounding up as the last batch of a bucket does: with
    `scale=1` it is the number of batches `make_dataset(pairs, ...)` gives
    (tested), and for a sample of a corpus, `scale` = corpus / sample
    estimates the corpus's without tokenizing all of it.

    Args:
        pairs: a finite dataset of (source, target) strings.
        tokenizer: a `SubwordTokenizer`.
        scale: how many times larger the corpus is than `pairs`.
        max_length, tokens_per_batch, batch_multiple, sampling_alpha: as
            for `make_dataset`.
    """
    bounds, batch_sizes = bucket_sizes(max_length, tokens_per_batch, batch_multiple)
    examples = _examples(pairs, tokenizer, max_length, sampling_alpha=sampling_alpha)
    lengths = examples.map(_example_length).batch(4096)
    buckets = lengths.map(
        lambda length: tf.math.bincount(
            tf.searchsorted(tf.constant(bounds, length.dtype), length, side="right"),
            minlength=len(batch_sizes),
            maxlength=len(batch_sizes),
        )
    )
    counts = buckets.reduce(tf.zeros([len(batch_sizes)], tf.int32), tf.add).numpy()
    return sum(
        math.ceil(count * scale / size)
        for count, size in zip(counts, batch_sizes, strict=True)
    )


def _example_length(inputs, labels):
    return tf.maximum(
        tf.size(inputs["encoder_inputs"]), tf.size(inputs["decoder_inputs"])
    )


def _bucket_limits(max_length):
    """Bucket length limits below max_length: 8, 16, ..., 64, then steps of 16."""
    limits, limit = [], 8
    while limit < max_length:
        limits.append(limit)
        limit += 8 if limit < 64 else 16
    return limits
