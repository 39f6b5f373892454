"""Where dataset files live on disk, checking their digests, and downloading them.

Every file has a path relative to the data root (the same layout as the shared
dataset tree), a sha256 digest and a public URL, all recorded in the catalog.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import urllib.parse
import urllib.request
from collections.abc import Mapping
from http.client import HTTPException
from pathlib import Path

import platformdirs

from crowdlearn._atomic import atomic_path
from crowdlearn._progress import progress_bar
from crowdlearn.datasets._types import DatasetError

#: Environment variable naming the data root when ``root`` is not passed.
ROOT_ENV = "CROWDLEARN_DATA"

_CHUNK = 1 << 20
_TIMEOUT_S = 60

# Files whose digest matched, keyed by (path, size, mtime_ns, digest): a file that was
# not touched since it was hashed is not hashed again in this process.
_verified: set[tuple[str, int, int, str]] = set()


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding the datasets.

    Parameters
    ----------
    root : path-like, optional
        Used as is when given.

    Returns
    -------
    Path
        ``root``, else the ``CROWDLEARN_DATA`` environment variable, else
        ``<user cache dir>/crowdlearn/datasets``.
    """
    if root is not None:
        return Path(root).expanduser()
    from_env = os.environ.get(ROOT_ENV)
    if from_env:
        return Path(from_env).expanduser()
    return default_root()


def default_root() -> Path:
    """``<user cache dir>/crowdlearn/datasets``: the data root when none is set."""
    return Path(platformdirs.user_cache_dir("crowdlearn")) / "datasets"


def require_files(name: str, root: Path, files: Mapping[str, str]) -> None:
    """Fail with instructions when a file of dataset ``name`` is missing under ``root``."""
    missing = next((rel for rel in files if not (root / rel).is_file()), None)
    if missing is not None:
        # The command to suggest fetches into this very root; the message names the
        # command-line option and the environment variable (the Python API's root=
        # argument is documented with load and fetch).
        where = "" if root == default_root() else f"--data-root {root} "
        raise DatasetError(
            f"dataset {name!r} is not in {root} ({missing} is missing): download it with "
            f"`crowdlearn {where}datasets fetch {name}`, or point to the folder that holds "
            f"it with --data-root DIR or the {ROOT_ENV} environment variable"
        )


def place_files(staged: Mapping[str, Path], root: Path) -> None:
    """Move complete, checked files (relative path -> staged file) under ``root``.

    Each file is copied beside its destination and renamed onto it. If one cannot be
    placed, the files this call added and the folders it created are removed again, so
    a failure leaves the data root as it was (files it replaced stay replaced: they
    were checked, so they are the recorded ones).
    """
    added: list[Path] = []
    created: list[Path] = []
    try:
        for rel, source in staged.items():
            dest = root / rel
            created.extend(_missing_parents(dest))
            existed = dest.exists()
            with atomic_path(dest) as tmp:
                shutil.copyfile(source, tmp)
            if not existed:
                added.append(dest)
    except BaseException as exc:
        for path in added:
            path.unlink(missing_ok=True)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        if isinstance(exc, OSError):
            raise DatasetError(f"cannot write the dataset under {root}: {exc}") from exc
        raise


def _missing_parents(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, outermost first."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    return missing[::-1]


def verify_files(name: str, root: Path, files: Mapping[str, str]) -> None:
    """Check the sha256 digest of every file; a mismatch is a :class:`DatasetError`."""
    for rel, expected in files.items():
        path = root / rel
        if not has_digest(path, expected):
            raise DatasetError(
                f"{path} has sha256 {file_digest(path)} but dataset {name!r} expects "
                f"{expected}: the file is damaged or a different version; fetch it again "
                f"with `crowdlearn datasets fetch {name} --force`, or load with verify=False"
            )


def has_digest(path: Path, expected: str) -> bool:
    """Whether ``path`` is a file whose sha256 is ``expected`` (cached per process)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return False
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, expected)
    if key in _verified:
        return True
    if file_digest(path) != expected:
        return False
    _verified.add(key)
    return True


def file_digest(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def mirror_url(mirror: str, rel: str) -> str:
    """URL of a file under a mirror that keeps the data root's layout."""
    return f"{mirror.rstrip('/')}/{urllib.parse.quote(rel)}"


def download(url: str, dest: Path, expected: str, progress: bool | str) -> None:
    """Download ``url`` to ``dest`` atomically, keeping it only if its sha256 matches.

    The bytes go to a temporary file beside ``dest`` that is renamed onto it once the
    digest is checked; on any failure no file is left behind and ``dest`` is untouched.
    """
    with atomic_path(dest) as tmp:
        actual = _copy_url(url, tmp, progress)
        if actual != expected:
            raise DatasetError(
                f"download of {url} has sha256 {actual} but {expected} was expected; "
                f"nothing was written to {dest}"
            )


def _copy_url(url: str, target: Path, progress: bool | str) -> str:
    """Stream ``url`` into ``target``; return the sha256 of the bytes."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            with (
                open(target, "wb") as out,
                progress_bar(
                    progress=progress,
                    total=int(length) if length else None,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    desc=Path(urllib.parse.urlsplit(url).path).name,
                ) as bar,
            ):
                while chunk := response.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    bar.update(len(chunk))
    except (OSError, ValueError, HTTPException) as exc:
        raise DatasetError(f"cannot download {url}: {exc}") from exc
    return digest.hexdigest()
