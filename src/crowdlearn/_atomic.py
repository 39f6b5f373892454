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
