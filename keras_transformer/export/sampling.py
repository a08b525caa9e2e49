"""The `Translator`'s draws: the `sample` signature, and the draws of
`controlled_sample`, by keras-hub's top-k and top-p samplers.
"""

import keras_hub
import tensorflow as tf

from keras_transformer.export.specs import SAMPLING, TEXT

MIN_TEMPERATURE = 1e-3


class Sampling:
    """The `sample` signature of a `Translator`, and `_sample`, which draws.

    A mixin: it uses the translator's `model`, `source_ids`, `_search` and
    `_texts`; the translator's `__init__` calls `_track_samplers`.
    """

    def _track_samplers(self):
        """Makes the samplers, tracked by the translator."""
        # keras-hub's samplers draw the tokens of `sample`; their seed states
        # are tracked (as tf.Variables) so that the SavedModel keeps them.
        self._samplers = {
            "k": keras_hub.samplers.TopKSampler(k=1),
            "p": keras_hub.samplers.TopPSampler(p=1.0),
        }
        self.sampling_seeds = [
            sampler.seed_generator.state.value for sampler in self._samplers.values()
        ]

    @tf.function(input_signature=[TEXT, *SAMPLING])
    def sample(self, text, top_k, top_p, temperature, seed):
        """One translation per text, each token drawn by a keras-hub sampler.

        `top_k` > 0 draws from the `top_k` likeliest tokens
        (`keras_hub.samplers.TopKSampler`); `top_k` <= 0 from the fewest
        likeliest tokens whose probability reaches `top_p`, clipped to
        (0, 1] (`TopPSampler`). The logits are divided by `temperature`
        (at least 0.001) first. The same `seed` and inputs give the same
        draws; the texts of a batch draw independently, so a text repeated
        in a batch gives several samples.

        Returns:
            {"translation": string (B,), "score": float32 (B,), the
            log-probability of the drawn tokens (at temperature 1)}.
        """
        source_ids = self.source_ids(text)  # (B, S)
        ids, scores = self._sample(source_ids, top_k, top_p, temperature, seed)
        return self._texts(source_ids, ids, scores)

    def _sample(self, source_ids, top_k, top_p, temperature, seed, **options):
        """`sample`'s draws, ids (B, L) and scores (B,); `options`: `decode`'s
        `controls` and `prefix`."""
        for state in self.sampling_seeds:
            state.assign(tf.stack([tf.cast(seed, tf.int64), tf.constant(0, tf.int64)]))
        temperature = tf.maximum(temperature, MIN_TEMPERATURE)
        vocab_size = self.model.config.output_vocab_size
        return tf.cond(
            top_k > 0,
            lambda: self._draw(
                source_ids, temperature, options, k=tf.minimum(top_k, vocab_size)
            ),
            lambda: self._draw(
                source_ids, temperature, options, p=tf.clip_by_value(top_p, 1e-6, 1.0)
            ),
        )

    def _draw(self, source_ids, temperature, options, **setting):
        """Tokens drawn by keras-hub's top-k (`k=`) or top-p (`p=`) sampler."""
        # The samplers read their settings from attributes when called:
        # setting them to this signature's inputs while it is traced makes
        # one traced sampler serve every value.
        ((kind, value),) = setting.items()
        sampler = self._samplers[kind]
        sampler.temperature = temperature
        setattr(sampler, kind, value)
        ids, scores = self._search(source_ids, 1, 0.0, sampler=sampler, **options)
        return ids[:, 0], scores[:, 0]  # (B, L), (B,)
