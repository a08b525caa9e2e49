"""Concurrent requests merged into batches and split again, as TF Serving does."""

import asyncio
import threading

import numpy as np
import pytest

from keras_transformer.serving.batching import Batcher
from keras_transformer.serving.rest import PredictRequest, Signature, TensorInfo
from keras_transformer.serving.settings import BatchingParameters

STRINGS = TensorInfo(np.dtype(object), (None,))
UPPER = Signature(
    "upper",
    {"text": STRINGS, "extra": TensorInfo(np.dtype(object), (None, None))},
    {"translation": STRINGS},
)
PIECES = Signature(
    "pieces", {"text": STRINGS}, {"pieces": TensorInfo(STRINGS.dtype, (None, None))}
)


class Recorder:
    """Upper-cases each text with its extra phrases; records each batch."""

    def __init__(self, fail_on=None):
        self.batches = []
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def __call__(self, name, inputs):
        with self.lock:
            self.batches.append((name, inputs["text"].tolist()))
        if self.fail_on is not None and self.fail_on in inputs["text"].tolist():
            raise RuntimeError("boom")
        if name == "pieces":
            return {"pieces": np.array([[t] for t in inputs["text"]], object)}
        rows = [
            b"".join([text.upper(), *extra])
            for text, extra in zip(inputs["text"], inputs["extra"], strict=True)
        ]
        return {"translation": np.array(rows, object)}


def request(signature, *texts):
    """A request of `texts`, each with as many extra phrases as it is long."""
    width = max([1, *(len(t) for t in texts)])
    extra = np.full((len(texts), width), b"", object)
    for row, text in enumerate(texts):
        extra[row, : len(text)] = [b"!"] * len(text)
    inputs = {"text": np.array(texts, object), "extra": extra}
    if signature is PIECES:
        inputs = {"text": inputs["text"]}
    return PredictRequest(signature, inputs, True)


def answers(batcher, requests):
    async def all_of_them():
        return await asyncio.gather(*(batcher.predict(r) for r in requests))

    try:
        return [
            a.get("translation", a.get("pieces")).tolist()
            for a in asyncio.run(all_of_them())
        ]
    finally:
        batcher.close()


def test_concurrent_requests_share_batches_and_each_gets_its_own_rows():
    run = Recorder()
    parameters = BatchingParameters(True, max_batch_size=4, batch_timeout_micros=50_000)
    requests = [
        request(UPPER, b"a"),
        request(UPPER, b"bb", b"c"),
        request(UPPER, b"dd"),
        request(UPPER, b"e" * 4, b"f"),
        request(UPPER, *[b"g"] * 5),
    ]
    got = answers(Batcher(run, parameters), requests)
    assert got == [
        [b"A!"],
        [b"BB!!", b"C!"],
        [b"DD!!"],
        [b"EEEE!!!!", b"F!"],
        [b"G!"] * 5,
    ]
    # A full batch of 4 rows, then 2 rows at the timeout; 5 rows run alone.
    assert sorted(len(texts) for _, texts in run.batches) == [2, 4, 5]


def test_without_batching_or_for_rank_two_outputs_each_request_runs_alone():
    for parameters, signature in (
        (BatchingParameters(False), UPPER),
        (BatchingParameters(True, batch_timeout_micros=50_000), PIECES),
    ):
        run = Recorder()
        answers(Batcher(run, parameters), [request(signature, b"a", b"b")] * 3)
        assert [len(texts) for _, texts in run.batches] == [2, 2, 2]


def test_a_failed_batch_fails_its_requests_and_the_next_batch_runs():
    run = Recorder(fail_on=b"x")
    batcher = Batcher(run, BatchingParameters(True, batch_timeout_micros=20_000))

    async def scenario():
        failed = await asyncio.gather(
            batcher.predict(request(UPPER, b"x")),
            batcher.predict(request(UPPER, b"y")),
            return_exceptions=True,
        )
        after = await batcher.predict(request(UPPER, b"z"))
        return failed, after

    try:
        failed, after = asyncio.run(scenario())
    finally:
        batcher.close()
    assert all(isinstance(error, RuntimeError) for error in failed)
    assert after["translation"].tolist() == [b"Z!"]


def test_a_request_cancelled_while_waiting_costs_nothing():
    run = Recorder()
    batcher = Batcher(run, BatchingParameters(True, batch_timeout_micros=100_000))

    async def scenario():
        gone = asyncio.ensure_future(batcher.predict(request(UPPER, b"gone")))
        kept = asyncio.ensure_future(batcher.predict(request(UPPER, b"kept")))
        await asyncio.sleep(0.01)
        gone.cancel()
        return await kept

    try:
        kept = asyncio.run(scenario())
    finally:
        batcher.close()
    assert kept["translation"].tolist() == [b"KEPT!!!!"]
    assert run.batches == [("upper", [b"kept"])]


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="max_batch_size"):
        BatchingParameters(True, max_batch_size=0)
    with pytest.raises(ValueError, match="batch_timeout_micros"):
        BatchingParameters(True, batch_timeout_micros=-1)
