import numpy as np

from keras_transformer.alignment import parse_pharaoh
from keras_transformer.data.alignment_targets import check_alignment_file
from keras_transformer.data.eflomal_alignment import align_corpus


def test_eflomal_finds_the_links_of_a_reordering_dictionary(tmp_path):
    """Targets that are the sources word by word through a dictionary, in
    reverse order: the links written are those, a line per corpus line
    (an empty one for a pair the corpus leaves out)."""
    rng = np.random.default_rng(0)
    sources, targets, truth = [], [], []
    for _ in range(600):
        words = rng.integers(0, 40, size=rng.integers(3, 9))
        sources.append(" ".join(f"w{word}" for word in words))
        targets.append(" ".join(f"W{word}" for word in words[::-1]))
        truth.append({(i, len(words) - 1 - i) for i in range(len(words))})
    sources[5], targets[5], truth[5] = "", "left out", set()
    (tmp_path / "train.src").write_text("".join(line + "\n" for line in sources))
    (tmp_path / "train.tgt").write_text("".join(line + "\n" for line in targets))
    files = (tmp_path / "train.src", tmp_path / "train.tgt")
    path = tmp_path / "train.align"
    links = align_corpus(files, path)
    assert check_alignment_file(path, files) == links
    found = [parse_pharaoh(line)[0] for line in path.read_text().splitlines()]
    assert len(found) == 600 and found[5] == set()
    right = sum(len(links & answer) for links, answer in zip(found, truth, strict=True))
    assert right / links > 0.95  # precision
    assert right / sum(map(len, truth)) > 0.8  # recall
