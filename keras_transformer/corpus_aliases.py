"""Names of the built-in corpora, readable without TensorFlow.

The run config resolves its data section (and from it the run folder's
name) before TensorFlow starts; the loaders in `keras_transformer.data`
read the same names.
"""

# The offline German-English corpus (Debian's Ding dictionary, `trans-de-en`).
DING_ALIASES = ("ding", "ding_de_en", "ding/de-en")
