"""`keras-transformer serve` on the session's export: TF Serving's answers,
each row of a merged batch as it would be alone."""

import concurrent.futures
import os

import numpy as np
import pytest
from starlette.testclient import TestClient

from keras_transformer.serving import BatchingParameters, ServedModel, create_app

pytestmark = pytest.mark.slow

URL = "/v1/models/translator:predict"


def controlled_row(index, source):
    """A `controlled` instance whose prefix and controls depend on `index`."""
    return {
        "text": source,
        "prefix": source.split()[-1][:1] if index % 3 == 1 else "",
        "repetition_penalty": 1.0 + (index % 2) * 0.3,
        "no_repeat_ngram_size": index % 4,
        "min_length": index % 5,
        "disable_unk": index % 2 == 0,
        "banned": ["" if index % 3 else source.split()[0][:1]],
        "required": [""] * (1 + index % 2),  # rows of different widths
    }


def test_concurrent_requests_answer_as_tf_serving_would_alone(
    exported, reloaded, held_out
):
    model = ServedModel(os.path.dirname(exported))  # the highest version
    assert (model.name, model.version, model.path) == ("translator", 1, exported)
    sizes = []
    run = model.run

    def recorded_run(name, inputs):
        sizes.append(len(inputs["text"]))
        return run(name, inputs)

    model.run = recorded_run
    batching = BatchingParameters(True, max_batch_size=8, batch_timeout_micros=50_000)
    rows = [controlled_row(i, source) for i, (source, _) in enumerate(held_out[:10])]

    def ask(instances, signature="controlled"):
        body = {"signature_name": signature, "instances": instances}
        answer = http.post(URL, json=body)
        assert answer.status_code == 200, answer.text
        return answer.json()["predictions"]

    with TestClient(create_app(model, batching)) as http:
        alone = [ask([row])[0] for row in rows]
        sizes.clear()
        with concurrent.futures.ThreadPoolExecutor(len(rows)) as pool:
            together = list(pool.map(lambda row: ask([row])[0], rows))
        default = ask([row["text"] for row in rows[:3]], "serving_default")
    assert max(sizes) > 1, sizes  # requests were merged
    for one, merged in zip(alone, together, strict=True):
        assert merged["translation"] == one["translation"]
        assert merged["score"] == pytest.approx(one["score"], abs=1e-4)
    direct = reloaded.signatures["serving_default"](
        text=np.array([row["text"] for row in rows[:3]], object)
    )
    assert [p["translation"] for p in default] == [
        t.decode() for t in direct["translation"].numpy()
    ]
