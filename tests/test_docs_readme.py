"""The README's code blocks run in order (the machinery and the docs/ pages:
tests/test_docs.py; a file of its own so that the README runs in parallel with them)."""

from __future__ import annotations

import pytest

from test_docs import BLOCKS, README_DOC, Block, check_block, document_run  # noqa: F401


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.runs and b.doc == README_DOC], ids=lambda b: b.name
)
def test_readme_block_runs(block: Block, document_run, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The block runs after the README's blocks before it, in the same directory."""
    check_block(block, document_run, monkeypatch)
