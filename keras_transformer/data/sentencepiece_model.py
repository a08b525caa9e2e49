"""tensorflow-text's SentencePiece tokenizer with a model that seeding keeps."""

import hashlib

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops import sentencepiece_tokenizer as tf_text_sentencepiece


def sentencepiece_tokenizer(model, **options):
    """tensorflow-text's `SentencepieceTokenizer` of the serialized `model`
    (bytes), whose model survives `tf.random.set_seed`.

    tensorflow-text keeps the model in a resource private to its op's
    kernel, which `tf.random.set_seed` (and `keras.utils.set_random_seed`)
    deletes with the eager kernel cache: a tokenizer made before a seed then
    fails with "Resource ... does not exist". Named after a hash of the
    model, the resource lives in the device's resource manager instead, in
    process and in a loaded SavedModel; tokenizers of one model share it.
    `options` are `SentencepieceTokenizer`'s other arguments.

    This replaces the tokenizer's private `_model_resource` (tensorflow-text
    has no argument for it; its own TODO b/318839908 plans a ref-counted
    resource), after the constructor made the kernel-private one.
    """
    tokenizer = tf_text.SentencepieceTokenizer(model=model, **options)
    tokenizer._model_resource = _NamedSentencepieceModel(model)
    return tokenizer


class _NamedSentencepieceModel(tf_text_sentencepiece._SentencepieceModelResource):
    """tensorflow-text's model resource, created with a `shared_name`."""

    def __init__(self, model):
        self._shared_name = f"sentencepiece_{hashlib.sha256(model).hexdigest()}"
        super().__init__(model, name=None)

    def _create_resource(self):
        with tf.name_scope("SentenceTokenizerInitializer"):
            return tf_text_sentencepiece.gen_sentencepiece_tokenizer.sentencepiece_op(
                model=self._model, shared_name=self._shared_name
            )
