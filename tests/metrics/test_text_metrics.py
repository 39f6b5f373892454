"""Word error rate and word edit distance."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.metrics import edit_distance, normalise_text, word_error_rate


def _plain_levenshtein(a, b):
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(
                table[i - 1][j] + 1,
                table[i][j - 1] + 1,
                table[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
    return table[-1][-1]


seqs = st.lists(st.sampled_from("abcd"), max_size=8)


@settings(max_examples=200, deadline=None)
@given(a=seqs, b=seqs, c=seqs)
def test_edit_distance_is_the_levenshtein_metric(a, b, c):
    d = edit_distance(a, b)
    assert d == _plain_levenshtein(a, b)
    assert d == edit_distance(b, a)
    assert (d == 0) == (a == b)
    assert edit_distance(a, c) <= d + edit_distance(b, c)


def test_normalisation():
    assert normalise_text("  I'm HERE, Air-tight!  ") == "im here air tight"
    assert normalise_text("don\u2019t (stop)") == "dont stop"


def test_corpus_wer_counts_edits_over_reference_words():
    # 1 substitution + 1 insertion over 3 + 2 reference words
    assert word_error_rate(["the cat sat", "a b c"], ["The cat sad.", "a b"]) == pytest.approx(
        2 / 5
    )
    assert word_error_rate(["The cat."], ["the cat"], normalise=False) == 1.0
    # unknown references are left out
    assert word_error_rate(["x", "a"], [None, "a"]) == 0.0
    with pytest.raises(ValueError, match="undefined"):
        word_error_rate(["a"], [None])
    with pytest.raises(ValueError, match="length"):
        word_error_rate(["a", "b"], ["a"])


# ---- issue 43: long transcriptions


def test_long_edit_distances_match_the_plain_table(monkeypatch):
    """Above ``_LONG`` cells the table is filled by rows of numpy: the same distances."""
    import numpy as np

    from crowdlearn.metrics import _text

    rng = np.random.default_rng(0)
    for _ in range(200):
        a = [str(x) for x in rng.integers(int(rng.integers(2, 20)), size=rng.integers(0, 120))]
        b = [str(x) for x in rng.integers(int(rng.integers(2, 20)), size=rng.integers(0, 120))]
        monkeypatch.setattr(_text, "_LONG", 10**12)
        plain = _text.edit_distance(a, b)
        monkeypatch.setattr(_text, "_LONG", 0)
        assert _text.edit_distance(a, b) == plain
