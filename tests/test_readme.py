"""The Python examples of README.md and of the guides (docs/guides/*.md) run
as written, in a scratch folder holding the files they read.

Each page's blocks run in order, in one namespace per page; a page that
continues another (`CONTINUES`, said on the page too) starts from a copy of
that page's names. A block that cannot run in a test (it needs a server, a
download or a GPU) has `<!-- not run: why -->` on the line before its fence.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parent.parent
README = ROOT / "README.md"
GUIDES = ROOT / "docs" / "guides"
PAGES = [README, *sorted(GUIDES.glob("*.md"))]
# page -> the page whose names it uses
CONTINUES = {
    "several-devices.md": "training-your-own-text.md",
    "serving.md": "training-your-own-text.md",
    "controlling-the-translation.md": "training-your-own-text.md",
}
FENCE = re.compile(r"^```(\S*)\n(.*?)^```", flags=re.S | re.M)
NOT_RUN = re.compile(r"<!-- not run: \S.* -->")


def python_blocks(path):
    """(line before the code, code, whether it runs) of each Python block."""
    text = path.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        line = text.count("\n", 0, match.start(2))  # lines above the code
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append((line, match.group(2), not NOT_RUN.fullmatch(before.strip())))
    return blocks


def run_page(path, namespace):
    """Runs `path`'s Python blocks in `namespace`; tracebacks name the page's
    own line numbers."""
    for line, code, runs in python_blocks(path):
        if runs:
            exec(compile("\n" * line + code, str(path), "exec"), namespace)
    return namespace


@pytest.mark.slow
def test_python_examples_run(tmp_path, monkeypatch):
    from keras_transformer.data import load_ding_pairs

    monkeypatch.chdir(tmp_path)
    pairs = load_ding_pairs()["train"][:2000]  # the files the examples read
    (tmp_path / "train.de").write_text("\n".join(de for de, _ in pairs) + "\n")
    (tmp_path / "train.en").write_text("\n".join(en for _, en in pairs) + "\n")
    names = {}
    for path in sorted(PAGES, key=lambda page: page.name in CONTINUES):
        start = dict(names[CONTINUES[path.name]]) if path.name in CONTINUES else {}
        names[path.name] = run_page(path, start)

    assert names["README.md"]["model"].optimizer.iterations.numpy() > 0
    assert tuple(names["composing-layers.md"]["logits"].shape) == (1, 1, 100)
    assert names["other-backends.md"]["model"].optimizer.iterations.numpy() > 0
    # Trained on 2 batches (Keras 3.15 counts a third iteration at the end of
    # a dataset of unknown length).
    replicated = names["several-devices.md"]["replicated"]
    assert replicated.optimizer.iterations.numpy() >= 2
    assert (tmp_path / "saved_models" / "my_translator" / "1").is_dir()
    assert (tmp_path / "saved_models" / "translator" / "1").is_dir()


@pytest.mark.slow
def test_the_other_backends_page_runs_on_jax_without_tensorflow(tmp_path):
    pytest.importorskip("jax")
    from tests.fixtures.backends import run_python

    page = GUIDES / "other-backends.md"
    code = "".join(code for _, code, runs in python_blocks(page) if runs)
    output = run_python(tmp_path, code, "jax", tensorflow=False, timeout=600)
    assert output.split()[:2] == ["jax", "2"]  # 64 pairs: 2 updates


def test_every_python_block_runs_or_says_why_not():
    counts = {path.name: len(python_blocks(path)) for path in PAGES}
    assert counts["README.md"] >= 1
    for page in ("composing-layers.md", "training-your-own-text.md"):
        assert counts[page] >= 1, page
    for page, parent in CONTINUES.items():
        assert parent in {path.name for path in PAGES}
        assert f"]({parent}#" in (GUIDES / page).read_text(), page  # said
    not_run = [
        (path.name, line)
        for path in PAGES
        for line, _, runs in python_blocks(path)
        if not runs
    ]
    assert [page for page, _ in not_run] == ["serving.md"]  # the gRPC client
    for path in PAGES:  # a Python block under another name would not run
        fences = {match.group(1) for match in FENCE.finditer(path.read_text())}
        assert not fences & {"py", "python3", "pycon", "Python"}, path.name


def test_ci_runs_the_readme_test_command():
    lines = README.read_text().splitlines()
    marker = lines.index("<!-- test-command -->")
    command = lines[marker + 2]
    assert command.startswith("python -m pip install")
    assert "pytest" in command
    assert "ruff format --check . && mkdocs build --strict && " in command
    # Getting started shows the same command.
    assert command in (GUIDES / "getting-started.md").read_text().splitlines()


def test_the_command_line_guide_names_every_option():
    import argparse

    from keras_transformer import cli

    commands = argparse.ArgumentParser().add_subparsers()
    for name in dir(cli):  # the parsers `keras-transformer` is made of
        if name.startswith("add_") and name.endswith("_parser"):
            getattr(cli, name)(commands)
    guide = (GUIDES / "command-line.md").read_text()
    assert len(commands.choices) >= 9
    for command, parser in commands.choices.items():
        section = guide.split(f"\n## {command}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option not in ("--help",):
                    if not option.startswith("--no-"):
                        assert f"`{option}" in section, (command, option)
