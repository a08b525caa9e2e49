"""What the training-speed benchmarks share, on any Keras backend.

`train_speed.py` (TensorFlow) and `train_speed_jax.py` (JAX, no TensorFlow)
count a step's FLOPs, time `fit`'s batches and compute MFU the same way.
"""

import time

import common
import keras

FLOPS_FORMULA = (
    "6 * forward multiply-adds, counting only matmuls: "
    "B*S*N_enc*(4*d^2 + 2*d*d_ff + 2*S*d) "
    "+ B*T*N_dec*(6*d^2 + 2*d*d_ff + 2*T*d + 2*S*d) "
    "+ B*S*N_dec*2*d^2 + B*T*d*V per step "
    "(projections, feed-forward, Q.K and P.V with the causal half counted, "
    "cross-attention keys/values, output projection; "
    "backward = 2 * forward)"
)


def matmul_flops_per_step(config):
    """Matmul FLOPs of one training step (see FLOPS_FORMULA)."""
    d, d_ff, vocab = config["d_model"], config["d_ff"], config["vocab_size"]
    batch, length = config["batch_size"], config["length"]
    enc, dec = config["num_encoder_layers"], config["num_decoder_layers"]
    source = target = length
    forward = (
        batch * source * enc * (4 * d * d + 2 * d * d_ff + 2 * source * d)
        + batch * target * dec * (6 * d * d + 2 * d * d_ff + 2 * (target + source) * d)
        + batch * source * dec * 2 * d * d
        + batch * target * d * vocab
    )  # multiply-adds
    return 6 * forward


class BatchEndTimes(keras.callbacks.Callback):
    """Records `time.perf_counter()` at the end of every training batch.

    The batch's loss is read first: on a backend that dispatches
    asynchronously (JAX) the step has then finished, not only started.
    """

    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_end(self, batch, logs=None):
        float((logs or {}).get("loss", 0.0))
        self.times.append(time.perf_counter())


def add_utilisation(results, config, precision, peaks):
    """Adds achieved matmul FLOPs/s and MFU to each model's results."""
    flops_per_token = matmul_flops_per_step(config) / (
        config["batch_size"] * config["length"]
    )
    peak = peaks["bfloat16" if precision == "mixed_bfloat16" else "float32"]["peak"]
    for result in results.values():
        achieved = result["tokens_per_second"] * flops_per_token
        result["model_flops_per_second"] = common.rounded(achieved)
        result["mfu"] = common.rounded(achieved / peak, 3)
