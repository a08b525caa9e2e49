"""The server's routes, limits and refusals, over a model that upper-cases."""

import numpy as np
import pytest
from starlette.testclient import TestClient

from keras_transformer.serving.app import create_app
from keras_transformer.serving.rest import Signature, TensorInfo
from keras_transformer.serving.settings import BatchingParameters, RequestLimits

STRINGS = TensorInfo(np.dtype(object), (None,))


class Upper:
    """A model whose one signature upper-cases; "boom" makes it fail."""

    name, version = "upper", 3
    decoding = {"beam_size": 4, "alpha": 0.6}
    signatures = {
        "serving_default": Signature(
            "serving_default",
            {"text": STRINGS},
            {
                "translation": STRINGS,
                "score": TensorInfo(np.dtype(np.float32), (None,)),
            },
        )
    }

    def run(self, name, inputs):
        texts = inputs["text"].tolist()
        if b"boom" in texts:
            raise RuntimeError("boom")
        return {
            "translation": np.array(
                [t.decode().upper().encode() for t in texts], object
            ),
            "score": -np.arange(len(texts), dtype=np.float32),
        }


def client(**options):
    limits = RequestLimits(max_body_bytes=1000, max_rows=4, max_characters=10)
    app = create_app(Upper(), BatchingParameters(True), limits, **options)
    return TestClient(app, raise_server_exceptions=False)


URL = "/v1/models/upper:predict"


def test_predict_status_metadata_and_health_as_tf_serving_answers():
    with client() as http:
        answer = http.post(URL, json={"instances": ["ab", "ü"]})
        assert answer.status_code == 200
        assert answer.json() == {
            "predictions": [
                {"translation": "AB", "score": 0.0},
                {"translation": "Ü", "score": -1.0},
            ]
        }
        columns = http.post(
            "/v1/models/upper/versions/3:predict", json={"inputs": {"text": ["x"]}}
        )
        assert columns.json() == {"outputs": {"translation": ["X"], "score": [0.0]}}
        status = http.get("/v1/models/upper").json()
        assert status["model_version_status"][0]["state"] == "AVAILABLE"
        assert http.get("/v1/models/upper/versions/3").status_code == 200
        metadata = http.get("/v1/models/upper/metadata").json()
        inputs = metadata["metadata"]["signature_def"]["signature_def"][
            "serving_default"
        ]["inputs"]
        assert inputs["text"]["dtype"] == "DT_STRING"
        assert http.get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize(
    "method, url, body, status",
    [
        ("post", URL, b"", 400),
        ("post", URL, b"{", 400),
        ("post", URL, b'{"instances": ["\xff"]}', 400),  # not UTF-8
        ("post", URL, b'{"instances": [1]}', 400),
        ("post", URL, b'{"signature_name": "beam", "instances": []}', 404),
        ("post", URL, b'{"instances": ["' + b"x" * 2000 + b'"]}', 413),
        ("post", URL, b'{"instances": ["a", "b", "c", "d", "e"]}', 413),
        ("post", URL, b'{"instances": ["' + b"x" * 11 + b'"]}', 413),
        ("post", "/v1/models/other:predict", b'{"instances": []}', 404),
        ("post", "/v1/models/upper/versions/2:predict", b'{"instances": []}', 404),
        ("get", URL, None, 405),
        ("post", "/v1/models/upper", b"{}", 405),
        ("post", "/v1/models/upper:classify", b"{}", 404),
        ("get", "/etc/passwd", None, 404),
        ("post", URL, b'{"instances": ["boom"]}', 500),
    ],
)
def test_every_refusal_is_json_and_the_server_answers_on(method, url, body, status):
    with client() as http:
        answer = getattr(http, method)(
            url, **({} if body is None else {"content": body})
        )
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["error"]
        assert http.post(URL, json={"instances": ["ok"]}).status_code == 200


def test_cors_is_off_unless_origins_are_named():
    headers = {"Origin": "http://page.example", "Access-Control-Request-Method": "POST"}
    with client() as http:
        assert (
            "access-control-allow-origin"
            not in http.options(URL, headers=headers).headers
        )
    with client(cors_origins=["http://page.example"]) as http:
        allowed = http.options(URL, headers=headers)
        assert allowed.headers["access-control-allow-origin"] == "http://page.example"


def test_the_page_and_its_settings_come_from_the_package_only():
    with client() as http:
        page = http.get("/")
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert 'src="page/page.js"' in page.text
        for name in ("page.js", "page.css"):
            assert http.get(f"/page/{name}").status_code == 200
        assert http.get("/page/settings.json").json() == {
            "model": "upper",
            "version": 3,
            "beam_size": 4,
            "alpha": 0.6,
        }
        for path in ("/page/index.html", "/page/../app.py", "/page/%2e%2e/rest.py"):
            assert http.get(path).status_code == 404
