"""The ASGI application of `keras-transformer serve`: TF Serving's REST API.

Routes (those of TensorFlow Serving's REST API, for the one model served):

- `POST /v1/models/<name>[/versions/<n>]:predict`: any signature, in the
  row (`instances`) or columnar (`inputs`) format (`rest`);
- `GET /v1/models/<name>[/versions/<n>]`: the model's status;
- `GET /v1/models/<name>[/versions/<n>]/metadata`: its signatures;
- `GET /healthz`: `{"status": "ok"}` while the server answers;
- `GET /`: the translation page (`page_routes`).

Every refusal is JSON, `{"error": message}`, with a 4xx status: a body
over `max_body_bytes` (413, read no further), a request of more rows or
longer texts than `RequestLimits` allow (413), bad JSON, an unknown
signature or inputs of the wrong names, types or shapes (400 or 404). An
error of the model is a 500, and the next request is answered as usual.
No path of the file system comes from a request. CORS is off unless
origins are named.

The model runs on worker threads (`batching.Batcher`), never on the event
loop. A client that disconnects while its request waits in a batch queue
is dropped from it.
"""

import asyncio
import contextlib
import json
import re

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.routing import Route

from keras_transformer.serving.batching import Batcher
from keras_transformer.serving.page_routes import page_routes
from keras_transformer.serving.rest import RequestError, format_predict, parse_predict
from keras_transformer.serving.settings import BatchingParameters, RequestLimits

# /v1/models/<name>[/versions/<n>][:predict | /metadata]
_MODEL_URL = re.compile(
    r"(?P<name>[^/:]+)(?:/versions/(?P<version>\d+))?(?P<action>:predict|/metadata)?"
)
_DTYPES = {  # NumPy dtype name -> TF Serving's metadata name
    "object": "DT_STRING",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "bool": "DT_BOOL",
}


def create_app(model, batching=None, limits=None, cors_origins=()):
    """The Starlette application serving `model` (a `ServedModel`).

    Args:
        model: what answers: `name`, `version`, `decoding` (its beam size
            and alpha), `signatures` (by name, `rest.Signature`s) and
            `run(signature_name, inputs)`.
        batching: a `BatchingParameters` (None: its defaults, no batching).
        limits: a `RequestLimits` (None: its defaults).
        cors_origins: the origins a browser may call it from (none: CORS
            off).
    """
    batcher = Batcher(model.run, batching or BatchingParameters())
    limits = limits or RequestLimits()

    async def models(request):
        match = _MODEL_URL.fullmatch(request.path_params["path"])
        if match is None:
            raise RequestError(f"No such URL: {request.url.path}.", status=404)
        name, version, action = match.group("name", "version", "action")
        if name != model.name or version not in (None, str(model.version)):
            raise RequestError(
                f"Servable not found for request: model {name!r}"
                + (f", version {version}" if version else "")
                + f"; this server has {model.name!r}, version {model.version}.",
                status=404,
            )
        if (action == ":predict") != (request.method == "POST"):
            raise RequestError(
                f"{request.method} is not allowed on {request.url.path}.", status=405
            )
        if action == ":predict":
            return await predict(request)
        if action == "/metadata":
            return _json(_metadata(model))
        return _json(_status(model))

    async def predict(request):
        body = await _body(request, limits.max_body_bytes)
        parsed = parse_predict(body, model.signatures)
        limits.check(parsed)
        work = asyncio.ensure_future(batcher.predict(parsed))
        gone = asyncio.ensure_future(_disconnected(request))
        await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():  # nobody waits for the answer
            work.cancel()
            return Response(status_code=499)
        gone.cancel()
        return _json(format_predict(work.result(), parsed.rows_format))

    async def health(request):
        return _json({"status": "ok"})

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        batcher.close()

    middleware = []
    if cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Content-Type"],
            )
        )
    return Starlette(
        routes=[
            Route("/v1/models/{path:path}", models, methods=["GET", "POST"]),
            Route("/healthz", health),
            *page_routes(model),
        ],
        middleware=middleware,
        exception_handlers={
            RequestError: _refusal,
            HTTPException: _refusal,
            Exception: _failure,
        },
        lifespan=lifespan,
    )


async def _body(request, limit):
    """The request's body, refused (413) as soon as it passes `limit` bytes."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise RequestError(_too_large(limit), status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(_too_large(limit), status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit):
    return f"The body is over {limit} bytes (--max-body-bytes)."


async def _disconnected(request):
    """Returns when the client has gone (its body already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _status(model):
    return {
        "model_version_status": [
            {
                "version": str(model.version),
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }


def _metadata(model):
    def tensors(infos):
        return {
            key: {
                "dtype": _DTYPES.get(info.dtype.name, info.dtype.name),
                "tensor_shape": {
                    "dim": [
                        {"size": str(-1 if size is None else size), "name": ""}
                        for size in info.shape
                    ],
                    "unknown_rank": False,
                },
                "name": key,
            }
            for key, info in infos.items()
        }

    signatures = {
        name: {
            "inputs": tensors(signature.inputs),
            "outputs": tensors(signature.outputs),
            "method_name": "tensorflow/serving/predict",
        }
        for name, signature in model.signatures.items()
    }
    return {
        "model_spec": {
            "name": model.name,
            "signature_name": "",
            "version": str(model.version),
        },
        "metadata": {"signature_def": {"signature_def": signatures}},
    }


def _json(content, status=200):
    """A JSON response; NaN written as TF Serving writes it."""
    body = json.dumps(content, ensure_ascii=False).encode()
    return Response(body, status, media_type="application/json")


async def _refusal(request, error):
    status = getattr(error, "status", None) or error.status_code
    message = str(error) if isinstance(error, RequestError) else error.detail
    return _json({"error": message}, status)


async def _failure(request, error):
    return _json({"error": f"The model failed: {error}"}, 500)
