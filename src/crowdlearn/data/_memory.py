"""Refusing to build arrays that cannot fit in memory, before allocating them.

A dense (tasks x classes) or (workers x classes x classes) array is cheap for the
data crowdlearn is made for, but a single absurd class code or option (``10**9``
classes) makes it tens of gigabytes: numpy then raises a bare ``MemoryError``
or, worse, the operating system kills the process. :func:`check_allocation`
compares an estimate with the memory the process can still get and raises a
:class:`~crowdlearn.data.errors.CrowdMemoryError` that says what was being built.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

try:
    import resource
except ImportError:  # not on POSIX: no address-space limit to read
    resource = None  # type: ignore[assignment]

import numpy as np

from crowdlearn.data.errors import CrowdDataError, CrowdMemoryError

#: Environment variable overriding the available memory (bytes), for tests and for
#: users who want crowdlearn to stay under a budget of their own.
MEMORY_LIMIT_ENV = "CROWDLEARN_MEMORY_LIMIT"


def available_memory() -> int | None:
    """Bytes this process can still allocate, or None when it cannot be told.

    The smallest of: ``MemAvailable`` in ``/proc/meminfo`` (else the free physical
    pages from ``os.sysconf``), the headroom left under the ``RLIMIT_AS`` soft limit
    (address space limit minus what the process already maps), and the
    ``CROWDLEARN_MEMORY_LIMIT`` environment variable when set.
    """
    candidates = [_system_available(), _address_space_headroom(), _env_limit()]
    known = [c for c in candidates if c is not None]
    return min(known) if known else None


def check_allocation(n_bytes: int | float, what: str) -> None:
    """Raise when an allocation of ``n_bytes`` cannot fit in the memory available.

    Parameters
    ----------
    n_bytes : int or float
        Estimated size of what is about to be allocated (a float is fine: products of
        sizes are computed in Python integers or floats, never in overflowing int64).
    what : str
        What would be allocated, for the message, e.g. ``"a 10 x 1000000 table of
        class probabilities"``.

    Raises
    ------
    CrowdMemoryError
        A :class:`~crowdlearn.CrowdDataError` and a :class:`MemoryError`, whose
        message names ``what``, the bytes needed and the bytes available.
    """
    available = available_memory()
    if available is not None and n_bytes > available:
        raise CrowdMemoryError(
            f"{what} would need {format_bytes(n_bytes)} of memory but only "
            f"{format_bytes(available)} is available"
        )


def array_bytes(shape: Iterable[int], itemsize: int = 8) -> int:
    """Bytes of a dense array of ``shape``, in Python integers (no int64 overflow)."""
    total = itemsize
    for size in shape:
        total *= int(size)
    return total


def format_bytes(n_bytes: int | float) -> str:
    """``n_bytes`` in the largest binary unit that keeps the number >= 1 (e.g. "7.5 GiB")."""
    value = float(n_bytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _system_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _address_space_headroom() -> int | None:
    """RLIMIT_AS soft limit minus the process's current virtual size."""
    if resource is None:
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - used, 0)


def _env_limit() -> int | None:
    text = os.environ.get(MEMORY_LIMIT_ENV)
    if not text:
        return None
    try:
        return int(float(text))
    except ValueError:
        return None


#: Class codes implying more classes than this need a declared number of classes
#: when they also imply many more classes than the labels use (see below).
IMPLIED_CLASSES_LIMIT = 1000
#: ... that is, more than this many times the number of distinct labels.
IMPLIED_CLASSES_RATIO = 10


def check_implied_classes(codes: np.ndarray, how_to_declare: str) -> None:
    """Refuse class codes whose largest value implies far more classes than are used.

    Readers that take labels as class codes ``0..K-1`` (answer matrices, peerannot
    folders) set ``K`` to the largest code plus one. One stray code such as ``10**9``
    would then make every (tasks x classes) table gigabytes; a dataset that really
    has that many classes must say so.

    Parameters
    ----------
    codes : ndarray of int
        The class codes seen (labels and known truth), non-negative.
    how_to_declare : str
        How the user declares the number of classes, e.g. ``"pass n_classes="``.

    Raises
    ------
    CrowdDataError
        When the implied ``K`` exceeds ``IMPLIED_CLASSES_LIMIT`` and
        ``IMPLIED_CLASSES_RATIO`` times the number of distinct codes.
    """
    known = codes[codes >= 0] if len(codes) else codes
    if not len(known):
        return
    implied = int(known.max()) + 1
    if implied <= IMPLIED_CLASSES_LIMIT:
        return
    distinct = len(np.unique(known))
    if implied > IMPLIED_CLASSES_RATIO * distinct:
        raise CrowdDataError(
            f"the largest class code is {implied - 1}, which implies {implied} classes, but "
            f"only {distinct} distinct class code(s) are used; if the data really have "
            f"{implied} classes, declare the number of classes ({how_to_declare}), "
            "otherwise fix the stray class codes"
        )
