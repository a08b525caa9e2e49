"""The weights of the best epoch so far, kept on disk, and early stopping."""

import json
import os

import keras

from keras_transformer.recipe.run_directory import atomic_path, write_json


class BestWeights(keras.callbacks.Callback):
    """Saves the weights of each epoch that lowers `monitor`, and stops
    training after `patience` epochs that do not.

    The best value and its epoch are written beside the weights (`record`,
    JSON), and read back when the callback is made again, so a resumed run
    goes on comparing with the epochs before the interruption and counts
    its patience from the best of them.

    Args:
        weights: the file of the best weights (ending `.weights.h5`).
        record: the JSON file of `{"epoch": E (from 1), monitor: value}`.
        monitor: the epoch log to lower, e.g. "val_loss".
        patience: epochs without a lower value before training stops; None
            never stops.

    Example:

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> best = BestWeights(f"{folder}/best.weights.h5", f"{folder}/best.json",
    ...                    patience=2)
    >>> best.best_epoch is None
    True
    """

    def __init__(self, weights, record, monitor="val_loss", patience=None):
        super().__init__()
        self.weights, self.record = weights, record
        self.monitor, self.patience = monitor, patience
        saved = read_record(record)
        self.best_epoch = saved["epoch"] if saved else None
        self.best = saved[monitor] if saved else float("inf")
        self.stopped_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            return
        if value < self.best:
            self.best, self.best_epoch = float(value), epoch + 1
            with atomic_path(self.weights) as partial:
                self.model.save_weights(partial)
            # A kill between these two renames leaves the new weights with
            # the previous record: a resumed run then keeps a better epoch
            # than its record says, and compares with the older value.
            write_json(self.record, {"epoch": self.best_epoch, self.monitor: self.best})
        elif self.patience and epoch + 1 - self.best_epoch >= self.patience:
            self.model.stop_training = True
            self.stopped_epoch = epoch + 1


def read_record(record):
    """The saved `{"epoch", monitor}` of a `BestWeights` record, or None."""
    if not os.path.exists(record):
        return None
    with open(record, encoding="utf-8") as file:
        return json.load(file)
