import keras
import numpy as np
import pytest
import sacrebleu
import tensorflow as tf

from keras_transformer.evaluation import BleuCallback, corpus_scores, format_scores

HYPOTHESES = ["The cat sat on the mat.", "He reads a book today .", "Good morning"]
REFERENCES = ["The cat sat on a mat.", "He is reading a book today.", "Good morning!"]


def test_scores_equal_sacrebleu():
    scores = corpus_scores(HYPOTHESES, REFERENCES)
    assert scores["bleu"] == sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score
    assert scores["chrf"] == sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score
    assert 0 < scores["bleu"] < 100
    assert "tok:13a" in scores["bleu_signature"]
    assert "case:mixed" in scores["bleu_signature"]
    assert scores["ter"] == sacrebleu.corpus_ter(HYPOTHESES, [REFERENCES]).score
    assert 0 < scores["ter"] < 100 and "tok:tercom" in scores["ter_signature"]


def test_format_scores_prints_ter_and_every_signature():
    scores = corpus_scores(HYPOTHESES, REFERENCES)
    lines = format_scores(scores).splitlines()
    assert lines[0] == (
        f"BLEU {scores['bleu']:.2f}  chrF {scores['chrf']:.2f}  TER {scores['ter']:.2f}"
    )
    assert lines[1:] == [
        f"  {scores[name]}"
        for name in ("bleu_signature", "chrf_signature", "ter_signature")
    ]
    old = {key: scores[key] for key in ("bleu", "chrf", "bleu_signature")}
    assert format_scores(old).splitlines() == [lines[0].split("  TER")[0], lines[1]]


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="2 hypotheses but 3 references"):
        corpus_scores(HYPOTHESES[:2], REFERENCES)


def test_callback_logs_bleu_to_history_and_tensorboard(tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callback = BleuCallback(
        lambda sources: [s.upper() for s in sources],
        ["a b c d", "e f g h"],
        ["A B C D", "E F G X"],
        log_dir=str(tmp_path),
    )
    history = model.fit(
        np.zeros((4, 2)), np.zeros((4, 1)), epochs=2, callbacks=[callback], verbose=0
    )
    expected = corpus_scores(["A B C D", "E F G H"], ["A B C D", "E F G X"])["bleu"]
    assert history.history["val_bleu"] == [expected, expected]
    events = list(tmp_path.glob("events.out.tfevents.*"))
    assert events
    tags = {
        value.tag
        for event in tf.compat.v1.train.summary_iterator(str(events[0]))
        for value in event.summary.value
    }
    assert {"val_bleu", "val_chrf"} <= tags
