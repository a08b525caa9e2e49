"""The serving load benchmark on the session's export: it checks what it claims."""

import json
import subprocess
import sys

import pytest

from tests.fixtures.benchmark_scripts import BENCHMARKS, benchmark_module

SCRIPT = BENCHMARKS / "serve_load.py"


@pytest.mark.slow
def test_concurrent_requests_answer_as_alone(exported, held_out, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"{source}\n" for source, _ in held_out))
    arguments = ["--texts", str(texts), "--requests", "80", "--pool", "20"]
    arguments += ["--max-words", "30", "--configs", "2x1", "--config-requests", "40"]
    process = subprocess.run(
        [sys.executable, str(SCRIPT), exported, *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    result = json.loads(process.stdout)
    assert [level["threads"] for level in result["levels"]] == [1, 4, 16]
    for level in result["levels"] + result["configs"]:
        assert level["failed"] == 0, level["failures"]
        assert level["differing"] == 0, level["differing_examples"]
        assert level["sentences"] > level["requests"] > 0
        assert 0 < level["p50_ms"] <= level["p99_ms"]
    assert result["all_answers_equal"]
    assert result["total_requests"] == 240
    assert result["memory_mib"]["within_bound"], result["memory_mib"]


def test_the_load_check_counts_failed_and_differing_answers():
    serve_load = benchmark_module("serve_load")
    pool = [b"a", b"b", b"c"]
    references = {
        (name, index): (text.upper(), -1.0)
        for name in serve_load.SIGNATURES
        for index, text in enumerate(pool)
    }

    class Faulty:
        """Fails on "c" in `beam`, answers "b" wrong, "a" right."""

        def run(self, name, texts, rows=None):
            if name == "beam" and b"c" in texts:
                raise RuntimeError("boom")
            translations = [b"X" if text == b"b" else text.upper() for text in texts]
            return translations, [-1.0] * len(texts)

    requests = serve_load.make_requests(pool, 200, seed=0)
    level = serve_load.run_level([Faulty()], pool, requests, 4, references)
    failing = [r for r in requests if r[0] == "beam" and 2 in r[1]]
    wrong = [r for r in requests if r not in failing and 1 in r[1]]
    assert failing and wrong
    assert level["failed"] == len(failing) and "boom" in level["failures"][0]
    assert level["differing"] == len(wrong)


@pytest.mark.slow
def test_the_http_server_answers_as_the_session_and_refuses_bad_requests(
    exported, held_out, tmp_path
):
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"{source}\n" for source, _ in held_out))
    arguments = ["--texts", str(texts), "--requests", "24", "--pool", "8"]
    arguments += ["--max-words", "20", "--threads", "4"]
    process = subprocess.run(
        [sys.executable, str(BENCHMARKS / "serve_http.py"), exported, *arguments],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    result = json.loads(process.stdout)
    assert set(result["rows"]) == {
        "in_process_session",
        "http_batching_off",
        "http_batching_on",
    }
    for row in result["rows"].values():
        assert row["failed"] == 0, row["failures"]
        assert row["differing"] == 0, row["differing_examples"]
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]
    statuses = {item["request"]: item["status"] for item in result["bad_requests"]}
    assert statuses["10 MB body"] == statuses["1,000 texts"] == 413
    assert statuses["unknown signature"] == 404
    assert result["bad_requests_refused"], result["bad_requests"]
    assert result["server_alive_after_bad_requests"]
