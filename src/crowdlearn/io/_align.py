"""Aligning a worker's tokens to the reference tokens of a task (one function, every
span reader uses it).

A worker's answer may come over other tokens than the task's reference tokens (NER-MTurk
worker files that split, join, drop or add tokens; an annotation tool whose tokenizer
differs from the reference CoNLL file). :func:`align_tags` carries the worker's tags onto
the reference tokens with :class:`difflib.SequenceMatcher`: over the token strings, then
over the characters where a token was split or joined. Reference tokens that face no
worker token are tagged ``O`` for that worker and counted; a worker's tokens that share
nothing with the reference (no token in common and fewer than half of their characters
matching) cannot be aligned and are an error (:func:`align_or_refuse`).
"""

from __future__ import annotations

import difflib

from crowdlearn.data.errors import CrowdDataError

__all__ = ["align_or_refuse", "align_tags"]

#: Below this character similarity (difflib ratio), tokens sharing no token with the
#: reference cannot be aligned.
MIN_RATIO = 0.5


def align_tags(tokens: list[str], tags: list[str], reference: list[str]) -> tuple[list[str], int]:
    """A worker's ``tags`` over its ``tokens`` carried onto the ``reference`` tokens.

    Token strings are aligned with :class:`difflib.SequenceMatcher`. In equal blocks and
    in replaced blocks of the same length on both sides, each reference token takes the
    tag of the worker token it faces. In replaced blocks of different lengths (a token
    split or joined: ``German`` ``y`` for ``Germany``), the characters are aligned and
    each reference token takes the tag of the worker token holding its first character
    (``I-X`` rather than ``B-X`` where that worker token also began the reference token
    before).

    Returns the tags of the reference tokens (``"O"`` where a reference token faces no
    worker token) and how many reference tokens were left unaligned.
    """
    if tokens == reference:
        return list(tags), 0
    out = ["O"] * len(reference)
    aligned = [False] * len(reference)
    matcher = difflib.SequenceMatcher(None, tokens, reference, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                out[j] = tags[i]
                aligned[j] = True
        elif op == "replace":
            previous = -1
            for j, i in sorted(_by_characters(tokens[i1:i2], reference[j1:j2]).items()):
                tag = tags[i1 + i]
                if i == previous and tag.startswith("B-"):
                    tag = "I-" + tag[2:]  # a worker token split over reference tokens
                out[j1 + j] = tag
                aligned[j1 + j] = True
                previous = i
    return out, aligned.count(False)


def align_or_refuse(
    tokens: list[str], tags: list[str], reference: list[str], where: str
) -> tuple[list[str], int]:
    """:func:`align_tags`, refusing tokens that share nothing with the reference.

    Tokens that hold none of the reference tokens and whose characters match the
    reference's by less than :data:`MIN_RATIO` (difflib's ratio) are a
    :class:`CrowdDataError` naming ``where``: they are another text, not another
    tokenisation of it.
    """
    if not tokens:
        raise CrowdDataError(f"{where}: the answer holds no token")
    if tokens != reference and not set(tokens) & set(reference):
        ratio = difflib.SequenceMatcher(
            None, "".join(tokens), "".join(reference), autojunk=False
        ).ratio()
        if ratio < MIN_RATIO:
            raise CrowdDataError(
                f"{where}: its tokens cannot be aligned to the task's reference tokens (no "
                f"token in common, {ratio:.0%} of the characters alike): "
                f"{' '.join(tokens[:5])!r} against {' '.join(reference[:5])!r}"
            )
    return align_tags(tokens, tags, reference)


def _by_characters(tokens: list[str], reference: list[str]) -> dict[int, int]:
    """Reference token index -> index of the worker token holding its first character,
    for the reference tokens whose first character aligns with one."""
    owner = [i for i, token in enumerate(tokens) for _ in token]
    first_chars: dict[int, int] = {}
    position = 0
    for j, token in enumerate(reference):
        if token:
            first_chars[position] = j
        position += len(token)
    matcher = difflib.SequenceMatcher(None, "".join(tokens), "".join(reference), autojunk=False)
    found: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            if b + k in first_chars:
                found[first_chars[b + k]] = owner[a + k]
    return found
