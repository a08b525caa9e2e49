"""The exported SavedModel: TF Serving's layout, and loadable without this package.

The compatibility tests run in a fresh interpreter that imports only
TensorFlow (and tensorflow-text, whose ops the tokenizer uses), the way a
model server would see the export.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_transformer.export import export_translator

pytestmark = pytest.mark.slow

SUBPROCESS_TIMEOUT = 180
SIGNATURES = [
    "serving_default",
    "greedy",
    "beam",
    "ids",
    "attention",
    "nbest",
    "score",
    "align",
    "sample",
    "controlled",
    "controlled_beam",
    "controlled_nbest",
]
BAD_TEXTS = ["", "   ", "z \u00e4 \u4e2d a", " ".join("abcdefghijklmnop" * 2)]

TF1_SESSION_SCRIPT = """
import json
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the SentencePiece ops

path, texts_file, result_file = sys.argv[1:]
with open(texts_file) as file:
    texts = json.load(file)
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
    signature = meta_graph.signature_def["serving_default"]
    outputs = session.run(
        {key: info.name for key, info in signature.outputs.items()},
        feed_dict={signature.inputs["text"].name: texts},
    )
assert "keras_transformer" not in sys.modules
with open(result_file, "w") as file:
    json.dump(
        {
            "inputs": sorted(signature.inputs),
            "method_name": signature.method_name,
            "translation": [text.decode("utf-8") for text in outputs["translation"]],
            "score": outputs["score"].tolist(),
        },
        file,
    )
"""

OPS_SCRIPT = """
import json
import os
import sys

import tensorflow as tf  # noqa: F401
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

path, result_file = sys.argv[1:]
saved_model = saved_model_pb2.SavedModel()
with open(os.path.join(path, "saved_model.pb"), "rb") as file:
    saved_model.ParseFromString(file.read())
ops, must_compile = set(), []
for meta_graph in saved_model.meta_graphs:
    graph = meta_graph.graph_def
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes.extend(function.node_def)
        if function.attr["_XlaMustCompile"].b:
            must_compile.append(function.signature.name)
    ops.update(node.op for node in nodes)
    must_compile.extend(n.name for n in nodes if n.attr["_XlaMustCompile"].b)
core = {op for op in ops if op_def_registry.get(op) is not None}
import tensorflow_text  # noqa: E402, F401

text = {op for op in ops - core if op_def_registry.get(op) is not None}
assert "keras_transformer" not in sys.modules
with open(result_file, "w") as file:
    json.dump(
        {
            "core": sorted(core),
            "tensorflow_text": sorted(text),
            "unregistered": sorted(ops - core - text),
            "must_compile": must_compile,
        },
        file,
    )
"""


def run_python(tmp_path, script, *arguments):
    """Runs `script` in a fresh interpreter; returns the JSON it writes."""
    script_file, result_file = tmp_path / "script.py", tmp_path / "result.json"
    script_file.write_text(script)
    process = subprocess.run(
        [sys.executable, str(script_file), *map(str, arguments), str(result_file)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert process.returncode == 0, process.stderr[-4000:]
    return json.loads(result_file.read_text())


def saved_model_cli():
    """The `saved_model_cli` command of this interpreter's TensorFlow."""
    script = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]


def test_export_writes_numbered_versions_with_the_vocabulary(
    translator, exported, tmp_path
):
    assert os.path.basename(exported) == "1"
    assert os.path.basename(os.path.dirname(exported)) == "translator"
    # The next version, beside a copy of the run's shared first one.
    model_dir = str(tmp_path / "translator")
    shutil.copytree(exported, os.path.join(model_dir, "1"))
    exported = os.path.join(model_dir, "1")
    second = export_translator(translator, os.path.dirname(model_dir), "translator")
    assert second == os.path.join(model_dir, "2")
    assert sorted(os.listdir(model_dir)) == ["1", "2"]  # no staging folder left
    for path in (exported, second):
        assert {"saved_model.pb", "variables", "assets"} <= set(os.listdir(path))
        with open(os.path.join(path, "assets", "tokenizer.model"), "rb") as file:
            assert file.read() == translator.tokenizer.model
    for version in (1, 2, "2"):
        with pytest.raises(FileExistsError, match="exists; pass another version"):
            export_translator(
                translator, os.path.dirname(model_dir), "translator", version
            )
    with pytest.raises(AttributeError):  # a failed export leaves nothing behind
        export_translator(object(), os.path.dirname(model_dir), "translator")
    assert sorted(os.listdir(model_dir)) == ["1", "2"]


# A model built in mixed_bfloat16, exported with the recipe's default
# `export_precision`, and the scores of the export's `ids` signature against
# in-process float32 and bfloat16 translators of the same weights. It runs
# in a fresh interpreter: here, a second tokenizer and a SavedModel loaded
# and dropped delete SentencePiece resources the module's translator uses.
BFLOAT16_EXPORT_SCRIPT = """
import json
import sys

import keras
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.data import train_tokenizer
from keras_transformer.export import Translator, export_translator
from keras_transformer.recipe.config import RunConfig
from keras_transformer.training import global_dtype_policy, resolve_precision

export_dir, result_file = sys.argv[1:]
keras.utils.set_random_seed(0)
tokenizer = train_tokenizer(["a b c d e"] * 20, vocab_size=20, byte_fallback=False)
config = kt.TransformerConfig.tiny(
    tokenizer.vocab_size, d_model=16, d_ff=32, num_heads=2
)
run_config = RunConfig.from_dict({"runtime": {"precision": "mixed_bfloat16"}})
with global_dtype_policy(resolve_precision(run_config.runtime.precision)):
    trained = kt.build_transformer(config)
float32 = kt.build_transformer(config)
float32.set_weights(trained.get_weights())
ids = tf.constant([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])
path = export_translator(
    Translator(trained, tokenizer, max_length=8),
    export_dir,
    dtype_policy=resolve_precision(run_config.output.export_precision),
)
# Held in names: a Translator's tf.function methods keep weak references.
exported = tf.saved_model.load(path)
in_float32 = Translator(float32, tokenizer, max_length=8)
in_bfloat16 = Translator(trained, tokenizer, max_length=8)
scores = {
    "exported": exported.signatures["ids"](ids=ids)["score"],
    "float32": in_float32.translate_ids(ids)["score"],
    "trained": in_bfloat16.translate_ids(ids)["score"],
}
with open(result_file, "w") as file:
    json.dump({name: value.numpy().tolist() for name, value in scores.items()}, file)
"""


@pytest.mark.slow
def test_a_mixed_bfloat16_run_exports_a_float32_translator(tmp_path):
    scores = run_python(tmp_path, BFLOAT16_EXPORT_SCRIPT, tmp_path / "exports")
    np.testing.assert_allclose(scores["exported"], scores["float32"], atol=1e-5)
    assert not np.allclose(scores["exported"], scores["trained"], atol=1e-3)


def test_reloaded_signatures_equal_the_translator(translator, reloaded, held_out):
    assert set(SIGNATURES) <= set(reloaded.signatures)
    texts = tf.constant([source for source, _ in held_out[:20]] + BAD_TEXTS)
    source_ids = translator.source_ids(texts)
    inputs = {
        "serving_default": dict(text=texts),
        "greedy": dict(text=texts),
        "beam": dict(text=texts, beam_size=tf.constant(3), alpha=tf.constant(0.6)),
        "ids": dict(ids=source_ids),
        "attention": dict(text=texts),
        "nbest": dict(text=texts, beam_size=tf.constant(3), alpha=tf.constant(0.6)),
        "score": dict(source=texts, target=tf.reverse(texts, [0])),
        "align": dict(source=texts, target=tf.reverse(texts, [0])),
        "sample": dict(
            text=texts,
            top_k=tf.constant(0),
            top_p=tf.constant(0.9),
            temperature=tf.constant(1.5),
            seed=tf.constant(11),
        ),
    }
    rows = len(texts)
    controls = dict(
        text=texts,
        prefix=tf.constant(["a b", "c "] * (rows // 2) + [""] * (rows % 2)),
        repetition_penalty=tf.fill([rows], 1.3),
        no_repeat_ngram_size=tf.fill([rows], 2),
        min_length=tf.fill([rows], 3),
        disable_unk=tf.fill([rows], True),
        banned=tf.constant([["a", ""]] * rows),
        required=tf.constant([["b"]] * rows),
    )
    inputs["controlled"] = controls
    inputs["controlled_beam"] = dict(
        controls, beam_size=tf.constant(2), alpha=tf.constant(0.3)
    )
    inputs["controlled_nbest"] = inputs["controlled_beam"]
    in_process = translator.signatures()
    for name in SIGNATURES:
        expected = in_process[name](**inputs[name])
        result = reloaded.signatures[name](**inputs[name])
        assert result.keys() == expected.keys()
        for key, value in expected.items():
            if value.dtype == tf.float32:
                np.testing.assert_allclose(result[key], value, atol=1e-5)
            else:
                np.testing.assert_array_equal(result[key], value)


def test_tf1_session_loader_translates_like_the_translator(
    translator, exported, held_out, tmp_path
):
    texts = [source for source, _ in held_out[:20]] + BAD_TEXTS
    texts_file = tmp_path / "texts.json"
    texts_file.write_text(json.dumps(texts))
    result = run_python(tmp_path, TF1_SESSION_SCRIPT, exported, texts_file)
    expected = translator.translate(tf.constant(texts))
    assert result["inputs"] == ["text"]
    assert result["method_name"] == "tensorflow/serving/predict"
    assert result["translation"] == [
        text.decode("utf-8") for text in expected["translation"].numpy()
    ]
    np.testing.assert_allclose(result["score"], expected["score"], atol=1e-5)


def test_saved_model_cli_lists_the_signatures(exported):
    process = subprocess.run(
        [*saved_model_cli(), "show", "--dir", exported, "--all"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert process.returncode == 0, process.stderr[-4000:]
    for name in SIGNATURES:
        assert f"signature_def['{name}']" in process.stdout
    for inputs in ("['text']", "['beam_size']", "['alpha']", "['ids']", "['target']"):
        assert f"inputs{inputs} tensor_info" in process.stdout
    outputs = ("translation", "score", "ids", "cross_attention", "source_pieces")
    for output in (*outputs, "translations", "per_token"):
        assert f"outputs['{output}'] tensor_info" in process.stdout


def test_saved_model_uses_only_registered_ops(exported, tmp_path):
    result = run_python(tmp_path, OPS_SCRIPT, exported)
    assert result["unregistered"] == []
    assert {"SentencepieceOp", "SentencepieceTokenizeOp"} <= set(
        result["tensorflow_text"]
    )
    python_ops = {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    assert not python_ops & set(result["core"] + result["tensorflow_text"])
    assert result["must_compile"] == []
    # Xla* ops (e.g. XlaDynamicUpdateSlice) compile on demand: Serving needs XLA.
    assert [op for op in result["core"] if op.startswith("Xla")] == []


def test_the_beam_searching_signatures_share_one_traced_search(exported):
    """`translate`, `beam`, `nbest`, `ids` and `attention` call one traced
    beam search, so the export holds (and a load imports) its loop once;
    `controlled` and `controlled_beam` another."""
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(exported, "saved_model.pb"), "rb") as file:
        saved.ParseFromString(file.read())
    functions = {
        function.signature.name: {node.op for node in function.node_def}
        for function in saved.meta_graphs[0].graph_def.library.function
    }
    for search in ("_beam_search", "_controlled_search"):
        prefix = f"__inference_{search}_"
        assert len([name for name in functions if name.startswith(prefix)]) == 1
    callers = ("translate", "beam", "nbest", "translate_ids", "attention")
    for caller in (*callers, "controlled", "controlled_beam", "controlled_nbest"):
        (ops,) = [
            ops
            for name, ops in functions.items()
            if name.rsplit("_", 1)[0] == f"__inference_{caller}"
        ]
        assert not ops & {"While", "StatelessWhile"}, caller
