"""TF Serving's REST predict format: JSON in, NumPy arrays, JSON out.

The request and response bodies of `POST /v1/models/<name>:predict`, as
TensorFlow Serving reads and writes them
(https://www.tensorflow.org/tfx/serving/api_rest):

- `{"signature_name": ..., "instances": [...]}`, the row format: one item
  per row, an object of the signature's named inputs (a bare value when it
  has one input). The answer is `{"predictions": [...]}`, one item per
  row, an object of the outputs (a bare value when there is one).
- `{"signature_name": ..., "inputs": {...}}`, the columnar format: each
  named input whole, scalars included (a bare value for one input). The
  answer is `{"outputs": {...}}` (a bare value for one output).
- A string goes in as JSON text or as `{"b64": "..."}` (any bytes); a
  string output comes back as text (invalid UTF-8 replaced by U+FFFD), or
  as `{"b64": ...}` when the output's name ends in `_bytes`.

Nothing here imports TensorFlow: a signature is described by `TensorInfo`s.

>>> import numpy as np
>>> text = TensorInfo(np.dtype(object), (None,))
>>> signature = Signature("serving_default", {"text": text}, {"translation": text})
>>> request = parse_predict(b'{"instances": ["Hallo", {"b64": "V2VsdA=="}]}',
...                         {"serving_default": signature})
>>> request.inputs["text"]
array([b'Hallo', b'Welt'], dtype=object)
>>> format_predict({"translation": np.array([b"Hello", b"World"], object)},
...                request.rows_format)
{'predictions': ['Hello', 'World']}
"""

import base64
import binascii
import dataclasses
import json

import numpy as np


class RequestError(ValueError):
    """A request the server refuses: `status` (400, 404, 413) and a message,
    answered as TF Serving answers, `{"error": message}`."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """A signature's input or output: its NumPy dtype (`object` for
    strings) and shape (None for a dimension of any size; the first is
    the batch's, unless the shape is `()`, a scalar)."""

    dtype: np.dtype
    shape: tuple

    @property
    def is_scalar(self):
        return not self.shape


@dataclasses.dataclass(frozen=True)
class Signature:
    """A signature's name and its inputs and outputs, by name."""

    name: str
    inputs: dict
    outputs: dict

    @property
    def rows_out(self):
        """Whether every output is one value per row, `(B,)`: such a
        signature's requests can be merged into one batch and split again."""
        return all(len(info.shape) == 1 for info in self.outputs.values())


@dataclasses.dataclass(frozen=True)
class PredictRequest:
    """A parsed request: the signature, an array per input, and whether the
    answer goes in the row format (`instances`) or the columnar one."""

    signature: Signature
    inputs: dict
    rows_format: bool

    @property
    def rows(self):
        """The request's batch size: the first dimension of its row inputs."""
        sizes = [len(a) for a in self.inputs.values() if a.ndim]
        return sizes[0] if sizes else 0


def parse_predict(body, signatures, default="serving_default"):
    """The `PredictRequest` of a request body (bytes).

    Raises:
        RequestError: the body is not JSON of the predict format, names no
            signature of `signatures` (a dict by name), or its inputs do
            not match the signature's names, types and shapes.
    """
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestError(f"The body is not JSON: {error}.") from None
    if not isinstance(request, dict):
        raise RequestError("The body must be a JSON object.")
    name = request.get("signature_name", default)
    if not isinstance(name, str) or name not in signatures:
        raise RequestError(
            f"No signature {name!r}; this model has {', '.join(sorted(signatures))}.",
            status=404,
        )
    signature = signatures[name]
    if ("instances" in request) == ("inputs" in request):
        raise RequestError('Give either "instances" or "inputs", not both.')
    if "instances" in request:
        columns = _columns(request["instances"], signature)
    else:
        columns = _named(request["inputs"], signature, "inputs")
    inputs = {
        key: _array(columns[key], info, key) for key, info in signature.inputs.items()
    }
    sizes = {len(array) for array in inputs.values() if array.ndim}
    if len(sizes) > 1:
        raise RequestError(f"The inputs' first dimensions differ: {sorted(sizes)}.")
    return PredictRequest(signature, inputs, "instances" in request)


def _named(value, signature, where):
    """{input name: JSON value} of an object of named inputs, or of a bare
    value where the signature has one input."""
    names = set(signature.inputs)
    if isinstance(value, dict) and not _is_b64(value):
        if set(value) == names:
            return value
        missing, unknown = names - set(value), set(value) - names
        raise RequestError(
            f"{where} must name the inputs {sorted(names)}"
            + (f"; missing {sorted(missing)}" if missing else "")
            + (f"; unknown {sorted(unknown)}" if unknown else "")
            + "."
        )
    if len(names) == 1:
        return {next(iter(names)): value}
    raise RequestError(f"{where} must be an object of the inputs {sorted(names)}.")


def _columns(instances, signature):
    """{input name: list of rows} of the row format's instances."""
    if not isinstance(instances, list):
        raise RequestError('"instances" must be a list, one item per row.')
    scalars = [key for key, info in signature.inputs.items() if info.is_scalar]
    if scalars:
        raise RequestError(
            f"{signature.name} has scalar inputs {scalars}: send them in the "
            'columnar format, "inputs".'
        )
    columns = {key: [] for key in signature.inputs}
    for instance in instances:
        for key, value in _named(instance, signature, "Each instance").items():
            columns[key].append(value)
    return columns


def _is_b64(value):
    return isinstance(value, dict) and set(value) == {"b64"}


def _array(value, info, name):
    """The NumPy array of input `name`'s JSON value, checked against `info`."""
    rank = len(info.shape)
    try:
        leaves = _leaves(value, rank, info.dtype, name)
    except OverflowError:
        raise RequestError(f"Input {name}: a number out of range.") from None
    try:
        array = np.array(leaves, dtype=info.dtype)
    except ValueError:  # ragged lists of numbers
        raise RequestError(f"Input {name}: the lists must be rectangular.") from None
    if array.dtype == object and array.size and isinstance(array.flat[0], list):
        raise RequestError(f"Input {name}: the lists must be rectangular.")
    if array.size == 0 and array.ndim < rank:  # [] for a (B, N) input
        array = array.reshape((0,) * rank)
    if array.ndim != rank or any(
        size not in (None, actual)
        for size, actual in zip(info.shape, array.shape, strict=True)
    ):
        raise RequestError(
            f"Input {name} has shape {list(array.shape)}; the signature takes "
            f"{[-1 if size is None else size for size in info.shape]}."
        )
    return array


def _leaves(value, depth, dtype, name):
    """`value` with each leaf converted for `dtype`, `depth` lists deep."""
    if depth:
        if not isinstance(value, list):
            raise RequestError(f"Input {name}: expected a list, got {value!r:.40}.")
        return [_leaves(item, depth - 1, dtype, name) for item in value]
    kind = dtype.kind
    if kind == "O":
        if isinstance(value, str):
            return value.encode("utf-8", "surrogatepass")  # a lone \ud800 too
        if _is_b64(value) and isinstance(value["b64"], str):
            try:
                return base64.b64decode(value["b64"], validate=True)
            except binascii.Error:
                raise RequestError(f"Input {name}: invalid base64.") from None
        raise RequestError(f"Input {name} takes strings, got {value!r:.40}.")
    if kind == "b" and isinstance(value, bool):
        return value
    if kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        if not np.can_cast(np.min_scalar_type(value), dtype, "safe"):
            raise OverflowError
        return value
    if kind == "f" and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise RequestError(f"Input {name} takes {dtype.name} values, got {value!r:.40}.")


def format_predict(outputs, rows_format):
    """The answer's JSON object (a dict) of the output arrays, by name, in
    the request's format."""
    values = {key: _json(array, key) for key, array in outputs.items()}
    if rows_format:
        rows = len(next(iter(values.values()))) if values else 0
        if len(values) == 1:
            return {"predictions": next(iter(values.values()))}
        return {
            "predictions": [
                {key: column[row] for key, column in values.items()}
                for row in range(rows)
            ]
        }
    if len(values) == 1:
        return {"outputs": next(iter(values.values()))}
    return {"outputs": values}


def _json(array, name):
    """A JSON value of an output array: lists of numbers, text or base64."""
    if array.dtype.kind not in "OS":
        return array.tolist()
    if name.endswith("_bytes"):
        return _map(array.tolist(), lambda b: {"b64": base64.b64encode(b).decode()})
    return _map(array.tolist(), lambda b: b.decode("utf-8", "replace"))


def _map(value, function):
    if isinstance(value, list):
        return [_map(item, function) for item in value]
    return function(value)
