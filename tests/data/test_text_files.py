import pytest

from keras_transformer.data.text_files import read_lines


def test_lines_end_at_line_ends_only(tmp_path):
    path = tmp_path / "text"
    text = "\ufeffEins\u2028Zwei\r\nDrei\x0c\x85\rVier\n\nFünf"
    path.write_text(text, encoding="utf-8", newline="")
    assert read_lines(path) == ["Eins\u2028Zwei", "Drei\x0c\x85", "Vier", "", "Fünf"]


def test_a_file_that_is_not_utf8_raises_naming_it(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("Grüße.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt' is not UTF-8 text .*iconv"):
        read_lines(path)
