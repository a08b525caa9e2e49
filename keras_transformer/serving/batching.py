"""Requests merged into batches, as TF Serving's batcher merges them.

`Batcher.predict` is awaited on the server's event loop; the model runs in
a pool of worker threads (TF Serving's `num_batch_threads`), so the loop
keeps answering while it works. With batching on, the requests of one
signature that arrive within `batch_timeout_micros` of the first, and
agree on their scalar inputs (the `beam` signature's `beam_size`, say),
run as one batch of up to `max_batch_size` rows; each request gets its own
rows back. A request is merged only where its signature answers one value
per row (`Signature.rows_out`); a request of `max_batch_size` rows or more
runs alone, whole. Row inputs of different widths (the `controlled`
signature's `banned` phrases, `(B, N)`) are padded to the widest, strings
with `""` and numbers with 0, as the signatures take them padded.

A request whose caller stops waiting (its task cancelled: the client went
away) is dropped from the queue if its batch has not started, and costs
nothing further.
"""

import asyncio
import concurrent.futures
import dataclasses

import numpy as np


@dataclasses.dataclass
class _Waiting:
    request: object  # a rest.PredictRequest
    future: asyncio.Future


class Batcher:
    """Runs `run(signature_name, inputs)` (blocking; a dict of arrays in,
    a dict of arrays out) for requests, merged as `parameters` say.

    Args:
        run: the model's function.
        parameters: a `BatchingParameters`.
    """

    def __init__(self, run, parameters):
        self._run = run
        self.parameters = parameters
        self._pool = concurrent.futures.ThreadPoolExecutor(
            parameters.num_batch_threads, thread_name_prefix="batch"
        )
        self._queues = {}  # batch key -> [_Waiting]
        self._timers = {}  # batch key -> the handle that starts its batch
        self._running = set()  # the batches' tasks, held until done

    def close(self):
        """Lets the running batches finish and stops the worker threads."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    async def predict(self, request):
        """The output arrays of `request` (a `rest.PredictRequest`)."""
        loop = asyncio.get_running_loop()
        parameters = self.parameters
        if (
            not parameters.enabled
            or not request.signature.rows_out
            or request.rows >= parameters.max_batch_size
        ):
            return await loop.run_in_executor(
                self._pool, self._run, request.signature.name, request.inputs
            )
        key = _batch_key(request)
        queue = self._queues.setdefault(key, [])
        waiting = _Waiting(request, loop.create_future())
        queue.append(waiting)
        if sum(item.request.rows for item in queue) >= parameters.max_batch_size:
            self._start(key)
        elif key not in self._timers:
            self._wait(key)
        return await waiting.future

    def _wait(self, key):
        """Starts `key`'s batch when the first of it has waited its time."""
        self._timers[key] = asyncio.get_running_loop().call_later(
            self.parameters.batch_timeout_micros / 1e6, self._start, key
        )

    def _start(self, key):
        """Starts a batch of the requests waiting under `key` (up to
        `max_batch_size` rows); those left over wait for a new timeout."""
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        queue = [item for item in self._queues.pop(key, []) if not item.future.done()]
        batch, rows = [], 0
        while queue and rows + queue[0].request.rows <= self.parameters.max_batch_size:
            rows += queue[0].request.rows
            batch.append(queue.pop(0))
        if queue:
            self._queues[key] = queue
            self._wait(key)
        if batch:
            task = asyncio.ensure_future(self._run_batch(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run_batch(self, batch):
        """Runs the merged batch and hands each request its rows."""
        loop = asyncio.get_running_loop()
        name = batch[0].request.signature.name
        inputs = merge_rows([item.request.inputs for item in batch])
        try:
            outputs = await loop.run_in_executor(self._pool, self._run, name, inputs)
        except Exception as error:  # each waiting request hears of it
            for item in batch:
                if not item.future.done():
                    item.future.set_exception(error)
            return
        start = 0
        for item in batch:
            end = start + item.request.rows
            if not item.future.done():
                item.future.set_result(
                    {key: array[start:end] for key, array in outputs.items()}
                )
            start = end


def _batch_key(request):
    """Requests merge when they share the signature and its scalar inputs."""
    scalars = tuple(
        (key, array.item()) for key, array in request.inputs.items() if not array.ndim
    )
    return request.signature.name, scalars


def merge_rows(inputs):
    """One dict of arrays of a list of requests' inputs: scalars as the
    first request's, row inputs concatenated, padded to the widest.

    >>> merged = merge_rows([
    ...     {"text": np.array([b"a"], object), "banned": np.array([[b"x"]], object)},
    ...     {"text": np.array([b"b"], object),
    ...      "banned": np.array([[b"y", b"z"]], object)},
    ... ])
    >>> merged["banned"].tolist()
    [[b'x', b''], [b'y', b'z']]
    """
    merged = {}
    for key, first in inputs[0].items():
        if not first.ndim:
            merged[key] = first
            continue
        arrays = [request[key] for request in inputs]
        width = tuple(np.max([array.shape[1:] for array in arrays], axis=0))
        merged[key] = np.concatenate([_padded(array, width) for array in arrays])
    return merged


def _padded(array, width):
    """`array` padded after its first dimension to `width`: strings with
    `""`, numbers with 0."""
    if array.shape[1:] == width:
        return array
    padded = np.full((len(array), *width), b"" if array.dtype == object else 0)
    padded = padded.astype(array.dtype)
    padded[tuple(slice(0, size) for size in array.shape)] = array
    return padded
