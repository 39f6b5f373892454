"""The span readers' inputs given beside the data (``--texts``, ``--tokens``,
``--scheme``): a context the command line sets and :func:`crowdlearn.io.spans.read_spans`
reads. A module of its own, without numpy or pandas, so that setting it costs nothing."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["span_options"]

_OPTIONS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "crowdlearn_span_options", default=None
)


@contextlib.contextmanager
def span_options(
    texts: str | os.PathLike[str] | None = None,
    tokens: str | os.PathLike[str] | None = None,
    scheme: str | None = None,
) -> Iterator[None]:
    """Within the block, :func:`crowdlearn.io.spans.read_spans` uses these inputs when
    not given (the command line's ``--texts``, ``--tokens`` and ``--scheme``)."""
    token = _OPTIONS.set({"texts": texts, "tokens": tokens, "scheme": scheme})
    try:
        yield
    finally:
        _OPTIONS.reset(token)
