"""Atomic file writing: write to a temporary file beside the target, then rename.

A reader never sees a half-written file, and a failure (an exception, a killed
process) leaves either the old file or no file, never a truncated one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; rename it onto ``path`` on success.

    Use this for writers that want a path rather than a file object (pyarrow, numpy).
    On an exception the temporary file is removed and the target is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp makes owner-only files; give the result the mode a plain open() would
        # (the umask's), or the mode of the file it replaces.
        os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else _default_mode())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _default_mode() -> int:
    """0o666 less the process umask (read by setting it and putting it back)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8"
) -> Iterator[IO]:
    """Open a temporary file for writing that replaces ``path`` atomically when closed."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp, open(tmp, mode, encoding=encoding) as handle:
        yield handle


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; rename it onto ``path`` on success.

    For writers of several files (a Parquet dataset written partition by partition):
    the directory appears only complete. An existing directory at ``path`` is replaced
    (moved aside, then deleted after the rename). On an exception the temporary
    directory is deleted and ``path`` is left untouched.
    """
    import shutil

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        old = None
        if target.exists():
            old = Path(
                tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent)
            )
            os.replace(target, old / "previous")
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class LockTimeout(OSError):
    """Another process held a :func:`file_lock` longer than the time allowed."""


def lock_path_of(path: str | os.PathLike[str]) -> Path:
    """The lock file of ``path``: a hidden sibling, ``.NAME.lock``."""
    target = Path(path)
    return target.with_name(f".{target.name}.lock")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], timeout: float) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (an OS lock on its lock file, :func:`lock_path_of`)
    for the duration of the block; yield whether a lock is held.

    Waits up to ``timeout`` seconds for another holder, then raises :class:`LockTimeout`.
    The lock file is created while the lock is taken and removed when it is released
    (a killed holder's lock is released by the OS; its file stays and is reused). A
    waiter that locked a lock file which its holder removed meanwhile tries again on
    the new one. Where the OS offers no ``fcntl.flock`` (Windows), nothing is locked
    and ``False`` is yielded: callers keep their own check that nothing changed.
    An OSError creating the lock file (a read-only folder) goes to the caller.
    """
    import time

    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield False
        return
    lock = lock_path_of(path)
    deadline = time.monotonic() + max(0.0, timeout)
    delay = 0.01
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, _default_mode())
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(
                            f"held by another process for more than {timeout:g} s ({lock})"
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 1.5, 0.2)
            held = os.fstat(fd)
            try:
                now = os.stat(lock)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)  # the holder removed this lock file after we opened it: again
    try:
        yield True
    finally:
        try:
            os.unlink(lock)  # still held: no other process can hold this file now
        except OSError:
            pass
        os.close(fd)


def fingerprint(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """What identifies one version of a file: device, inode, size and modification
    time in nanoseconds (None: no file). A file replaced by a rename or rewritten
    in place gets another fingerprint."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
