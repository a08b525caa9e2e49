import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.scorings import (
    NO_HYPOTHESIS,
    SCORINGS,
    check_scoring,
    get_scoring,
    length_penalty,
)

LENGTHS = np.arange(1.0, 10.0)


def test_every_name_has_its_scoring():
    assert [get_scoring(name).name for name in SCORINGS] == list(SCORINGS)
    with pytest.raises(ValueError, match="scoring must be one of .* got 'beam'"):
        get_scoring("beam")
    with pytest.raises(ValueError, match="got None"):
        check_scoring(None)


@pytest.mark.parametrize(
    "name, formula, slots, forces_end",
    [
        ("gnmt", lambda n, alpha: ((5 + n) / 6) ** alpha, 2, False),
        ("transformers", lambda n, alpha: n**alpha, 4, True),
    ],
)
def test_normalizer_slots_and_forced_end(name, formula, slots, forces_end):
    scoring = get_scoring(name)
    for alpha in (0.0, 0.6, 1.0, 2.0):
        expected = formula(LENGTHS, alpha)
        np.testing.assert_allclose(scoring.normalizer(LENGTHS, alpha), expected)
        on_tensors = scoring.normalizer(tf.constant(LENGTHS, tf.float32), alpha)
        np.testing.assert_allclose(on_tensors, expected, rtol=1e-6)
    assert scoring.finished_slots(num_results=2, beam_size=4) == slots
    assert scoring.forces_end_at_limit is forces_end


def test_length_penalty_is_the_gnmt_normalizer():
    np.testing.assert_allclose(length_penalty(LENGTHS, 0.6), ((5 + LENGTHS) / 6) ** 0.6)


def random_state(seed, size=1000):
    rng = np.random.default_rng(seed)
    best_alive = -rng.exponential(2.0, size)  # (B,) log p <= 0
    worst_finished = -rng.exponential(1.0, size)  # (B,)
    limit = rng.integers(2, 12, size).astype("float64")  # (B,)
    length = np.minimum(rng.integers(1, 12, size), limit)  # (B,)
    return best_alive, worst_finished, length, limit


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_gnmt_is_done_exactly_when_no_alive_beam_can_still_win(alpha):
    best_alive, worst_finished, length, limit = random_state(seed=0)
    # The best any continuation can score: its log p only falls, over the
    # length penalty of any length it may still reach.
    reachable = [
        best_alive[i] / length_penalty(np.arange(length[i], limit[i] + 1), alpha)
        for i in range(len(limit))
    ]
    can_win = np.array(
        [np.max(scores) >= worst_finished[i] for i, scores in enumerate(reachable)]
    )
    done = get_scoring("gnmt").is_done(best_alive, worst_finished, length, limit, alpha)
    np.testing.assert_array_equal(done, ~can_win)
    assert done.any() and not done.all()


def test_transformers_is_done_by_the_current_length_once_slots_are_full():
    best_alive, worst_finished, length, limit = random_state(seed=1)
    transformers = get_scoring("transformers")
    done = transformers.is_done(best_alive, worst_finished, length, limit, 1.0)
    np.testing.assert_array_equal(done, best_alive / length <= worst_finished)
    assert done.any() and not done.all()
    empty = np.full_like(worst_finished, NO_HYPOTHESIS)
    assert not transformers.is_done(best_alive, empty, length, limit, 1.0).any()
