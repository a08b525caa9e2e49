"""One writer per run folder: an exclusive `fcntl.flock` on its lock file.

`train`, `average` and `import-marian` hold the lock of the run folder they
write while they run; a second writer is refused at once, with the holder's
process id and host. The operating system releases a `flock` when its
holder's process ends, however it ends (kill -9 included), so a lock file
left behind by a dead process is taken over without a question: resuming
after a crash or a reboot needs no manual step.

`flock` is reliable on local disks. On NFS, Linux emulates it with POSIX
byte-range locks, which work across machines where the server runs a lock
manager; other network file systems (some FUSE mounts, SMB) may only lock
between processes of one machine. Where Python has no `fcntl` (Windows),
nothing is locked and a warning says so.
"""

import contextlib
import datetime
import json
import os
import socket
import sys
import warnings

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None


# The lock files this process holds: taking one again is a no-op, so the
# command line can lock a folder before it imports TensorFlow (a quick
# refusal) and the run it starts locks it too (for callers of `run`).
_HELD = set()


class RunFolderInUse(OSError):
    """Another process holds the run folder's lock."""


@contextlib.contextmanager
def hold_lock(lock_path, folder, remove_folder=False):
    """Holds the exclusive lock on `lock_path` (of run folder `folder`).

    The lock file holds the holder's {"pid", "host", "command", "since"},
    for the message a second writer gets. A holder that ends normally
    leaves no trace in a folder it wrote nothing else to: the lock file
    goes, and with `remove_folder` (the caller made the folder for it) the
    folder too. A lock this process holds already is held again without a
    check.

    Raises:
        RunFolderInUse: a live process holds it, in one line: the folder,
            the holder, and what to do.

    Example:

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> lock = os.path.join(folder, ".lock")
    >>> with hold_lock(lock, folder):
    ...     with hold_lock(lock, folder):  # this process holds it already
    ...         print(json.load(open(lock))["pid"] == os.getpid())
    True
    >>> os.listdir(folder)  # nothing else was written: no trace
    []
    """
    if fcntl is None:
        warnings.warn(
            f"No fcntl here: {folder} is not locked against a second writer.",
            stacklevel=3,
        )
        yield
        return
    key = os.path.realpath(lock_path)
    if key in _HELD:
        yield
        return
    with _locked_file(lock_path, folder) as file:
        _HELD.add(key)
        try:
            file.truncate(0)
            json.dump(_holder(), file)
            file.flush()
            yield
        finally:
            _HELD.discard(key)
            if os.listdir(folder) == [os.path.basename(lock_path)]:
                os.remove(lock_path)  # a waiting opener sees it gone and retries
                if remove_folder:
                    os.rmdir(folder)


@contextlib.contextmanager
def _locked_file(lock_path, folder):
    """The lock file, open and locked; it is the one at `lock_path` (a
    holder that ended may have removed the file this process opened)."""
    while True:
        with open(lock_path, "a+", encoding="utf-8") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunFolderInUse(_in_use_message(lock_path, folder)) from None
            try:
                if _same_file(file, lock_path):
                    yield file
                    return
            finally:
                fcntl.flock(file, fcntl.LOCK_UN)


def _same_file(file, path):
    try:
        return os.fstat(file.fileno()).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _holder():
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]),
        "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def _in_use_message(lock_path, folder):
    try:
        with open(lock_path, encoding="utf-8") as file:
            holder = json.load(file)
        who = (
            f"process {holder['pid']} on {holder['host']} "
            f"({holder['command']!r}, since {holder['since']})"
        )
    except (OSError, ValueError, KeyError):  # written this very moment
        who = "another process"
    return (
        f"{folder} is in use by {who}: wait for it to end or stop it, "
        "or write to another folder."
    )
