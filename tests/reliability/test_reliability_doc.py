"""docs/reliability.md lists exactly the catalogue's cases (it cannot drift)."""

from __future__ import annotations

from pathlib import Path

from cli_cases import BEGIN, CASES, END, with_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"


def test_the_doc_table_is_the_catalogue():
    text = DOC.read_text()
    assert BEGIN in text and END in text
    assert text == with_table(text), (
        "docs/reliability.md is out of date: run "
        "`python tests/reliability/cli_cases.py docs/reliability.md`"
    )
    for case in CASES:
        assert f"`{case.id}`" in text
