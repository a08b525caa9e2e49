"""Every use of TensorFlow Datasets behaviour that is not its public API.

Each function or class here names the private member or undocumented
behaviour it relies on; tests/data/test_tfds_internals.py checks that TFDS
(pinned in pyproject.toml) still has it, so an upgrade that changes it fails
there, next to the workaround, and not somewhere downstream.
"""

import logging
import tempfile
import threading

import tensorflow_datasets as tfds


def builder_leaving_no_temp_folder(name, data_dir=None):
    """`tfds.builder(name, data_dir=data_dir)`, leaving no folder in the temp dir.

    Relies on: the builder of a dataset that is not prepared in `data_dir`
    calls `DatasetInfo.initialize_from_bucket()` (undocumented) while it is
    made, which makes a `tmp...tfds` folder with `tempfile.mkdtemp` (for the
    dataset's metadata from GCS) and never removes it. `tempfile.mkdtemp`
    makes it in `tempfile.tempdir` as it is when called; pointed at a
    temporary folder while the builder is made, the leftover goes with that
    folder. One thread at a time swaps it.

    Args:
        name: the TFDS name, `"name/config"` or `"name"`.
        data_dir: where TFDS keeps its data (its default when None).

    Returns:
        The `tfds.core.DatasetBuilder`; nothing is downloaded.

    Raises:
        tfds.core.DatasetNotFoundError: no dataset has that name.
    """
    with _TEMPDIR_SWAP, tempfile.TemporaryDirectory() as folder:
        previous, tempfile.tempdir = tempfile.tempdir, folder
        try:
            return tfds.builder(name, data_dir=data_dir)
        finally:
            tempfile.tempdir = previous


# One swap of `tempfile.tempdir` at a time: threads that swapped it at once
# would restore one another's removed folders.
_TEMPDIR_SWAP = threading.Lock()


class LocalBuildMessages:
    """Builder mixin: log that a dataset is built from a local file, not downloaded.

    TFDS prints "Downloading and preparing dataset ..." and "... downloaded
    and prepared" to stdout from `download_and_prepare`. A builder that
    inherits from this class first (`class B(LocalBuildMessages,
    tfds.core.GeneratorBasedBuilder)`) logs "Building NAME from SOURCE in
    DIR." and "Built NAME in DIR." instead, at INFO level, on the logger of
    its own module. `SOURCE` is its `local_source` attribute (a property
    where the path is read at run time).

    Relies on: `tfds.core.DatasetBuilder._log_download_bytes(self)` and
    `_log_download_done(self)`, private methods that `download_and_prepare`
    calls before and after preparing the data, and that print those two
    messages. Were they renamed, TFDS's own messages would come back and
    nothing else would change.
    """

    local_source = None

    def _log_download_bytes(self):
        logging.getLogger(type(self).__module__).info(
            "Building %s from %s in %s.", self.name, self.local_source, self.data_dir
        )

    def _log_download_done(self):
        logging.getLogger(type(self).__module__).info(
            "Built %s in %s.", self.name, self.data_dir
        )
