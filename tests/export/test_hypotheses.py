"""n-best lists, sampling and forced-decoding scores: signatures, CTranslate2, CLI."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.cli import main
from keras_transformer.decoding import decode
from keras_transformer.decoding.forced import token_log_probabilities
from keras_transformer.export import CTranslate2Translator, export_ctranslate2
from keras_transformer.export.hypotheses import parse_sampling
from keras_transformer.special_ids import END_ID, START_ID
from tests.export.test_aligning import align
from tests.export.test_saved_model import run_python
from tests.export.test_translator import BAD_INPUTS, LETTERS

pytestmark = pytest.mark.slow

TF1_SIGNATURE_SCRIPT = """
import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the SentencePiece ops

path, name, inputs_file, result_file = sys.argv[1:]
with open(inputs_file) as file:
    inputs = json.load(file)
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
    signature = meta_graph.signature_def[name]
    outputs = session.run(
        {key: info.name for key, info in signature.outputs.items()},
        feed_dict={signature.inputs[k].name: v for k, v in inputs.items()},
    )
assert "keras_transformer" not in sys.modules
with open(result_file, "w") as file:
    json.dump(
        {
            key: (
                np.char.decode(value.astype(bytes), "utf-8")
                if value.dtype == object
                else value
            ).tolist()
            for key, value in outputs.items()
        },
        file,
    )
"""


def nbest(signatures, texts, beam_size=4, alpha=0.0):
    outputs = signatures["nbest"](
        text=tf.constant(texts, tf.string, shape=[len(texts)]),
        beam_size=tf.constant(beam_size),
        alpha=tf.constant(alpha),
    )
    return {key: value.numpy() for key, value in outputs.items()}


def score(signatures, sources, targets):
    outputs = signatures["score"](
        source=tf.constant(sources, tf.string, shape=[len(sources)]),
        target=tf.constant(targets, tf.string, shape=[len(targets)]),
    )
    return {key: value.numpy() for key, value in outputs.items()}


def sample(signatures, texts, top_k=0, top_p=1.0, temperature=1.0, seed=0):
    outputs = signatures["sample"](
        text=tf.constant(texts, tf.string, shape=[len(texts)]),
        top_k=tf.constant(top_k),
        top_p=tf.constant(top_p),
        temperature=tf.constant(temperature),
        seed=tf.constant(seed),
    )
    return {key: value.numpy() for key, value in outputs.items()}


def strings(array):
    return [[text.decode("utf-8") for text in row] for row in array]


def test_nbest_is_the_beam_search_and_its_scores_are_forced_decoding(
    signatures, translator, held_out
):
    texts = [source for source, _ in held_out[:20]]
    result = nbest(signatures, texts, beam_size=4, alpha=0.0)
    assert result["translations"].shape == result["scores"].shape == (20, 4)
    beam = signatures["beam"](
        text=tf.constant(texts), beam_size=tf.constant(4), alpha=tf.constant(0.0)
    )
    np.testing.assert_array_equal(result["translations"][:, 0], beam["translation"])
    np.testing.assert_allclose(result["scores"][:, 0], beam["score"], atol=1e-5)
    assert np.all(np.diff(result["scores"], axis=1) <= 0)  # best first
    # Each hypothesis's beam score (alpha 0) is its forced-decoding score.
    hypotheses = result["translations"].reshape(-1)
    forced = score(signatures, np.repeat(texts, 4).tolist(), hypotheses.tolist())
    np.testing.assert_allclose(forced["score"], result["scores"].reshape(-1), atol=1e-4)
    np.testing.assert_allclose(
        forced["per_token"], forced["score"] / forced["tokens"], rtol=1e-6
    )


def test_forced_decoding_of_beam_ids_gives_the_beam_scores(translator, held_out):
    """The same within 1e-4 on ids, at limits too (no text round trip)."""
    source_ids = translator.source_ids(tf.constant([s for s, _ in held_out[:30]]))
    ids, scores = decode(
        translator.model, source_ids, START_ID, END_ID, 4, 0.0, num_results=4
    )  # (B, 4, L), (B, 4)
    flat = tf.reshape(ids, [-1, ids.shape[-1]])  # (B * 4, L)
    outputs, mask = translator.model.encode(tf.repeat(source_ids, 4, axis=0))
    forced = token_log_probabilities(translator.model, flat, outputs, mask, START_ID)
    np.testing.assert_allclose(
        tf.reduce_sum(forced, axis=1), tf.reshape(scores, [-1]), atol=1e-4
    )


def test_references_score_higher_than_wrong_targets(signatures, held_out):
    sources, targets = (list(side) for side in zip(*held_out[:20], strict=True))
    right = score(signatures, sources, targets)["per_token"]
    wrong = score(signatures, sources, sources)["per_token"]  # not reversed
    assert np.mean(right > wrong) >= 0.9
    assert np.all(right > -1.0)


def test_sample_draws_with_keras_hub_samplers(signatures, held_out):
    texts = [source for source, _ in held_out[:8]]
    greedy = signatures["greedy"](text=tf.constant(texts))
    for settings in ({"top_k": 1}, {"top_p": 1e-6}, {"top_k": 1, "temperature": 9.0}):
        top1 = sample(signatures, texts, **settings)  # the likeliest token only
        np.testing.assert_array_equal(top1["translation"], greedy["translation"])
        np.testing.assert_allclose(top1["score"], greedy["score"], atol=1e-4)
    hot = {"top_p": 1.0, "temperature": 5.0}
    first = sample(signatures, texts, seed=3, **hot)
    again = sample(signatures, texts, seed=3, **hot)
    other = sample(signatures, texts, seed=4, **hot)
    np.testing.assert_array_equal(first["translation"], again["translation"])
    assert list(first["translation"]) != list(other["translation"])
    assert list(first["translation"]) != list(greedy["translation"].numpy())
    assert np.all(first["score"] <= 0) and np.all(np.isfinite(first["score"]))
    # Rows draw independently: one text repeated gives different samples.
    repeated = sample(signatures, [texts[0]] * 8, top_k=50, temperature=5.0)
    assert len(set(repeated["translation"].tolist())) > 1


def test_sample_keeps_the_bad_input_contract(signatures):
    texts = list(BAD_INPUTS.values())
    outputs = sample(signatures, texts, top_k=1, temperature=0.0)
    for key in ("empty", "whitespace"):  # no pieces: "" with score 0
        row = list(BAD_INPUTS).index(key)
        assert outputs["translation"][row] == b"" and outputs["score"][row] == 0.0
    greedy = signatures["greedy"](text=tf.constant(texts))["translation"].numpy()
    np.testing.assert_array_equal(outputs["translation"], greedy)
    for size in (0, 1000):
        batch = sample(signatures, [b"a b c"] * size, top_k=3, top_p=-1.0)
        assert batch["translation"].shape == batch["score"].shape == (size,)
    extreme = sample(signatures, [b"a b"], top_k=10**6, temperature=-1.0)
    assert np.isfinite(extreme["score"]).all()


@pytest.mark.parametrize("name", ["nbest", "score"])
def test_bad_input_decodes_as_it_would_alone(signatures, name):
    texts = list(BAD_INPUTS.values())

    def run(batch):
        if name == "nbest":
            return nbest(signatures, batch, beam_size=3, alpha=0.6)
        return score(signatures, batch, batch[::-1])

    outputs = run(texts)
    for key, value in outputs.items():
        assert value.shape[0] == len(texts), key
    if name == "nbest":
        strings(outputs["translations"])  # valid UTF-8
    for row in range(len(texts)):
        if name == "nbest":
            alone = run([texts[row]])
        else:
            alone = score(signatures, [texts[row]], [texts[::-1][row]])
        for key, value in alone.items():
            if value.dtype.kind == "f":
                np.testing.assert_allclose(outputs[key][row], value[0], atol=1e-4)
            else:
                np.testing.assert_array_equal(outputs[key][row], value[0])
    repaired = BAD_INPUTS["invalid_utf8"].decode("utf-8", errors="replace")
    if name == "nbest":
        for key in ("empty", "whitespace"):  # no pieces: "" with score 0
            nothing = run([BAD_INPUTS[key]])
            assert nothing["translations"].tolist() == [[b""] * 3]
            assert nothing["scores"].tolist() == [[0.0] * 3]
        np.testing.assert_array_equal(
            run([BAD_INPUTS["invalid_utf8"]])["translations"],
            run([repaired])["translations"],
        )
    else:
        empty = score(signatures, ["", "", " "], ["", "a b", ""])
        assert empty["score"].tolist() == [0.0, -np.inf, 0.0]
        assert empty["tokens"].tolist() == [1, 3, 1]
        bad = score(signatures, [BAD_INPUTS["invalid_utf8"]] * 2, [b"a", b"\xff b"])
        fixed = score(signatures, [repaired] * 2, ["a", "\ufffd b"])
        np.testing.assert_allclose(bad["score"], fixed["score"], atol=1e-5)


def test_a_batch_of_zero_and_of_a_thousand(signatures):
    for result in (nbest(signatures, []), score(signatures, [], [])):
        for value in result.values():
            assert value.shape[0] == 0
    rng = np.random.default_rng(3)
    bad = list(BAD_INPUTS.values())
    texts = [
        bad[rng.integers(len(bad))]
        if rng.random() < 0.1
        else " ".join(rng.choice(list(LETTERS), rng.integers(1, 30))).encode()
        for _ in range(1000)
    ]
    targets = texts[::-1]
    batch = score(signatures, texts, targets)
    assert batch["score"].shape == batch["tokens"].shape == (1000,)
    lists = nbest(signatures, texts, beam_size=2)
    assert lists["translations"].shape == (1000, 2)
    for row in rng.choice(1000, 8, replace=False):
        alone = score(signatures, [texts[row]], [targets[row]])
        np.testing.assert_allclose(batch["score"][row], alone["score"][0], atol=1e-4)
        alone = nbest(signatures, [texts[row]], beam_size=2)
        np.testing.assert_array_equal(
            lists["translations"][row], alone["translations"][0]
        )


def test_tf1_session_loader_runs_nbest_score_align_and_sample(
    reloaded, exported, held_out, tmp_path
):
    texts = [source for source, _ in held_out[:5]] + ["", "\ufffd a"]
    for name, inputs in (
        ("nbest", {"text": texts, "beam_size": 3, "alpha": 0.0}),
        ("score", {"source": texts, "target": texts[::-1]}),
        ("align", {"source": texts, "target": texts[::-1]}),
        (
            "sample",
            {"text": texts, "top_k": 0, "top_p": 0.9, "temperature": 2.0, "seed": 5},
        ),
    ):
        inputs_file = tmp_path / f"{name}.json"
        inputs_file.write_text(json.dumps(inputs))
        result = run_python(tmp_path, TF1_SIGNATURE_SCRIPT, exported, name, inputs_file)
        expected = {
            "nbest": lambda: nbest(reloaded.signatures, texts, 3),
            "score": lambda: score(reloaded.signatures, texts, texts[::-1]),
            "align": lambda: align(reloaded.signatures, texts, texts[::-1]),
            "sample": lambda: sample(reloaded.signatures, texts, 0, 0.9, 2.0, 5),
        }[name]()
        assert result.keys() == expected.keys()
        for key, value in expected.items():
            if value.dtype == object:
                assert result[key] == np.char.decode(value.astype(bytes)).tolist()
            else:
                np.testing.assert_allclose(result[key], value, atol=1e-5)


@pytest.fixture(scope="module")
def ctranslate2_path(translator, tmp_path_factory):
    return export_ctranslate2(translator, tmp_path_factory.mktemp("ct2") / "model")


@pytest.mark.parametrize("beam_size", [1, 4])
def test_ctranslate2_hypotheses_and_scores_agree_with_ours(
    translator, ctranslate2_path, held_out, beam_size
):
    """The best hypothesis is ours; every score is our forced decoding's.

    Below the first, the lists may differ: CTranslate2 stops once
    `beam_size` hypotheses have ended, ours once none alive can win.
    """
    exported = CTranslate2Translator(ctranslate2_path)
    texts = [source for source, _ in held_out[:20]] + [""]
    lists = exported.hypotheses(texts, beam_size, beam_size, 0.0)
    ours = nbest(translator.signatures(), texts, beam_size, 0.0)
    assert [row[0][1] for row in lists] == [
        row[0] for row in strings(ours["translations"])
    ]
    np.testing.assert_allclose(
        [row[0][0] for row in lists], ours["scores"][:, 0], atol=1e-3
    )
    sources = [text for text, row in zip(texts, lists, strict=True) for _ in row]
    hypotheses = [text for row in lists for _, text in row]
    forced = score(translator.signatures(), sources, hypotheses)
    np.testing.assert_allclose(
        [value for row in lists for value, _ in row], forced["score"], atol=1e-3
    )
    scored = np.array(exported.score(sources, hypotheses))  # (N, 2)
    np.testing.assert_allclose(scored[:, 0], forced["score"], atol=1e-3)
    np.testing.assert_array_equal(scored[:, 1], forced["tokens"])
    # Hypotheses in both lists have the same scores.
    ours_by_text = [
        dict(zip(row, values, strict=True))
        for row, values in zip(
            strings(ours["translations"]), ours["scores"], strict=True
        )
    ]
    same = np.array(
        [
            (value, ours_by_text[row][text])
            for row, hypotheses in enumerate(lists)
            for value, text in hypotheses
            if text in ours_by_text[row]
        ]
    )  # (M, 2)
    assert len(same) >= len(texts) * beam_size * 0.7
    np.testing.assert_allclose(same[:, 0], same[:, 1], atol=1e-3)


def test_ctranslate2_sampling_draws_from_the_model(ctranslate2_path, held_out):
    exported = CTranslate2Translator(ctranslate2_path)
    texts = [source for source, _ in held_out[:10]]
    top1 = exported.hypotheses(texts, 2, sampling=("topk", 1))
    greedy = exported.translate(texts, 1, 0.0)
    assert [[text for _, text in row] for row in top1] == [[t, t] for t in greedy]
    hot = exported.hypotheses(texts, 1, sampling=("topp", 1.0), temperature=50.0)
    assert [row[0][1] for row in hot] != greedy


def run_cli(capsys, *arguments):
    main([str(argument) for argument in arguments])
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("engine", ["saved_model", "ctranslate2"])
def test_translate_n_best_writes_index_score_hypothesis_lines(
    engine, exported, ctranslate2_path, translator, held_out, tmp_path, capsys
):
    path = exported if engine == "saved_model" else ctranslate2_path
    texts = [source for source, _ in held_out[:4]]
    sources = tmp_path / "sources.txt"
    sources.write_text("\n".join([texts[0], "", *texts[1:]]) + "\n")
    lines = run_cli(capsys, "translate", path, sources, "--n-best", 3, "--alpha", 0)
    rows = [line.split("\t") for line in lines]
    assert [int(index) for index, _, _ in rows] == [i for i in range(5) for _ in "abc"]
    inputs = [texts[0], "", *texts[1:]]
    # The beam is the export's size (4) or K, whichever is larger.
    ours = nbest(translator.signatures(), inputs, 4, 0.0)
    best = [row[0] for row in strings(ours["translations"])]
    sums = [float(value) for _, value, _ in rows]
    if engine == "saved_model":
        expected = [row[:3] for row in strings(ours["translations"])]
        assert [text for _, _, text in rows] == sum(expected, [])
        np.testing.assert_allclose(sums, ours["scores"][:, :3].reshape(-1), atol=1e-5)
    else:  # the best is ours (see above), every score its forced decoding's
        assert [text for _, _, text in rows[::3]] == best
    hypotheses = [text for _, _, text in rows]
    forced = score(translator.signatures(), np.repeat(inputs, 3).tolist(), hypotheses)
    np.testing.assert_allclose(sums, forced["score"], atol=1e-3)


@pytest.mark.parametrize("engine", ["saved_model", "ctranslate2"])
def test_score_command_agrees_with_greedy_scores(
    engine, exported, ctranslate2_path, translator, held_out, tmp_path, capsys
):
    path = exported if engine == "saved_model" else ctranslate2_path
    texts = [source for source, _ in held_out[:6]] + [""]
    greedy = translator.greedy(tf.constant(texts))
    hypotheses = [text.decode() for text in greedy["translation"].numpy()]
    sources, targets = tmp_path / "sources.txt", tmp_path / "targets.txt"
    sources.write_text("".join(f"{text}\n" for text in texts))
    targets.write_text("".join(f"{text}\n" for text in hypotheses))
    lines = run_cli(capsys, "score", path, sources, targets, "--batch-size", 4)
    sums, per_token = np.array([line.split("\t") for line in lines], float).T
    atol = 1e-4 if engine == "saved_model" else 1e-3
    np.testing.assert_allclose(sums, greedy["score"], atol=atol)
    tokens = score(translator.signatures(), texts, hypotheses)["tokens"]
    np.testing.assert_allclose(per_token, sums / tokens, atol=1e-5)


@pytest.mark.parametrize("engine", ["saved_model", "ctranslate2"])
def test_translate_sampling(
    engine, exported, ctranslate2_path, translator, held_out, capsys
):
    path = exported if engine == "saved_model" else ctranslate2_path
    texts = [source for source, _ in held_out[:3]]
    top1 = run_cli(capsys, "translate", path, *texts, "--sampling", "topk:1")
    greedy = translator.greedy(tf.constant(texts))["translation"].numpy()
    assert top1 == [text.decode() for text in greedy]
    hot = ("--sampling", "topp:0.9", "--temperature", 3, "--n-best", 3)
    lines = run_cli(capsys, "translate", path, *texts, *hot, "--seed", 7)
    assert [line.split("\t")[0] for line in lines] == [
        str(i) for i in range(3) for _ in "abc"
    ]
    assert lines == run_cli(capsys, "translate", path, *texts, *hot, "--seed", 7)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--n-best", "0"], "--n-best must be >= 1, got 0"),
        (["--n-best", "5", "--beam-size", "2"], "--n-best 5 needs --beam-size >= 5"),
        (["--sampling", "topk:0"], "--sampling takes topk:K"),
        (["--sampling", "top:3"], "--sampling takes topk:K"),
        (["--sampling", "topp:1.5"], "--sampling takes topk:K"),
        (["--temperature", "2"], "--temperature and --seed go with --sampling"),
        (["--seed", "2"], "--temperature and --seed go with --sampling"),
        (["--sampling", "topk:5", "--temperature", "0"], "--temperature must be > 0"),
        (["--n-best", "2", "--signature", "greedy"], "do not go with --signature"),
    ],
)
def test_bad_flags_are_one_line_errors(exported, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", exported, "a b c", *arguments])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("keras-transformer: error: ") and message in error
    assert error.count("\n") == 1


def test_score_files_of_different_lengths_are_a_one_line_error(
    exported, tmp_path, capsys
):
    sources, targets = tmp_path / "sources.txt", tmp_path / "targets.txt"
    sources.write_text("a b\nc d\n")
    targets.write_text("b a\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["score", exported, str(sources), str(targets)])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert "different numbers of lines" in error and error.count("\n") == 1


def test_ctranslate2_alignments_are_the_saved_model_s(
    exported, ctranslate2_path, held_out, capsys, tmp_path
):
    """CTranslate2 returns the attention of the layer and heads the export
    set (the model config's), so its links are the SavedModel's."""
    sources = [source for source, _ in held_out[:6]] + ["", "a b"]
    targets = [target for _, target in held_out[:6]] + ["a", ""]
    lines = {}
    for engine, path in (("saved_model", exported), ("ct2", ctranslate2_path)):
        files = []
        for name, texts in (("sources", sources), ("targets", targets)):
            (tmp_path / name).write_text("".join(f"{text}\n" for text in texts))
            files.append(str(tmp_path / name))
        lines[engine] = run_cli(capsys, "align", path, *files, "--batch-size", 3)
    assert lines["ct2"] == lines["saved_model"]
    assert all(lines["ct2"][:6]) and lines["ct2"][6:] == ["", ""]


def test_parse_sampling():
    assert parse_sampling("topk:40") == ("topk", 40)
    assert parse_sampling("topp:0.95") == ("topp", 0.95)
    for bad in ("topk", "topk:2.5", "topp:0", "nucleus:0.9", "topp:x"):
        with pytest.raises(ValueError, match="sampling takes"):
            parse_sampling(bad)


def test_ctranslate2_markup_is_the_saved_model_s_without_banned_phrases(
    exported, ctranslate2_path, capsys, tmp_path
):
    """A CTranslate2 export has no banned phrases: `--markup` translates
    without them (the spans it writes are taken out instead), with the
    SavedModel's alignments, so the same markup lands in the same place."""
    inputs = tmp_path / "inputs"
    inputs.write_text("f %s g h\na <b>b c</b> d %d\n")
    lines = {
        engine: run_cli(capsys, "translate", path, inputs, "--markup", "xml")
        for engine, path in (("saved_model", exported), ("ct2", ctranslate2_path))
    }
    assert lines["ct2"] == lines["saved_model"]
    assert [line.count("%") for line in lines["ct2"]] == [1, 1]
    assert "<b>" in lines["ct2"][1] and "</b>" in lines["ct2"][1]
