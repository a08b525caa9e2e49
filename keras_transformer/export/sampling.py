"""The `Translator`'s draws: the `sample` signature, and the draws of
`controlled_sample`, by keras-hub's top-k and top-p samplers.
"""

import keras_hub
import tensorflow as tf

from keras_transformer.export.specs import SAMPLING, TEXT, traced

MIN_TEMPERATURE = 1e-3


class TopKOrTopP(keras_hub.samplers.Sampler):
    """keras-hub's `TopKSampler` (`top_k`) where its `k` > 0, else its
    `TopPSampler` (`top_p`).

    One sampler for both settings, chosen at each step by a `tf.cond`: a
    signature traces one sampling loop, not one per sampler. Each draw is
    the chosen sampler's own (its seed state advances, the other's stays).
    The settings are attributes read when called: `top_k.k`, `top_p.p` and
    `temperature` may be tensors of the signature being traced.
    """

    def __init__(self):
        super().__init__()
        self.top_k = keras_hub.samplers.TopKSampler(k=1)
        self.top_p = keras_hub.samplers.TopPSampler(p=1.0)

    def get_next_token(self, probabilities):
        return tf.cond(
            self.top_k.k > 0,
            lambda: self.top_k.get_next_token(probabilities),
            lambda: self.top_p.get_next_token(probabilities),
        )  # (B,)


class Sampling:
    """The `sample` signature of a `Translator`, and `_sample`, which draws.

    A mixin: it uses the translator's `model`, `source_ids`, `_search` and
    `_texts`; the translator's `__init__` calls `_track_samplers`.
    """

    def _track_samplers(self):
        """Makes the sampler, its seed states tracked by the translator."""
        # keras-hub's samplers draw the tokens of `sample`; their seed states
        # are tracked (as tf.Variables) so that the SavedModel keeps them.
        self._sampler = TopKOrTopP()
        self.sampling_seeds = [
            sampler.seed_generator.state.value
            for sampler in (self._sampler.top_k, self._sampler.top_p)
        ]

    @traced(TEXT, *SAMPLING)
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
        vocab_size = self.model.config.output_vocab_size
        self._sampler.temperature = tf.maximum(temperature, MIN_TEMPERATURE)
        self._sampler.top_k.k = tf.minimum(top_k, vocab_size)
        self._sampler.top_p.p = tf.clip_by_value(top_p, 1e-6, 1.0)
        ids, scores = self._search(source_ids, 1, 0.0, sampler=self._sampler, **options)
        return ids[:, 0], scores[:, 0]  # (B, L), (B,)
