"""Reader of crowd sequence tags in per-worker CoNLL folders (the NER-MTurk layout).

The layout, as Rodrigues et al.'s NER-MTurk data ship it::

    ROOT/mturk_train_data/WORKER_ID/DOC_ID.txt   one worker's tags for one document
    ROOT/ground_truth/DOC_ID.txt                 the gold tags of the document

Each file holds one ``TOKEN TAG`` a line (the tag is the last field; a line holding only
an indented tag is an empty token), a blank line between sentences. The gold file's
tokens are each document's reference tokens and its tags the truth. A worker's file
whose tokens differ from the gold file's is aligned to them
(:func:`crowdlearn.io._align.align_tags`, shared by every span reader:
:class:`difflib.SequenceMatcher` over the token strings, then over the characters where
a token was split or joined); reference tokens left unaligned get ``O`` for that
worker; a worker file sharing nothing with the gold file (another text) is an error.
One :class:`~crowdlearn.data.CrowdDataWarning` says how many files differed and how
many reference tokens were left unaligned.
"""

from __future__ import annotations

import warnings
from os import PathLike
from pathlib import Path

from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning
from crowdlearn.data.spans import Spans
from crowdlearn.io._align import align_or_refuse, align_tags

__all__ = ["align_tags", "read_conll_file", "read_conll_folders"]

#: Folder names of the NER-MTurk layout.
WORKERS_DIR, GOLD_DIR = "mturk_train_data", "ground_truth"


def read_conll_file(path: Path) -> tuple[list[str], list[str], list[int]]:
    """Tokens, tags and sentence starts (token indices) of one CoNLL file."""
    tokens: list[str] = []
    tags: list[str] = []
    breaks: list[int] = []
    new_sentence = True
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            new_sentence = True
            continue
        if len(fields) == 1 and line[0].isspace():
            fields = [
                "",
                fields[0],
            ]  # a tag after no token (an empty token, as some workers' files hold)
        if len(fields) < 2:
            raise CrowdDataError(f"{path}, line {number}: expected 'TOKEN TAG', got {line!r}")
        if new_sentence:
            breaks.append(len(tokens))
            new_sentence = False
        tokens.append(fields[0])
        tags.append(fields[-1])
    return tokens, tags, breaks


def read_conll_folders(root: str | PathLike[str]) -> Spans:
    """Read the NER-MTurk layout (per-worker CoNLL folders and a gold folder).

    Parameters
    ----------
    root : path
        The folder holding ``mturk_train_data/`` and ``ground_truth/``.

    Returns
    -------
    Spans
        Tasks are the document ids (file names without ``.txt``), workers the worker
        folder names, reference tokens and truth from the gold files (BIO tags; an
        ``I-`` without its ``B-`` is repaired and counted in a warning).
    """
    root = Path(root)
    workers_dir, gold_dir = root / WORKERS_DIR, root / GOLD_DIR
    for folder in (workers_dir, gold_dir):
        if not folder.is_dir():
            raise CrowdDataError(f"{root}: no folder {folder.name}/ (the NER-MTurk layout)")
    reference: dict[str, list[str]] = {}
    truth: dict[str, list[str]] = {}
    for path in sorted(gold_dir.glob("*.txt")):
        tokens, tags, _ = read_conll_file(path)
        if not tokens:
            raise CrowdDataError(f"{path}: the document is empty (no tokens)")
        reference[path.stem], truth[path.stem] = tokens, tags
    if not reference:
        raise CrowdDataError(f"{gold_dir}: no .txt files")
    task, worker, tags_rows = [], [], []
    differ = unaligned = 0
    for worker_dir in sorted(p for p in workers_dir.iterdir() if p.is_dir()):
        for path in sorted(worker_dir.glob("*.txt")):
            if path.stem not in reference:
                raise CrowdDataError(f"{path}: document {path.stem!r} has no gold file")
            tokens, tags, _ = read_conll_file(path)
            if not tokens:
                raise CrowdDataError(f"{path}: the document is empty (no tokens)")
            aligned, missed = align_or_refuse(tokens, tags, reference[path.stem], str(path))
            differ += tokens != reference[path.stem]
            unaligned += missed
            task.append(path.stem)
            worker.append(worker_dir.name)
            tags_rows.append(aligned)
    if not task:
        raise CrowdDataError(f"{workers_dir}: no worker files")
    if differ:
        warnings.warn(
            f"{root}: {differ} worker file(s) differ from the gold tokens and were aligned to "
            f"them; {unaligned} reference token(s) faced no worker token and were tagged O",
            CrowdDataWarning,
            stacklevel=2,
        )
    # Blank lines do not end spans: the gold files continue 23 entities across one
    # (an I- after the blank line), and the published counts (5,276 gold entities on
    # val) read each document as one sequence.
    return Spans.from_tags(
        task, worker, tags_rows, tokens=reference, truth=truth, task_ids=sorted(reference)
    )
