"""The README's Python examples run as written, one after another."""

import pathlib
import re

README = pathlib.Path(__file__).parent.parent / "README.md"


def test_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert tuple(namespace["logits"].shape) == (1, 1, 100)


def test_ci_runs_the_readme_test_command():
    lines = README.read_text().splitlines()
    marker = lines.index("<!-- test-command -->")
    assert lines[marker + 2].startswith("python -m pip install")
    assert "pytest" in lines[marker + 2]
