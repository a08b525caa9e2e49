"""The settings of `keras-transformer serve`: batching and request limits.

Plain dataclasses, imported by the command line before anything heavy.
"""

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """TF Serving's batching parameters (`--enable_batching` and its
    `batching_parameters_file`), the same names and meanings.

    Args:
        enabled: merge concurrent requests; without it each runs alone.
        max_batch_size: the most rows a merged batch holds.
        batch_timeout_micros: how long the first request of a batch waits
            for others, in microseconds.
        num_batch_threads: batches run at once, each on a worker thread
            (default: the number of cores).
    """

    enabled: bool = False
    max_batch_size: int = 32
    batch_timeout_micros: int = 2000
    num_batch_threads: int = dataclasses.field(
        default_factory=lambda: os.cpu_count() or 1
    )

    def __post_init__(self):
        for name in ("max_batch_size", "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.batch_timeout_micros < 0:
            raise ValueError(
                f"batch_timeout_micros must be >= 0, got {self.batch_timeout_micros}."
            )


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """The most one predict request may hold; more is answered 413.

    Args:
        max_body_bytes: the request body's size.
        max_rows: rows (texts) of one request.
        max_characters: characters of one string input.
    """

    max_body_bytes: int = 2 * 1024 * 1024
    max_rows: int = 256
    max_characters: int = 20_000

    def check(self, request):
        """Raises a 413 `RequestError` if `request` (parsed) exceeds them."""
        from keras_transformer.serving.rest import RequestError  # with NumPy

        if request.rows > self.max_rows:
            raise RequestError(
                f"{request.rows} rows; this server takes {self.max_rows} at most "
                "per request (--max-rows).",
                status=413,
            )
        for key, array in request.inputs.items():
            if array.dtype != object:
                continue
            longest = max(
                (len(value.decode("utf-8", "replace")) for value in array.flat),
                default=0,
            )
            if longest > self.max_characters:
                raise RequestError(
                    f"Input {key} holds a string of {longest} characters; this "
                    f"server takes {self.max_characters} at most "
                    "(--max-characters).",
                    status=413,
                )
