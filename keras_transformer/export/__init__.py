"""The text-in, text-out translator and its SavedModel export for TF Serving."""

from keras_transformer.export.saved_model import export_translator, next_version
from keras_transformer.export.translator import Translator

__all__ = ["Translator", "export_translator", "next_version"]
