"""`serve_load.py`'s workload over HTTP, against `keras-transformer serve`.

Starts `keras-transformer serve EXPORT` on a free port of 127.0.0.1 twice,
batching off and on (`--enable-batching`), and sends each the requests of
`serve_load.py` (the `serving_default`, `greedy`, `beam` and `controlled`
signatures, 0 to 64 texts a request, bad texts among them) from
`--threads` client threads, in TF Serving's columnar JSON (strings as
base64, so invalid UTF-8 goes through). Every answer must equal the item
translated alone by the export in a TF1 session, as TF Serving would run
it: the same translation, the score within 1e-4. The in-process session
serves the same requests as the reference row.

Then a corpus of bad requests goes to the server with batching on (an
empty body, bad JSON, 10 MB, invalid UTF-8, 1,000 texts, an unknown
signature, wrong types, ...): each must be answered with a 4xx and a JSON
`error`, and the server must answer a good request after each.

    python benchmarks/serve_http.py saved_models/translator/1 \\
        --texts test.de --requests 400

Prints one JSON object on stdout.
"""

import argparse
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import serve_load


class HttpModel:
    """`keras-transformer serve` at `port`, asked as `serve_load` asks a
    session: `run(name, texts, rows)` -> (translations, scores)."""

    def __init__(self, port, name="translator"):
        self.port = port
        self.url = f"/v1/models/{name}:predict"
        self._local = threading.local()  # a connection per client thread

    def post(self, body, url=None):
        """(status, the answer's JSON) of a POST of `body` (bytes)."""
        if not hasattr(self._local, "connection"):
            self._local.connection = http.client.HTTPConnection(
                "127.0.0.1", self.port, timeout=600
            )
        connection = self._local.connection
        try:
            connection.request(
                "POST", url or self.url, body, {"Content-Type": "application/json"}
            )
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read())
        except (OSError, http.client.HTTPException):
            connection.close()  # the server closed it (a refused large body)
            del self._local.connection
            raise

    def run(self, name, texts, rows=None):
        inputs = serve_load.signature_inputs(name, texts, rows)
        body = {"signature_name": name, "inputs": _json_values(inputs)}
        status, answer = self.post(json.dumps(body).encode())
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {answer}")
        outputs = answer["outputs"]
        translations = [text.encode("utf-8") for text in outputs["translation"]]
        return translations, outputs["score"]


def _json_values(inputs):
    """TF Serving's columnar JSON of arrays: strings as {"b64": ...}."""

    def value(item):
        if isinstance(item, bytes):
            return {"b64": base64.b64encode(item).decode()}
        return item

    def tree(array):
        if isinstance(array, list):
            return [tree(item) for item in array]
        return value(array)

    return {
        key: tree(array.tolist() if isinstance(array, np.ndarray) else array)
        for key, array in inputs.items()
    }


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(export, batching, log):
    """A `keras-transformer serve` process and its port, once it answers."""
    port = free_port()
    command = [sys.executable, "-m", "keras_transformer.cli", "serve", export]
    command += ["--port", str(port), "--max-characters", "20000"]
    if batching:
        command.append("--enable-batching")
    process = subprocess.Popen(command, stdout=log, stderr=log)
    deadline = time.time() + 600
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The server exited with status {process.returncode}.")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return process, port
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise RuntimeError("The server did not answer within 600 s.")


def bad_requests(pool):
    """(what, body) of requests the server must refuse with a 4xx."""
    good = {"signature_name": "serving_default", "instances": ["Hallo"]}
    return [
        ("empty body", b""),
        ("bad JSON", b'{"instances": ['),
        ("not an object", b'["Hallo"]'),
        ("10 MB body", b'{"instances": ["' + b"x" * 10_000_000 + b'"]}'),
        ("invalid UTF-8", b'{"instances": ["\xff\xfe Guten \xc3"]}'),
        ("1,000 texts", json.dumps({"instances": [pool[0].decode()] * 1000}).encode()),
        (
            "a text of 30,000 characters",
            json.dumps({"instances": ["x" * 30_000]}).encode(),
        ),
        ("unknown signature", json.dumps({**good, "signature_name": "nope"}).encode()),
        ("a number for a text", b'{"instances": [1]}'),
        ("unknown input", b'{"instances": [{"txt": "Hallo"}]}'),
        (
            "a text for beam_size",
            b'{"signature_name": "beam", "inputs": {"text": ["a"], '
            b'"beam_size": "four", "alpha": 0.6}}',
        ),
        ("scalars in rows", b'{"signature_name": "beam", "instances": []}'),
        ("both formats", b'{"instances": [], "inputs": []}'),
        ("invalid base64", b'{"instances": [{"b64": "!!"}]}'),
        (
            "ragged lists",
            b'{"signature_name": "controlled", "inputs": {"text": '
            b'["a"], "prefix": [""], "repetition_penalty": [1.0], '
            b'"no_repeat_ngram_size": [0], "min_length": [0], "disable_unk": [false],'
            b' "banned": [["a"], ["b", "c"]], "required": [[""]]}}',
        ),
    ]


def probe_bad_requests(model, process, pool):
    """Each bad request's status and error, and whether a good one follows."""
    good = json.dumps({"instances": [pool[0].decode()]}).encode()
    results = []
    for what, body in bad_requests(pool):
        try:
            status, answer = model.post(body)
            error = answer.get("error", "") if isinstance(answer, dict) else ""
        except (OSError, http.client.HTTPException, ValueError) as failure:
            status, error = None, f"no JSON answer: {failure!r}"
        after, _ = model.post(good)
        results.append(
            {
                "request": what,
                "status": status,
                "error": error[:160],
                "refused_with_json": status is not None
                and 400 <= status < 500
                and bool(error),
                "good_request_after": after,
            }
        )
    return results, process.poll() is None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument("--texts", required=True, help="source sentences, one a line")
    parser.add_argument("--threads", type=int, default=8, help="clients (8)")
    parser.add_argument("--requests", type=int, default=400, help="per server (400)")
    parser.add_argument("--pool", type=int, default=100, help="distinct texts (100)")
    parser.add_argument("--max-words", type=int, default=80, help="longest text (80)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", default=os.devnull, help="the servers' output")
    args = parser.parse_args(argv)
    with open(args.texts, encoding="utf-8") as file:
        sentences = [line.strip() for line in file if line.strip()]
    pool = serve_load.make_pool(sentences, args.pool, args.max_words, args.seed)
    requests = serve_load.make_requests(pool, args.requests, args.seed + 1)

    session = serve_load.SessionModel(args.saved_model)
    serve_load.warm_up(session, pool)
    print(f"Translating the {len(pool)} texts alone...", file=sys.stderr)
    references = serve_load.reference_answers(session, pool)
    rows = {
        "in_process_session": serve_load.run_level(
            [session], pool, requests, args.threads, references
        )
    }
    del session
    with open(args.log, "ab") as log:
        for batching in (False, True):
            process, port = start_server(args.saved_model, batching, log)
            try:
                model = HttpModel(port)
                serve_load.warm_up(model, pool)
                rows[f"http_batching_{'on' if batching else 'off'}"] = (
                    serve_load.run_level(
                        [model], pool, requests, args.threads, references
                    )
                )
                if batching:
                    bad, alive = probe_bad_requests(HttpModel(port), process, pool)
            finally:
                process.terminate()
                process.wait(timeout=60)
    print(
        json.dumps(
            {
                "benchmark": "serve_http",
                "export": args.saved_model,
                "machine": f"{serve_load.cpu_name()}, {os.cpu_count()} cores",
                "clients": args.threads,
                "signatures": list(serve_load.SIGNATURES),
                "rows": rows,
                "all_answers_equal": all(
                    not row["failed"] and not row["differing"] for row in rows.values()
                ),
                "bad_requests": bad,
                "bad_requests_refused": all(
                    item["refused_with_json"] and item["good_request_after"] == 200
                    for item in bad
                ),
                "server_alive_after_bad_requests": alive,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
