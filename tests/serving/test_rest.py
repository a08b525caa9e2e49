"""TF Serving's REST predict format, read and written as TF Serving does."""

import json

import numpy as np
import pytest

from keras_transformer.serving.rest import (
    RequestError,
    Signature,
    TensorInfo,
    format_predict,
    parse_predict,
)

STRINGS = TensorInfo(np.dtype(object), (None,))
BEAM = Signature(
    "beam",
    {
        "text": STRINGS,
        "beam_size": TensorInfo(np.dtype(np.int32), ()),
        "alpha": TensorInfo(np.dtype(np.float32), ()),
    },
    {"translation": STRINGS, "score": TensorInfo(np.dtype(np.float32), (None,))},
)
CONTROLLED = Signature(
    "controlled",
    {
        "text": STRINGS,
        "min_length": TensorInfo(np.dtype(np.int32), (None,)),
        "banned": TensorInfo(np.dtype(object), (None, None)),
        "disable_unk": TensorInfo(np.dtype(bool), (None,)),
    },
    {"translation": STRINGS},
)
DEFAULT = Signature("serving_default", {"text": STRINGS}, {"translation": STRINGS})
SIGNATURES = {s.name: s for s in (BEAM, CONTROLLED, DEFAULT)}


def parse(request):
    return parse_predict(json.dumps(request).encode(), SIGNATURES)


def test_rows_and_columns_give_the_same_arrays():
    rows = parse(
        {
            "signature_name": "controlled",
            "instances": [
                {
                    "text": "a",
                    "min_length": 2,
                    "banned": ["x", ""],
                    "disable_unk": True,
                },
                {
                    "text": "b",
                    "min_length": 0,
                    "banned": ["y", "z"],
                    "disable_unk": False,
                },
            ],
        }
    )
    columns = parse(
        {
            "signature_name": "controlled",
            "inputs": {
                "text": ["a", "b"],
                "min_length": [2, 0],
                "banned": [["x", ""], ["y", "z"]],
                "disable_unk": [True, False],
            },
        }
    )
    assert rows.rows_format and not columns.rows_format
    assert rows.rows == columns.rows == 2
    for key in CONTROLLED.inputs:
        np.testing.assert_array_equal(rows.inputs[key], columns.inputs[key])
        assert rows.inputs[key].dtype == CONTROLLED.inputs[key].dtype
    assert rows.inputs["banned"].shape == (2, 2)


def test_strings_as_text_base64_and_lone_surrogates():
    request = parse_predict(
        b'{"instances": ["\\u00fcber", {"b64": "/w=="}, "\\ud800"]}', SIGNATURES
    )
    assert request.inputs["text"].tolist() == [
        "über".encode(),
        b"\xff",
        "\ud800".encode("utf-8", "surrogatepass"),
    ]


def test_a_single_input_may_be_named_or_bare_and_scalars_go_in_columns():
    named = parse({"instances": [{"text": "a"}]})
    bare = parse({"inputs": ["a"]})
    assert named.inputs["text"].tolist() == bare.inputs["text"].tolist() == [b"a"]
    beam = parse(
        {"signature_name": "beam", "inputs": {"text": [], "beam_size": 4, "alpha": 1}}
    )
    assert beam.rows == 0 and beam.inputs["beam_size"].shape == ()
    assert beam.inputs["alpha"].dtype == np.float32


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"", 400, "not JSON"),
        (b"\xff\xfe", 400, "not JSON"),
        (b"[1]", 400, "JSON object"),
        (b'{"instances": [], "inputs": []}', 400, "either"),
        (b'{"signature_name": "x", "instances": []}', 404, "No signature 'x'"),
        (b'{"instances": "a"}', 400, "must be a list"),
        (b'{"instances": [1]}', 400, "takes strings"),
        (b'{"instances": [{"txt": "a"}]}', 400, "unknown ['txt']"),
        (b'{"instances": [{"b64": "!!"}]}', 400, "invalid base64"),
        (b'{"signature_name": "beam", "instances": []}', 400, "scalar inputs"),
        (
            b'{"signature_name": "beam", "inputs": {"text": ["a"], "beam_size": 2.5,'
            b' "alpha": 1}}',
            400,
            "int32",
        ),
        (
            b'{"signature_name": "beam", "inputs": {"text": ["a"],'
            b' "beam_size": 4294967296, "alpha": 1}}',
            400,
            "out of range",
        ),
        (
            b'{"signature_name": "beam", "inputs": {"text": "a", "beam_size": 1,'
            b' "alpha": 1}}',
            400,
            "expected a list",
        ),
        (
            b'{"signature_name": "controlled", "inputs": {"text": ["a", "b"],'
            b' "min_length": [1], "banned": [[""], [""]], "disable_unk": [1, 0]}}',
            400,
            "bool",
        ),
        (
            b'{"signature_name": "controlled", "inputs": {"text": ["a", "b"],'
            b' "min_length": [1], "banned": [[""], [""]],'
            b' "disable_unk": [true, false]}}',
            400,
            "first dimensions differ",
        ),
        (
            b'{"signature_name": "controlled", "inputs": {"text": ["a", "b"],'
            b' "min_length": [1, 2], "banned": [[""], ["", "x"]],'
            b' "disable_unk": [true, false]}}',
            400,
            "rectangular",
        ),
    ],
)
def test_refusals_say_what_is_wrong(body, status, words):
    with pytest.raises(RequestError, match=None) as raised:
        parse_predict(body, SIGNATURES)
    assert raised.value.status == status
    assert words in str(raised.value)


def test_answers_in_the_request_format():
    outputs = {
        "translation": np.array([b"x", b"\xff"], object),
        "score": np.array([-1.5, 0.0], np.float32),
    }
    assert format_predict(outputs, rows_format=True) == {
        "predictions": [
            {"translation": "x", "score": -1.5},
            {"translation": "\ufffd", "score": 0.0},
        ]
    }
    assert format_predict(outputs, rows_format=False) == {
        "outputs": {"translation": ["x", "\ufffd"], "score": [-1.5, 0.0]}
    }
    raw = {"text_bytes": np.array([[b"\xff"]], object)}
    assert format_predict(raw, rows_format=False) == {"outputs": [[{"b64": "/w=="}]]}
