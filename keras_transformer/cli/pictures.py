"""`attention` and `plot`: pictures of an export and of a run."""

import os

from keras_transformer.recipe.run_directory import PLOTS


def add_attention_parser(commands):
    parser = commands.add_parser(
        "attention",
        help="draw the cross-attention of an export's translation",
        description="Translates TEXT with an export's `attention` signature, "
        "prints each target piece with the source piece it attends to most "
        "(the last layer's heads averaged, or the --layer and --head chosen), "
        "and draws the maps of every decoder layer and head. Needs matplotlib "
        '(pip install -e ".[plots]").',
    )
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument("text", help="the sentence to translate")
    parser.add_argument(
        "-o", "--output", default="attention.png", help="a .png or .svg file"
    )
    for name in ("layer", "head"):
        parser.add_argument(
            f"--{name}",
            type=int,
            help=f"draw one {name} only (0 is the first, -1 the last)",
        )
    parser.set_defaults(run=attention)


def attention(args):
    import tensorflow as tf

    from keras_transformer.export.engines import load_export
    from keras_transformer.plots import (
        attention_figure,
        save_figure,
        sentence_attention,
        text_alignment,
    )
    from keras_transformer.plots.figures import check_image_path, new_figure

    check_image_path(args.output)
    new_figure(1, 1)  # matplotlib is there, before the export loads
    export = load_export(args.saved_model)
    if "attention" not in export.signatures:
        raise ValueError(
            f"{args.saved_model} has no `attention` signature; export the run"
            " again with this version (keras-transformer average --export-dir)."
        )
    outputs = export.signatures["attention"](text=tf.constant([args.text]))
    attention, source, target = sentence_attention(outputs)
    if not target:
        raise ValueError(f"{args.text!r} has no pieces to translate.")
    selection = dict(layer=args.layer, head=args.head)
    figure = attention_figure(attention, source, target, **selection)
    print(outputs["translation"][0].numpy().decode("utf-8"))
    print("\n".join(text_alignment(attention, source, target, **selection)))
    print(f"Wrote {save_figure(figure, args.output)}")


def add_plot_parser(commands):
    parser = commands.add_parser(
        "plot",
        help="draw a training run's position encoding, schedule and curves",
        description="Draws the pictures of a `train` run: the position "
        f"encoding of its d_model ({PLOTS['pe']}), its learning-rate "
        f"schedule ({PLOTS['schedule']}) and its training curves "
        f"({PLOTS['curves']}). Needs matplotlib "
        '(pip install -e ".[plots]").',
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument(
        "-o", "--output", help="the folder to draw in (default: OUTPUT_DIR/plots)"
    )
    parser.add_argument(
        "--what", choices=tuple(PLOTS), action="append", help="one kind (default: all)"
    )
    parser.add_argument("--format", default="png", choices=("png", "svg"))
    parser.set_defaults(run=plot)


def plot(args):
    from keras_transformer.plots import plot_run

    if not os.path.isdir(args.output_dir):
        raise FileNotFoundError(f"No run at {args.output_dir}.")
    kinds = args.what or tuple(PLOTS)
    for path in plot_run(args.output_dir, args.output, kinds, args.format):
        print(f"Wrote {path}")
