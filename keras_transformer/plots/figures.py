"""Figures with matplotlib, an optional dependency, drawn without a display."""

import io
import os

FORMATS = (".png", ".svg")


def new_figure(width, height):
    """A matplotlib `Figure` of `width` x `height` inches, outside pyplot.

    Figures made this way need no display and no global backend: saving
    one picks the renderer from the file format.

    Raises:
        ImportError: matplotlib is not installed, saying how to add it.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "Drawing needs matplotlib, an optional dependency: "
            'pip install "keras-transformer[plots]" '
            '(in a checkout: pip install -e ".[plots]").'
        ) from error
    return Figure(figsize=(width, height), layout="constrained")


def check_image_path(path):
    """Raises ValueError unless `path` names a .png or .svg file."""
    if os.path.splitext(path)[1].lower() not in FORMATS:
        raise ValueError(f"Images are .png or .svg files, got {path!r}.")


def save_figure(figure, path, dpi=100):
    """Writes `figure` to `path`: PNG or SVG, as the file name says.

    Creates the folder if needed and returns `path`.
    """
    check_image_path(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path


def png_bytes(figure, dpi=100):
    """The PNG file of `figure`, as bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
