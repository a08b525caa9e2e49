"""Attention maps: padding removed, layers and heads selected, a grid drawn."""

import numpy as np
import pytest

from keras_transformer.plots import attention_figure, sentence_attention, text_alignment
from keras_transformer.plots.attention import select

RNG = np.random.default_rng(0)


def signature_outputs():
    """A batch of 2 as the `attention` signature gives it: 3 layers, 4 heads."""
    attention = RNG.random((2, 3, 4, 5, 6)).astype("float32")
    attention[0, :, :, 3:] = 0  # 3 target pieces
    attention[0, ..., 4:] = 0  # 4 source pieces
    attention /= np.maximum(attention.sum(axis=-1, keepdims=True), 1e-9)
    return {
        "cross_attention": attention,
        "source_pieces": np.array(
            [[b"\xe2\x96\x81Guten", b"\xe2\x96\x81Morgen", b"!", b"</s>", b"", b""]]
            + [[b"x"] * 6]
        ),
        "target_pieces": np.array(
            [[b"\xe2\x96\x81Good", b"\xe2\x96\x81morning", b"</s>", b"", b""]]
            + [[b"y"] * 5]
        ),
    }


def test_sentence_attention_drops_the_padding():
    outputs = signature_outputs()
    attention, source, target = sentence_attention(outputs, row=0)
    assert source == ["▁Guten", "▁Morgen", "!", "</s>"]
    assert target == ["▁Good", "▁morning", "</s>"]
    np.testing.assert_array_equal(
        attention, outputs["cross_attention"][0, :, :, :3, :4]
    )
    assert sentence_attention(outputs, row=1)[0].shape == (3, 4, 5, 6)


def test_select_keeps_one_layer_or_head_and_checks_the_range():
    attention = signature_outputs()["cross_attention"][1]  # (3, 4, 5, 6)
    assert select(attention).shape == (3, 4, 5, 6)
    np.testing.assert_array_equal(select(attention, layer=-1)[0], attention[2])
    np.testing.assert_array_equal(select(attention, head=1)[:, 0], attention[:, 1])
    np.testing.assert_array_equal(select(attention, 1, 3)[0, 0], attention[1, 3])
    with pytest.raises(ValueError, match="3 layers"):
        select(attention, layer=3)
    with pytest.raises(ValueError, match="4 heads"):
        select(attention, head=-5)


@pytest.mark.parametrize(
    "layer, head, maps, title",
    [
        (None, None, 12, "layer 2, head 3"),
        (-1, None, 4, "layer 2, head 3"),
        (None, 1, 3, "layer 2, head 1"),
        (0, 2, 1, "layer 0, head 2"),
    ],
)
def test_attention_figure_draws_one_map_per_layer_and_head(layer, head, maps, title):
    attention, source, target = sentence_attention(signature_outputs())
    figure = attention_figure(attention, source, target, layer=layer, head=head)
    images = [ax for ax in figure.axes if ax.images and ax.get_title()]
    assert len(images) == maps
    assert images[-1].get_title() == title
    np.testing.assert_array_equal(
        images[-1].images[0].get_array(),
        attention[layer if layer is not None else -1, head if head is not None else -1],
    )
    labels = [label.get_text() for label in images[-1].get_xticklabels()]
    assert labels == source


def test_attention_figure_refuses_a_layer_or_head_out_of_range():
    attention, source, target = sentence_attention(signature_outputs())
    with pytest.raises(ValueError, match="3 layers"):
        attention_figure(attention, source, target, layer=3)
    with pytest.raises(ValueError, match="4 heads"):
        attention_figure(attention, source, target, head=-5)


def test_text_alignment_names_the_most_attended_source_piece():
    attention = np.zeros((2, 2, 3, 4), "float32")
    attention[-1, :, [0, 1, 2], [1, 0, 3]] = 1.0  # the last layer's heads agree
    attention[0, :, :, 2] = 1.0  # the first layer attends elsewhere
    source = ["▁Guten", "▁Morgen", "!", "</s>"]
    target = ["▁Good", "▁morning", "</s>"]
    lines = text_alignment(attention, source, target)
    assert lines == [
        "▁Good     <-  ▁Morgen  1.00",
        "▁morning  <-  ▁Guten  1.00",
        "</s>      <-  </s>  1.00",
    ]
    first_layer = text_alignment(attention, source, target, layer=0)
    assert all(line.split("<-")[1].split()[0] == "!" for line in first_layer)
