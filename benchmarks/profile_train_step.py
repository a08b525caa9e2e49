"""Where a training step's time goes: a TensorFlow profile of `fit` steps.

Builds one of `train_speed.py`'s models for one of its configurations,
trains a few warm-up steps, then records `--steps` steps with the
TensorFlow profiler into `--logdir` (open it with TensorBoard's Profile tab
or the trace viewer). With the `xprof` package installed
(`pip install xprof`; not a dependency of this project), it also prints
JSON: the ops' self-time per op type and per group (forward and gradient
matmuls, loss, dropout, attention, layer norm, optimizer), in milliseconds
per step. Self-times add up to more than the step's wall time, because
TensorFlow runs independent ops side by side.

    python benchmarks/profile_train_step.py --model ours
    python benchmarks/profile_train_step.py --model keras_hub --precision mixed_bfloat16
"""

import argparse
import collections
import glob
import json
import os

import common
import keras
import tensorflow as tf
import train_speed

GROUPS = (  # (group, substrings of the op name or type), first match wins
    ("matmul (gradient)", ("gradient_tape/:MatMul", "gradient_tape/:Einsum")),
    ("matmul (forward)", (":MatMul", ":Einsum")),
    ("loss", ("label_smoothed", "TensorScatter")),
    ("dropout", ("dropout",)),
    ("layer norm", ("layer_norm", "layernorm", "LayerNorm")),
    ("optimizer", ("adam/", "Adam")),
    ("attention (not matmul)", ("attention",)),
)


def group_of(name, op_type):
    for group, patterns in GROUPS:
        for pattern in patterns:
            in_name, _, in_type = pattern.partition(":")
            if (in_name in name) and (in_type in op_type):
                return group
    return "other"


def op_time_table(logdir):
    """(op name, op type, self microseconds) rows of the newest profile."""
    from xprof.convert import raw_to_tool_data

    path = sorted(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")))
    data, _ = raw_to_tool_data.xspace_to_tool_data(
        [path[-1]], "framework_op_stats^", {}
    )
    table = json.loads(data)
    table = table[0] if isinstance(table, list) else table
    columns = [column["id"] for column in table["cols"]]
    for row in table["rows"]:
        cells = [cell and cell["v"] for cell in row["c"]]
        values = dict(zip(columns, cells, strict=True))
        if values["type"] != "IDLE":
            yield values["operation"], values["type"], values["total_self_time"]


def summary(logdir, steps):
    by_type, by_group = collections.Counter(), collections.Counter()
    for name, op_type, micros in op_time_table(logdir):
        by_type[op_type] += micros / 1000 / steps
        by_group[group_of(name, op_type)] += micros / 1000 / steps
    return {
        "unit": "milliseconds of op self-time per step",
        "total": common.rounded(sum(by_group.values()), 4),
        "groups": {k: common.rounded(v, 3) for k, v in by_group.most_common()},
        "op_types": {k: common.rounded(v, 3) for k, v in by_type.most_common(20)},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=train_speed.MODELS, default="ours")
    parser.add_argument(
        "--config", choices=sorted(train_speed.CONFIGS), default="small"
    )
    parser.add_argument(
        "--precision", choices=train_speed.PRECISIONS, default="float32"
    )
    parser.add_argument("--jit", action="store_true", help="compile with XLA")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--logdir", default="runs/profile")
    common.add_threads_argument(parser)
    args = parser.parse_args(argv)
    common.set_threads(args.threads)
    config = train_speed.CONFIGS[args.config]
    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(args.precision)
    try:
        model = train_speed.build_model(args.model, config)
        train_speed.compiled(model, config, args.jit)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    dataset = train_speed.random_dataset(config)
    model.fit(dataset, steps_per_epoch=4, verbose=0)  # trace, compile, warm up
    tf.profiler.experimental.start(args.logdir)
    model.fit(dataset, steps_per_epoch=args.steps, verbose=0)
    tf.profiler.experimental.stop()
    result = {"model": args.model, "config": args.config, "logdir": args.logdir}
    result.update(precision=args.precision, jit_compile=args.jit, steps=args.steps)
    try:
        result["self_time"] = summary(args.logdir, args.steps)
    except ImportError:
        result["self_time"] = "pip install xprof to summarise, or open the logdir"
    common.print_json(result)


if __name__ == "__main__":
    main()
