"""Train a small Transformer to reverse sequences, with the paper's recipe.

Uses only the public API: a `TransformerConfig`, `build_transformer`, the
warm-up schedule with Adam, the label-smoothed loss and `model.fit` on a
`tf.data.Dataset`. Prints held-out token accuracy and saves the model as a
`.keras` file.

    python examples/train_reverse.py --epochs 6
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

import keras_transformer as kt

PAD, START, END = 0, 1, 2


def reversal_examples(count, vocab_size, max_length, seed):
    """Sources of 2..max_length random tokens; targets are them reversed."""
    rng = np.random.default_rng(seed)
    sources = np.zeros((count, max_length), "int32")
    decoder_inputs = np.zeros((count, max_length + 1), "int32")
    labels = np.zeros((count, max_length + 1), "int32")
    for row, length in enumerate(rng.integers(2, max_length + 1, count)):
        tokens = rng.integers(END + 1, vocab_size, length)
        sources[row, :length] = tokens
        decoder_inputs[row, : length + 1] = [START, *tokens[::-1]]
        labels[row, : length + 1] = [*tokens[::-1], END]  # inputs shifted left
    inputs = {"encoder_inputs": sources, "decoder_inputs": decoder_inputs}
    return tf.data.Dataset.from_tensor_slices((inputs, labels))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--examples", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output", default="saved_models/reverse.keras")
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    vocab_size, max_length = 16, 10
    train = reversal_examples(args.examples, vocab_size, max_length, seed=0)
    held_out = reversal_examples(1000, vocab_size, max_length, seed=1)

    config = kt.TransformerConfig.tiny(
        vocab_size, d_model=64, d_ff=128, dropout=0.0, warmup_steps=200
    )
    model = kt.build_transformer(config)
    model.compile(
        optimizer=kt.transformer_optimizer(config.d_model, config.warmup_steps, 2.0),
        loss=kt.LabelSmoothedCrossEntropy(config.label_smoothing),
        metrics=[kt.MaskedAccuracy()],
    )
    model.fit(
        train.shuffle(args.examples, seed=0).batch(args.batch_size),
        validation_data=held_out.batch(256),
        epochs=args.epochs,
        verbose=2,
    )
    _, accuracy = model.evaluate(held_out.batch(256), verbose=0)
    print(f"held-out token accuracy: {accuracy:.4f}")
    model.save(args.output)
    print(f"saved {args.output}")


if __name__ == "__main__":
    main()
