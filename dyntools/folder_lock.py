"""One output folder, one sweep at a time: a lock file that says who holds it.

The lock is ``DIR/.dyntools.lock``, held with ``flock`` (the kernel drops it when its holder dies, even by
SIGKILL: a lock left behind by a dead sweep is *stale* and simply taken over) and holding the holder's pid,
host and start time as JSON, so that a second sweep into the same folder refuses in one line naming them.
The holder removes the file when it is done. Acquiring checks that the file it locked is still the one at
the path (another holder may have removed it in between), so two sweeps can never both believe they hold it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from dyntools.store import LOCK_FILE, StoreError


class FolderBusy(StoreError):
    """Another live process holds the folder's lock."""


def describe(info: dict | None) -> str:
    if not info:
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(info.get("start", 0))))
    return f"pid {info.get('pid')} on {info.get('host')}, started {started}"


def _read(fd: int) -> dict | None:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return info if isinstance(info, dict) else None


def holder(directory: str | os.PathLike) -> dict | None:
    """The live holder of ``directory``'s lock (its JSON), or ``None`` when the folder is free (no lock file,
    or a stale one). Only looks: takes nothing."""
    path = Path(directory) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read(fd) or {}
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def _flock_briefly(fd: int, patience: float = 0.5) -> None:
    """``flock(fd, LOCK_EX)`` trying for ``patience`` seconds (a :func:`holder` probe holds the lock for
    microseconds); ``BlockingIOError`` when it stays held."""
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class FolderLock:
    """``with FolderLock(dir):`` — hold ``dir``'s lock or raise :class:`FolderBusy` at once (never waits).
    :attr:`stale` is the JSON of a dead holder whose lock was taken over (``None`` if there was none)."""

    def __init__(self, directory: str | os.PathLike, option: str = "--out"):
        self.path = Path(directory) / LOCK_FILE
        self.option = option
        self.fd: int | None = None
        self.stale: dict | None = None

    def acquire(self) -> FolderLock:
        try:
            return self._acquire()
        except FolderBusy:
            raise
        except OSError as exc:            # a full disk, a read-only folder: one line naming the option
            raise StoreError(f"Invalid {self.option}: cannot write {self.path} ({exc.strerror or exc})") from None

    def _acquire(self) -> FolderLock:
        for _ in range(100):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                _flock_briefly(fd)
            except BlockingIOError:
                info = _read(fd)
                os.close(fd)
                raise FolderBusy(f"Invalid {self.option}: {self.path.parent} is being written by another sweep "
                                 f"({describe(info)}); wait for it to finish or choose another {self.option}") \
                    from None
            except OSError:               # a file system without flock: unlocked, as before locks existed
                os.close(fd)
                return self
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)                  # removed by its previous holder meanwhile: lock the new file
        else:  # pragma: no cover - a hundred holders in a row
            raise FolderBusy(f"Invalid {self.option}: cannot lock {self.path.parent} (contended)")
        self.stale = _read(fd)
        self.fd = fd
        mine = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "start": time.time()}).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine, 0)
        except OSError:
            self.release()                # the lock file removed again: nothing left behind
            raise
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            if os.path.samestat(os.fstat(self.fd), os.stat(self.path)):
                os.unlink(self.path)      # still ours (we hold it): nobody else can have replaced it
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
