"""The text-in, text-out translator, its SavedModel and CTranslate2 exports."""

import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)
from keras_transformer.export.ctranslate2_model import export_ctranslate2
from keras_transformer.export.ctranslate2_translator import CTranslate2Translator
from keras_transformer.export.saved_model import export_translator, next_version
from keras_transformer.export.translator import Translator

__all__ = [
    "CTranslate2Translator",
    "Translator",
    "export_ctranslate2",
    "export_translator",
    "next_version",
]
