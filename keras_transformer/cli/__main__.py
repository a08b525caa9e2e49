"""`python -m keras_transformer.cli`, the same as `keras-transformer`."""

from keras_transformer.cli import main

main()
