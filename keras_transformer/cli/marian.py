"""`keras-transformer import-marian`: a Hugging Face Marian folder -> a run."""


def add_import_marian_parser(commands):
    parser = commands.add_parser(
        "import-marian",
        help="import a Hugging Face Marian (OPUS-MT) checkpoint as a run folder",
        description=(
            "Reads a downloaded Hugging Face Marian checkpoint (config.json, "
            "model.safetensors, source.spm, target.spm, vocab.json, "
            "generation_config.json) and writes a run folder that export, "
            "translate, evaluate, attention and train --init-from take."
        ),
    )
    parser.add_argument("hf_dir", metavar="HF_DIR", help="the checkpoint's folder")
    parser.add_argument(
        "--output-dir", required=True, metavar="RUN_DIR", help="the run folder to write"
    )
    parser.set_defaults(run=import_marian, written_folder=lambda args: args.output_dir)


def import_marian(args):
    from keras_transformer.marian.run import import_marian

    run = import_marian(args.hf_dir, args.output_dir)
    print(f"Imported {args.hf_dir} into {run.path}")
