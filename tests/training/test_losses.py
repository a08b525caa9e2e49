import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer import LabelSmoothedCrossEntropy
from keras_transformer.training import GuidedAlignmentLoss

RNG = np.random.default_rng(0)
LABELS = np.array([[4, 2, 7, 0, 0], [1, 3, 0, 0, 0]])
LOGITS = RNG.normal(size=(2, 5, 9)).astype("float32")


def hand_computed(labels, logits, epsilon):
    """Mean over real tokens of -sum_k q_k log p_k, q = (1-e) one-hot + e/V."""
    vocab = logits.shape[-1]
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total, count = 0.0, 0
    for b, t in zip(*np.nonzero(labels), strict=True):
        q = np.full(vocab, epsilon / vocab)
        q[labels[b, t]] += 1 - epsilon
        total += -(q * log_p[b, t]).sum()
        count += 1
    return total / count


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_equals_hand_computation(epsilon):
    loss = LabelSmoothedCrossEntropy(label_smoothing=epsilon)
    np.testing.assert_allclose(
        float(loss(LABELS, LOGITS)), hand_computed(LABELS, LOGITS, epsilon), rtol=1e-5
    )


def test_equals_keras_smoothed_crossentropy_over_real_tokens():
    mask = LABELS != 0
    one_hot = np.eye(9)[LABELS[mask]]
    reference = keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=0.1
    )(one_hot, LOGITS[mask])
    ours = LabelSmoothedCrossEntropy(0.1)(LABELS, LOGITS)
    np.testing.assert_allclose(float(ours), float(reference), rtol=1e-5)


@pytest.mark.tensorflow
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_gradient_equals_keras_smoothed_crossentropy(epsilon):
    # On TensorFlow our gradient is written by hand; Keras's comes from autodiff.
    mask = LABELS != 0
    one_hot = np.eye(9)[LABELS[mask]]
    reference = keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=epsilon
    )
    logits = tf.Variable(LOGITS)
    with tf.GradientTape(persistent=True) as tape:
        ours = LabelSmoothedCrossEntropy(epsilon)(LABELS, logits)
        theirs = reference(one_hot, tf.boolean_mask(logits, mask))
    np.testing.assert_allclose(
        tape.gradient(ours, logits), tape.gradient(theirs, logits), atol=1e-6
    )


@pytest.mark.parametrize("shape", [(10,), (2, 5), (2, 1, 5)])
def test_any_label_rank(shape):
    labels, logits = LABELS.reshape(shape), LOGITS.reshape(shape + (9,))
    np.testing.assert_allclose(
        float(LabelSmoothedCrossEntropy(0.1)(labels, logits)),
        hand_computed(LABELS, LOGITS, 0.1),
        rtol=1e-5,
    )


def test_padding_positions_are_ignored():
    loss = LabelSmoothedCrossEntropy()
    changed = LOGITS.copy()
    changed[LABELS == 0] = 1000.0
    assert float(loss(LABELS, changed)) == pytest.approx(float(loss(LABELS, LOGITS)))


def test_probabilities_input():
    probabilities = np.array(keras.ops.softmax(LOGITS))
    np.testing.assert_allclose(
        float(LabelSmoothedCrossEntropy(from_logits=False)(LABELS, probabilities)),
        float(LabelSmoothedCrossEntropy()(LABELS, LOGITS)),
        rtol=1e-4,
    )


def test_all_padding_gives_zero():
    assert float(LabelSmoothedCrossEntropy()(np.zeros((2, 3)), LOGITS[:, :3])) == 0.0


def test_serializes():
    loss = LabelSmoothedCrossEntropy(label_smoothing=0.2, name="smooth")
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert restored.get_config() == loss.get_config()
    assert float(restored(LABELS, LOGITS)) == float(loss(LABELS, LOGITS))


def test_bad_smoothing_raises():
    with pytest.raises(ValueError, match="label_smoothing"):
        LabelSmoothedCrossEntropy(label_smoothing=1.0)


@pytest.mark.parametrize("heads", [0, 2])
def test_guided_alignment_loss_is_the_cross_entropy_of_linked_rows(heads):
    """The first heads averaged; each linked row's links made a
    distribution, -sum p log q averaged over the linked rows; rows without
    links (padding) add nothing."""
    links = (RNG.random((2, 4, 5)) < 0.3).astype("float32")
    links[0, 1] = 0.0  # a row without links
    links[1, 2, 3] = 1.0
    every_head = keras.ops.convert_to_numpy(
        keras.ops.softmax(RNG.normal(size=(2, 3, 4, 5)).astype("float32"))
    )  # (B, h, T, S)
    attention = every_head[:, : heads or None].mean(axis=1)
    total, rows = 0.0, 0
    for b, t in np.ndindex(2, 4):
        if links[b, t].sum():
            target = links[b, t] / links[b, t].sum()
            total -= (target * np.log(attention[b, t])).sum()
            rows += 1
    loss = GuidedAlignmentLoss(heads)
    np.testing.assert_allclose(float(loss(links, every_head)), total / rows, rtol=1e-5)
    assert float(loss(np.zeros_like(links), every_head)) == 0.0
    restored = GuidedAlignmentLoss.from_config(loss.get_config())
    assert (restored.heads, restored.name) == (heads, "guided_alignment")
