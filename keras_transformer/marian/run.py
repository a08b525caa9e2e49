"""`load_marian` and `import_marian`: a Marian folder -> our model, run folder."""

import os

from keras_transformer.marian import checkpoint, vocabulary

# generation_config.json's defaults where it sets none (transformers').
_GENERATION_DEFAULTS = {"num_beams": 1, "length_penalty": 1.0}
# The positions of a Marian model whose config.json sets no
# max_position_embeddings: an imported run's model.max_length then.
MAX_POSITIONS = 512


def load_marian(hf_dir):
    """The model, tokenizer and decoding defaults of a Marian folder.

    Args:
        hf_dir: a Hugging Face Marian checkpoint (config.json,
            model.safetensors or pytorch_model.bin, source.spm, target.spm,
            vocab.json, optional target_vocab.json and
            generation_config.json), e.g. a downloaded Helsinki-NLP/opus-mt-*.

    Returns:
        `(model, tokenizer, generation)`: a `Transformer` computing Marian's
        logits in our ids, a `MarianTokenizer`, and the generation settings
        {"num_beams": ..., "length_penalty": ...} (generation_config.json's,
        else config.json's, else transformers' defaults).

    Raises:
        FileNotFoundError: a file is missing (named).
        ValueError: a config value the layers cannot represent (named).
    """
    from keras_transformer.marian.tokenizer import MarianTokenizer
    from keras_transformer.models.transformer import build_transformer

    values = checkpoint.read_json(hf_dir, checkpoint.CONFIG)
    config = checkpoint.model_config(values)
    tokenizer = MarianTokenizer.from_folder(hf_dir)
    source_vocab = checkpoint.read_json(hf_dir, checkpoint.VOCAB)
    target_vocab = source_vocab
    if config.target_vocab_size is not None:
        target_vocab = checkpoint.read_json(hf_dir, checkpoint.TARGET_VOCAB)
    for vocab, size, name in (
        (source_vocab, config.vocab_size, checkpoint.VOCAB),
        (target_vocab, config.output_vocab_size, checkpoint.TARGET_VOCAB),
    ):
        if len(vocab) + 1 != size:
            raise ValueError(
                f"{name} has {len(vocab)} pieces, but config.json says {size - 1}."
            )
    checkpoint.check_ids(values, source_vocab, target_vocab)
    weights = checkpoint.read_weights(hf_dir)
    model = build_transformer(config)
    checkpoint.assign_weights(
        model,
        weights,
        vocabulary.marian_order(source_vocab),
        vocabulary.marian_order(target_vocab),
    )
    return model, tokenizer, _generation(hf_dir, values)


def _generation(hf_dir, values):
    path = os.path.join(hf_dir, checkpoint.GENERATION_CONFIG)
    generation = dict(_GENERATION_DEFAULTS)
    generation.update({k: values[k] for k in generation if k in values})
    if os.path.exists(path):
        saved = checkpoint.read_json(hf_dir, checkpoint.GENERATION_CONFIG)
        generation.update({k: saved[k] for k in generation if k in saved})
    return generation


def import_marian(hf_dir, output_dir):
    """Writes a run folder of the Marian checkpoint in `hf_dir`.

    The folder has what a finished `keras-transformer train` run has for
    the other commands (`export`, `translate`, `evaluate`, `attention`,
    `train --init-from`): job.json (the default recipe, with the model's
    architecture, config.json's `max_position_embeddings` (the most
    positions Marian's model has) as `model.max_length`, and the
    checkpoint's beam search: generation_config.json's `num_beams` and
    `length_penalty` as the beam size and alpha, scored as transformers
    scores it, `scoring="transformers"`), model_config.json,
    tokenizer.model (the Marian tokenizer's files, zipped) and model.keras.
    Everything is read and checked before anything is written.

    Returns:
        The `RunDirectory`.

    Raises:
        FileExistsError: `output_dir` holds a run already.
        FileNotFoundError, ValueError: see `load_marian`.
    """
    from keras_transformer.recipe.config import RunConfig
    from keras_transformer.recipe.fine_tuning import model_section
    from keras_transformer.recipe.model_section import ModelSection
    from keras_transformer.recipe.run_directory import RunDirectory

    run = RunDirectory(output_dir)
    if run.exists() or os.path.exists(run.model):
        raise FileExistsError(f"{output_dir} holds a run already.")
    model, tokenizer, generation = load_marian(hf_dir)
    positions = checkpoint.read_json(hf_dir, checkpoint.CONFIG).get(
        "max_position_embeddings", MAX_POSITIONS
    )
    config = RunConfig.from_dict(
        {
            "data": {"vocab_size": tokenizer.vocab_size},
            "model": model_section(
                model.config, ModelSection(), max_length=positions
            ).to_dict(),
            "evaluation": {
                "beam_size": generation["num_beams"],
                "alpha": generation["length_penalty"],
                "scoring": "transformers",
            },
            "output": {"output_dir": os.fspath(output_dir)},
        }
    )
    with run.lock():  # checks that the folder can be written
        run.save_tokenizer(tokenizer)
        run.write_model_config(model.config)
        run.write_config(config)
        run.save_model(model)
    return run
