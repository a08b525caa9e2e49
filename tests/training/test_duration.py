"""The training length rule is tested by its doctests and tests/recipe/test_plan.py;
here, the time estimate."""

from keras_transformer.training import duration
from keras_transformer.training.duration import TimeEstimate


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
