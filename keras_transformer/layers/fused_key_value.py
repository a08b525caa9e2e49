"""The layout of `MultiHeadAttention`'s fused key/value projection.

Keys and values come from one `Dense`, `key_value`, whose kernel
(D_v, h * (key_dim + value_dim)) holds for each head its key columns then
its value columns. This module owns that layout: the Marian import, the
CTranslate2 export and the tests convert to and from separate key and
value weights through `split_key_value` and `fuse_key_value`.
"""

import numpy as np
from keras import ops


class FusedKeyValue:
    """`split_key_value` and `fuse_key_value` of `MultiHeadAttention`.

    A mixin: it uses the layer's `key_value_dense`, `num_heads`, `key_dim`,
    `value_dim` and `use_bias`.
    """

    def split_key_value(self):
        """The fused `key_value` projection as separate key and value weights.

        Returns:
            `((key_kernel, key_bias), (value_kernel, value_bias))`, NumPy
            arrays (D_v, h * key_dim), (h * key_dim,), (D_v, h * value_dim)
            and (h * value_dim,), the heads side by side as separate `Dense`
            layers (or PyTorch's transposed `k_proj`, `v_proj`) hold them;
            the biases are None without `use_bias`.

        Example:

        >>> from keras_transformer.layers import MultiHeadAttention
        >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> _ = layer(np.zeros((1, 3, 8)))
        >>> (key_kernel, _), (value_kernel, _) = layer.split_key_value()
        >>> key_kernel.shape, value_kernel.shape
        ((8, 8), (8, 8))
        """
        kernel = np.asarray(ops.convert_to_numpy(self.key_value_dense.kernel))
        width = kernel.shape[0]
        kernel = kernel.reshape(width, self.num_heads, -1)  # (D, h, K + V)
        keys = kernel[..., : self.key_dim].reshape(width, -1)  # (D, h * K)
        values = kernel[..., self.key_dim :].reshape(width, -1)  # (D, h * V)
        key_bias = value_bias = None
        if self.use_bias:
            bias = ops.convert_to_numpy(self.key_value_dense.bias)
            bias = np.asarray(bias).reshape(self.num_heads, -1)  # (h, K + V)
            key_bias = bias[:, : self.key_dim].ravel()  # (h * K,)
            value_bias = bias[:, self.key_dim :].ravel()  # (h * V,)
        return (keys, key_bias), (values, value_bias)

    def fuse_key_value(self, key_kernel, key_bias, value_kernel, value_bias):
        """Sets the fused `key_value` projection from separate weights.

        The inverse of `split_key_value`, whose shapes it takes (the
        biases None without `use_bias`).

        Example:

        >>> from keras_transformer.layers import MultiHeadAttention
        >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> _ = layer(np.zeros((1, 3, 8)))
        >>> keys, values = layer.split_key_value()
        >>> layer.fuse_key_value(*keys, *values)
        >>> bool(np.array_equal(layer.split_key_value()[0][0], keys[0]))
        True
        """
        width = np.shape(key_kernel)[0]
        kernel = np.concatenate(
            [
                np.reshape(key_kernel, (width, self.num_heads, self.key_dim)),
                np.reshape(value_kernel, (width, self.num_heads, self.value_dim)),
            ],
            axis=-1,
        )  # (D, h, K + V)
        self.key_value_dense.kernel.assign(kernel.reshape(width, -1))
        if self.use_bias:
            bias = np.concatenate(
                [
                    np.reshape(key_bias, (self.num_heads, self.key_dim)),
                    np.reshape(value_bias, (self.num_heads, self.value_dim)),
                ],
                axis=-1,
            )  # (h, K + V)
            self.key_value_dense.bias.assign(bias.ravel())
