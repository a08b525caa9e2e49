"""The README's Python examples run as written, in order, in a scratch folder.

docs/distributed.md continues them and runs after them.
"""

import pathlib
import re

import pytest

from keras_transformer.data import load_ding_pairs

README = pathlib.Path(__file__).parent.parent / "README.md"
DISTRIBUTED = README.parent / "docs" / "distributed.md"


@pytest.mark.slow
def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pairs = load_ding_pairs()["train"][:2000]  # the files the examples read
    (tmp_path / "train.de").write_text("\n".join(de for de, _ in pairs) + "\n")
    (tmp_path / "train.en").write_text("\n".join(en for _, en in pairs) + "\n")
    blocks = [
        (path, block)
        for path in (README, DISTRIBUTED)
        for block in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    ]
    assert len(blocks) >= 5
    namespace = {}
    for path, block in blocks:
        exec(compile(block, str(path), "exec"), namespace)
    # docs/distributed.md trained on 2 batches (Keras 3.15 counts a third
    # iteration at the end of a dataset of unknown length).
    assert namespace["replicated"].optimizer.iterations.numpy() >= 2
    assert tuple(namespace["logits"].shape) == (1, 1, 100)  # the decoding example
    assert (tmp_path / "saved_models" / "my_translator" / "1").is_dir()
    assert (tmp_path / "saved_models" / "translator" / "1").is_dir()


def test_ci_runs_the_readme_test_command():
    lines = README.read_text().splitlines()
    marker = lines.index("<!-- test-command -->")
    assert lines[marker + 2].startswith("python -m pip install")
    assert "pytest" in lines[marker + 2]
