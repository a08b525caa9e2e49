"""Folders written whole or not at all: the exports' staging folders.

An export is written to a hidden folder beside its destination and renamed
into place when complete, so that a model server (TF Serving scans for
numbered folders) or a reader never sees half of one. After an error the
hidden folder is removed; a process killed mid-export (SIGKILL, a lost
machine) cannot remove it, so each staging folder names its host and
process, and the next export into the same parent deletes those of dead
processes of this host (another host's are left to it).
"""

import contextlib
import os
import re
import shutil
import socket
import tempfile

# `.<name>.partial-<host>-<pid>-<random>`, beside the folder `<name>`.
STAGING = re.compile(r"\.(?P<name>.+)\.partial-(?P<host>.+)-(?P<pid>\d+)-\w+")


@contextlib.contextmanager
def staging_folder(path):
    """A new hidden folder to write; renamed to `path` when the block ends
    without an error, else removed.

    Example:

    >>> parent = tempfile.mkdtemp()
    >>> with staging_folder(os.path.join(parent, "1")) as staging:
    ...     os.path.basename(staging).startswith(".1.partial-")
    ...     open(os.path.join(staging, "saved_model.pb"), "w").close()
    True
    >>> os.listdir(parent), os.listdir(os.path.join(parent, "1"))
    (['1'], ['saved_model.pb'])
    """
    parent, name = os.path.split(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    remove_abandoned_staging(parent)
    staging = tempfile.mkdtemp(
        prefix=f".{name}.partial-{socket.gethostname()}-{os.getpid()}-", dir=parent
    )
    try:
        yield staging
        os.rename(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def remove_abandoned_staging(parent):
    """Deletes the staging folders in `parent` of dead processes of this host.

    Example:

    >>> parent = tempfile.mkdtemp()
    >>> host = socket.gethostname()
    >>> dead = f".2.partial-{host}-{2**22 + 1}-x1"  # above any pid
    >>> live = f".2.partial-{host}-{os.getpid()}-x2"
    >>> for name in ("1", dead, live):
    ...     os.mkdir(os.path.join(parent, name))
    >>> remove_abandoned_staging(parent)
    >>> sorted(os.listdir(parent)) == sorted(["1", live])
    True
    """
    for name in os.listdir(parent):
        staging = STAGING.fullmatch(name)
        if staging and staging["host"] == socket.gethostname():
            if not _alive(int(staging["pid"])):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
