"""Cross-attention maps: heatmaps per layer and head, and a text alignment."""

import numpy as np

from keras_transformer.plots.figures import new_figure


def sentence_attention(outputs, row=0):
    """One sentence of the export's `attention` signature, padding removed.

    Args:
        outputs: the signature's outputs (tensors or arrays): a batch of
            `cross_attention` (B, layers, heads, T, S), `source_pieces`
            and `target_pieces`.
        row: which sentence of the batch.

    Returns:
        `(attention, source_pieces, target_pieces)`: float (layers, heads,
        T, S) and two lists of str.
    """
    pieces = {}
    for key in ("source_pieces", "target_pieces"):
        values = np.asarray(outputs[key])[row]
        pieces[key] = [piece.decode("utf-8") for piece in values if piece]
    source, target = pieces["source_pieces"], pieces["target_pieces"]
    attention = np.asarray(outputs["cross_attention"])[row]
    return attention[:, :, : len(target), : len(source)], source, target


def select(attention, layer=None, head=None):
    """The maps to draw: (layers, heads, T, S) -> (rows, columns, T, S).

    `layer` and `head` are indices (0 is the first, -1 the last); None
    keeps them all.
    """
    layers, heads = attention.shape[:2]
    for name, index, count in (("layer", layer, layers), ("head", head, heads)):
        if index is not None and not -count <= index < count:
            raise ValueError(f"The model has {count} {name}s (0 to {count - 1}).")
    if layer is not None:
        attention = attention[layer : layer + 1 or None]
    if head is not None:
        attention = attention[:, head : head + 1 or None]
    return attention


def attention_figure(attention, source_pieces, target_pieces, layer=None, head=None):
    """A grid of cross-attention heatmaps, one per decoder layer and head.

    Rows are layers and columns heads (or only the `layer` and `head`
    selected); each map has a row per target piece and a column per source
    piece, from 0 (dark) to 1 (bright), labelled with the pieces.

    Args:
        attention: (layers, heads, T, S) for one sentence
            (`sentence_attention`).
        source_pieces: a list of S str.
        target_pieces: a list of T str.
        layer: an optional index, to draw one layer.
        head: an optional index, to draw one head.

    Returns:
        A matplotlib `Figure`.
    """
    maps = select(attention, layer, head)  # checks the indices
    layers = range(attention.shape[0])[layer] if layer is not None else None
    heads = range(attention.shape[1])[head] if head is not None else None
    rows, columns, length, source_length = maps.shape
    cell_width = 0.6 + 0.22 * max(source_length, 4)
    cell_height = 0.6 + 0.22 * max(length, 4)
    figure = new_figure(
        0.8 + cell_width * columns + 0.6, 0.4 + cell_height * rows + 0.6
    )
    axes = figure.subplots(rows, columns, squeeze=False, sharex=True, sharey=True)
    for r in range(rows):
        for c in range(columns):
            ax = axes[r, c]
            image = ax.imshow(maps[r, c], vmin=0.0, vmax=1.0, cmap="viridis")
            layer_name = layers if layers is not None else r
            head_name = heads if heads is not None else c
            ax.set_title(f"layer {layer_name}, head {head_name}", fontsize=9)
            ax.set_xticks(range(source_length), source_pieces, rotation=90, fontsize=8)
            ax.set_yticks(range(length), target_pieces, fontsize=8)
            ax.tick_params(labelbottom=r == rows - 1, labelleft=c == 0)
    figure.colorbar(image, ax=axes, shrink=0.6, label="attention")
    return figure


def text_alignment(attention, source_pieces, target_pieces, layer=None, head=None):
    """Each target piece with the source piece it attends to most.

    Uses the selected layer (the last one by default) and head (the mean
    over heads by default).

    Returns:
        A list of lines, e.g. `"▁morning  <-  ▁Morgen  0.81"`.
    """
    maps = select(attention, -1 if layer is None else layer, head)[0]
    alignment = maps.mean(axis=0)  # (T, S)
    width = max(len(piece) for piece in target_pieces) if target_pieces else 0
    lines = []
    for piece, weights in zip(target_pieces, alignment, strict=True):
        best = int(np.argmax(weights))
        lines.append(
            f"{piece:<{width}}  <-  {source_pieces[best]}  {weights[best]:.2f}"
        )
    return lines
