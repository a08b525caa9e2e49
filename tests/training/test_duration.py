"""The default training length (also in tests/recipe/test_plan.py) and the
time estimate."""

import pytest

from keras_transformer.training import duration
from keras_transformer.training.duration import (
    PAPER_CORPUS_TOKENS,
    TimeEstimate,
    default_length,
    paper_budget_tokens,
)

BATCH_SIZES = (1024, 2048, 4096, 25_000)


@pytest.mark.parametrize("tokens_per_batch", BATCH_SIZES)
def test_up_to_dings_size_the_length_is_todays(tokens_per_batch):
    for batches, steps in ((1, 2250), (39, 58 * 39), (75, 2250), (150, 2250)):
        length = default_length(batches, tokens_per_batch, "small")
        assert (length.steps, length.rule) == (steps, "ding")


@pytest.mark.parametrize("preset", ["tiny", "small", "base", "big"])
@pytest.mark.parametrize("tokens_per_batch", BATCH_SIZES)
def test_the_length_grows_continuously_to_the_papers_budget(preset, tokens_per_batch):
    paper_batches = PAPER_CORPUS_TOKENS / tokens_per_batch
    budget_steps = paper_budget_tokens(preset) / tokens_per_batch
    sizes = sorted({151, 600, 5_000, round(paper_batches)} | {150})
    steps = [default_length(b, tokens_per_batch, preset).steps for b in sizes]
    assert steps == sorted(steps)  # never shorter for a larger corpus
    assert default_length(151, tokens_per_batch, preset).steps <= 2250 * 1.05
    below = default_length(int(paper_batches) - 1, tokens_per_batch, preset)
    above = default_length(int(paper_batches) + 1, tokens_per_batch, preset)
    assert (below.rule, above.rule) == ("between", "budget")
    assert below.steps / budget_steps > 0.999 and above.steps == round(budget_steps)
    assert default_length(10**8, tokens_per_batch, preset) == above  # the budget


def test_the_budget_is_in_tokens_seen_whatever_the_batch():
    for tokens_per_batch in BATCH_SIZES:
        steps = default_length(10**7, tokens_per_batch, "base").steps
        assert abs(steps * tokens_per_batch - 2_500_000_000) <= tokens_per_batch
    # The paper's own batches: 100,000 updates for base, 300,000 for big.
    assert default_length(10**6, 25_000, "base").steps == 100_000
    assert default_length(10**6, 25_000, "big").steps == 300_000
    # Presets without a paper budget take base's.
    assert paper_budget_tokens("tiny") == paper_budget_tokens("small") == 25 * 10**8


def test_at_the_papers_corpus_base_trains_about_its_passes():
    batches = 5_400  # WMT14 en-de, a pass of batches of 25,000 tokens
    assert round(default_length(batches, 25_000, "base").steps / batches, 1) == 18.5
    assert round(default_length(batches, 25_000, "big").steps / batches) == 56


def test_a_corpus_without_batches_is_a_value_error():
    with pytest.raises(ValueError, match="batches_per_pass must be >= 1, got 0"):
        default_length(0)


def test_time_estimate_times_updates_then_a_whole_epoch(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(duration.time, "perf_counter", lambda: now[0])
    logged = []
    estimate = TimeEstimate(total_steps=100, log=logged.append, measured_steps=4)
    for epoch in range(3):  # 3 epochs of 10 steps, 2 s an update, 20 s validation
        estimate.on_epoch_begin(epoch)
        for batch in range(10):
            now[0] += 30.0 if epoch == batch == 0 else 2.0  # the first one traces
            estimate.on_train_batch_end(batch)
        now[0] += 20.0
        estimate.on_epoch_end(epoch)
    assert logged == [
        "Estimated training time: 3 min for the updates (2.00 s each), and "
        "validation after each epoch",  # 96 updates left after the 4 timed
        "About 5 min of training left, validation included",  # 80 at 4 s
    ]
