"""Writer of crowd spans in per-worker CoNLL folders (the NER-MTurk layout).

The layout :func:`~crowdlearn.io.conll_folders.read_conll_folders` reads::

    ROOT/mturk_train_data/WORKER_ID/DOC_ID.txt   one worker's BIO tags for one document
    ROOT/ground_truth/DOC_ID.txt                 the true BIO tags (when the truth is known)

one ``TOKEN TAG`` a line, a blank line before each sentence start given in ``breaks``.
A worker who saw a document and marked nothing gets a file of ``O`` tags; a worker who
did not see it gets no file. Tokens must hold no white space (the reader splits on it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path

import numpy as np

from crowdlearn._atomic import atomic_open
from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.spans import Spans
from crowdlearn.io.conll_folders import GOLD_DIR, WORKERS_DIR

__all__ = ["write_conll_folders"]


def _conll(tokens: Sequence[str], tags: Sequence[str], breaks: set[int]) -> str:
    lines = []
    for i, (token, tag) in enumerate(zip(tokens, tags, strict=True)):
        if i in breaks and i:
            lines.append("")
        lines.append(f"{token} {tag}")
    return "\n".join(lines) + "\n"


def write_conll_folders(
    data: Spans,
    root: str | PathLike[str],
    *,
    breaks: Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None = None,
) -> list[Path]:
    """Write ``data`` as per-worker CoNLL folders under ``root`` (see the module).

    Parameters
    ----------
    data : Spans
        Its task and worker ids name the files and folders (they must be usable as
        file names); a worker's overlapping spans are written as :meth:`Spans.bio_codes`
        resolves them (the later row wins).
    root : path
        The folder to fill (created if needed).
    breaks : sequence or mapping task code -> token indices, optional
        Where each task's sentences start (a blank line is written before each).

    Returns
    -------
    list of Path
        The files written.
    """
    root = Path(root)
    names = np.array(data.tag_names(), dtype=object)
    for kind, ids in (("task", data.task_ids), ("worker", data.worker_ids)):
        bad = [i for i in map(str, ids.tolist()) if not i or "/" in i or i in (".", "..")]
        if bad:
            raise CrowdDataError(f"{kind} id {bad[0]!r} cannot name a file")
    spaced = [t for doc in data.tokens for t in doc if not t or any(c.isspace() for c in t)]
    if spaced:
        raise CrowdDataError(f"token {spaced[0]!r} is empty or holds white space")

    def sentence_starts(task: int) -> set[int]:
        if breaks is None:
            return set()
        return set(np.asarray(breaks[task]).tolist())

    written = []
    for (task, worker), codes in sorted(data.bio_codes().items()):
        folder = root / WORKERS_DIR / str(data.worker_ids[worker])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{data.task_ids[task]}.txt"
        with atomic_open(path) as handle:
            handle.write(_conll(data.tokens[task], names[codes], sentence_starts(task)))
        written.append(path)
    if data.truth is not None:
        (root / GOLD_DIR).mkdir(parents=True, exist_ok=True)
        cols = [data.truth[c].to_numpy() for c in ("task", "start", "end", "label")]
        first = np.searchsorted(cols[0], np.arange(data.n_tasks + 1))  # truth is by task
        for task in range(data.n_tasks):
            codes = np.zeros(int(data.n_tokens[task]), dtype=np.int64)
            rows = slice(first[task], first[task + 1])
            for s, e, lab in zip(*(c[rows].tolist() for c in cols[1:]), strict=True):
                codes[s] = 1 + 2 * lab
                codes[s + 1 : e] = 2 + 2 * lab
            path = root / GOLD_DIR / f"{data.task_ids[task]}.txt"
            with atomic_open(path) as handle:
                handle.write(_conll(data.tokens[task], names[codes], sentence_starts(task)))
            written.append(path)
    return written
