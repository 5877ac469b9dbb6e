"""One output folder, one sweep at a time: a lock file that says who holds it.

The lock is ``DIR/.dyntools.lock``, held with ``flock`` (the kernel drops it when its holder dies, even by
SIGKILL: a lock left behind by a dead sweep is *stale* and simply taken over) and holding the holder's pid,
host and start time as JSON, so that a second sweep into the same folder refuses in one line naming them.
The holder removes the file when it is done. Acquiring checks that the file it locked is still the one at
the path (another holder may have removed it in between), so two sweeps can never both believe they hold it.

**A file system without flock** (NFS mounted without a lock manager, some FUSE mounts) answers ``flock`` with
``ENOLCK``, ``EOPNOTSUPP`` / ``ENOTSUP``, ``ENOSYS`` or ``EINVAL`` (:data:`NO_FLOCK`). There the lock is the
file's *existence*: whoever creates ``.dyntools.lock`` with ``O_CREAT | O_EXCL`` (atomic, NFSv3 and later) holds
it, writes its pid, host and start into it and, while it holds it, touches it every :data:`HEARTBEAT` seconds.
Nothing dies with the holder, so staleness is judged from the file (:func:`exclusive_holder_alive`): on the same
host, the holder's pid no longer runs; on another host (whose pids mean nothing here), the file was not touched
for :data:`STALE_AFTER` seconds (the hosts' clocks, or the file server's, must agree to within minutes); an
empty or unreadable file (a holder between creating and writing it) is stale after :data:`CREATE_GRACE`
seconds. A stale file is renamed away, checked to be the very file judged stale (else put back), and removed;
then the exclusive create is tried again. Any other error of ``flock`` (``EIO`` …) refuses in one line naming
the folder: a sweep never runs unlocked without saying so.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import threading
import time
from pathlib import Path

from dyntools.store import LOCK_FILE, StoreError


class FolderBusy(StoreError):
    """Another live process holds the folder's lock."""


#: ``flock``'s errors on a file system that has no flock: the lock falls back to an exclusively created file.
NO_FLOCK = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EINVAL})
#: Seconds between two touches of an exclusive lock file by its holder.
HEARTBEAT = 60.0
#: An exclusive lock file of another host untouched for this many seconds is stale (10 heartbeats).
STALE_AFTER = 600.0
#: An empty or unreadable exclusive lock file older than this is stale (its creator died before writing it).
CREATE_GRACE = 30.0


def no_flock(exc: OSError) -> bool:
    """Whether ``exc`` (raised by ``flock``) says the file system has no flock."""
    return exc.errno in NO_FLOCK


def _pid_runs(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:             # another user's process: it runs
        return True
    except (OSError, TypeError, ValueError, OverflowError):
        return False
    return True


def exclusive_holder_alive(info: dict | None, mtime: float, now: float | None = None) -> bool:
    """Whether the holder of an exclusive lock file (its JSON ``info``, ``None`` when empty or unreadable; the
    file's modification time ``mtime``) still holds it — the staleness rules of the module docstring."""
    age = (time.time() if now is None else now) - mtime
    if not info:
        return age < CREATE_GRACE
    if info.get("host") == socket.gethostname():
        return _pid_runs(info.get("pid"))
    return age < STALE_AFTER


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
    except OSError as exc:
        if not no_flock(exc):
            return None                   # acquiring says what is wrong
        info = _read(fd)
        return (info or {}) if exclusive_holder_alive(info, os.fstat(fd).st_mtime) else None
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
        #: ``"flock"``, or ``"exclusive file"`` on a file system without flock (see the module docstring)
        self.mode: str | None = None
        self._beating: threading.Event | None = None

    def acquire(self) -> FolderLock:
        try:
            return self._acquire()
        except FolderBusy:
            raise
        except OSError as exc:            # a full disk, a read-only folder: one line naming the option
            raise StoreError(f"Invalid {self.option}: cannot write {self.path} ({exc.strerror or exc})") from None

    def _busy(self, info: dict | None) -> FolderBusy:
        return FolderBusy(f"Invalid {self.option}: {self.path.parent} is being written by another sweep "
                          f"({describe(info)}); wait for it to finish or choose another {self.option}")

    def _open(self) -> tuple[int, bool]:
        """The lock file's descriptor, and whether this call created it (exclusively)."""
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644), True
        except FileExistsError:
            return os.open(self.path, os.O_RDWR | os.O_CLOEXEC), False

    def _acquire(self) -> FolderLock:
        for _ in range(100):
            try:
                fd, created = self._open()
            except FileNotFoundError:     # removed between the two opens: try again
                continue
            try:
                _flock_briefly(fd)
            except BlockingIOError:
                info = _read(fd)
                os.close(fd)
                raise self._busy(info) from None
            except OSError as exc:
                if no_flock(exc):         # NFS without locking, some FUSE mounts: the exclusive file decides
                    if self._exclusive(fd, created):
                        return self
                    continue
                os.close(fd)
                if created:
                    self.path.unlink(missing_ok=True)
                raise StoreError(f"Invalid {self.option}: cannot lock {self.path.parent} ({exc.strerror or exc} "
                                 f"from flock on {self.path.name}); a sweep never writes there unlocked") from None
            self.mode = "flock"
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
        self._hold(fd)
        return self

    def _hold(self, fd: int) -> None:
        """``fd`` is the lock: write this process's pid, host and start into it."""
        self.fd = fd
        mine = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "start": time.time()}).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine, 0)
            os.fsync(fd)
        except OSError:
            self.release()                # the lock file removed again: nothing left behind
            raise

    def _exclusive(self, fd: int, created: bool) -> bool:
        """The lock on a file system without flock. Held (``True``) when this call created the file; else the
        file's holder is live (:class:`FolderBusy`) or stale (the file removed: ``False``, try again)."""
        if created:
            self.mode = "exclusive file"
            self._hold(fd)
            self._beating = threading.Event()
            threading.Thread(target=_heartbeat, args=(self.path, fd, self._beating), daemon=True,
                             name="dyntools-lock-heartbeat").start()
            return True
        try:
            info, seen = _read(fd), os.fstat(fd)
        finally:
            os.close(fd)
        if exclusive_holder_alive(info, seen.st_mtime):
            raise self._busy(info)
        tomb = self.path.with_name(f"{self.path.name}.stale-{os.getpid()}-{time.time_ns()}")
        try:
            os.rename(self.path, tomb)    # atomic: of two sweeps taking over, one moves it
        except FileNotFoundError:
            return False
        try:
            if not os.path.samestat(os.stat(tomb), seen):      # a new holder's file, not the stale one: put back
                try:
                    os.link(tomb, self.path)
                except OSError:
                    pass
            elif self.stale is None:
                self.stale = info or {}
        finally:
            tomb.unlink(missing_ok=True)
        return False

    def release(self) -> None:
        if self.fd is None:
            return
        if self._beating is not None:
            self._beating.set()
            self._beating = None
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


def _heartbeat(path: Path, fd: int, stop: threading.Event) -> None:
    """Touch the exclusive lock file ``path`` every :data:`HEARTBEAT` seconds while it is still ``fd``'s file
    and ``stop`` is not set: another host then sees its holder alive (:data:`STALE_AFTER`)."""
    while not stop.wait(HEARTBEAT):
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                os.utime(path)
        except OSError:
            pass
