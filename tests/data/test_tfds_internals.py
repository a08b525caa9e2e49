"""The TFDS behaviour that `keras_transformer.data.tfds_internals` relies on.

Each test fails when an upgrade of tensorflow-datasets changes what one of
its workarounds relies on: fix or remove the workaround then.
"""

import inspect
import logging
import tempfile

import pytest
import tensorflow_datasets as tfds

from keras_transformer.data import tfds_internals
from keras_transformer.data.tfds_ding import DingDeEn


class TinyLines(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """A one-example dataset, built in milliseconds."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}),
        )

    def _split_generators(self, dl_manager):
        del dl_manager
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        yield 0, {"text": "Hallo."}


class LocalTinyLines(
    tfds_internals.LocalBuildMessages, TinyLines, skip_registration=True
):
    local_source = "/somewhere/lines.txt"


@pytest.fixture
def temp(tmp_path, monkeypatch):
    """An empty folder that `tempfile` uses as the temp dir."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# LocalBuildMessages


@pytest.mark.parametrize("name", ["_log_download_bytes", "_log_download_done"])
def test_the_download_message_hooks_are_methods_taking_only_self(name):
    hook = getattr(tfds.core.DatasetBuilder, name, None)
    assert callable(hook), f"tfds.core.DatasetBuilder.{name} is gone"
    assert list(inspect.signature(hook).parameters) == ["self"]


def test_the_hooks_print_the_download_messages(tmp_path, temp, capsys):
    TinyLines(data_dir=str(tmp_path / "tfds")).download_and_prepare()
    printed = capsys.readouterr().out
    assert "Downloading and preparing dataset" in printed
    assert "downloaded and prepared" in printed


def test_download_and_prepare_logs_the_local_build_instead(
    tmp_path, temp, capsys, caplog
):
    caplog.set_level(logging.INFO, logger=__name__)
    builder = LocalTinyLines(data_dir=str(tmp_path / "tfds"))
    builder.download_and_prepare()
    printed = capsys.readouterr().out
    assert "Downloading and preparing" not in printed
    assert "downloaded and prepared" not in printed
    assert [
        record.getMessage() for record in caplog.records if record.name == __name__
    ] == [
        f"Building local_tiny_lines from /somewhere/lines.txt in {builder.data_dir}.",
        f"Built local_tiny_lines in {builder.data_dir}.",
    ]


# builder_leaving_no_temp_folder


def test_an_unprepared_builder_leaves_a_folder_in_the_tempfile_temp_dir(tmp_path, temp):
    tfds.builder(DingDeEn.name, data_dir=str(tmp_path / "tfds"))
    leftovers = [path.name for path in temp.iterdir()]
    assert len(leftovers) == 1 and leftovers[0].endswith("tfds"), leftovers


def test_builder_leaving_no_temp_folder(tmp_path, temp):
    data_dir = str(tmp_path / "tfds")
    builder = tfds_internals.builder_leaving_no_temp_folder(DingDeEn.name, data_dir)
    assert isinstance(builder, DingDeEn) and builder.data_dir.startswith(data_dir)
    assert list(temp.iterdir()) == []
    assert tempfile.tempdir == str(temp)
