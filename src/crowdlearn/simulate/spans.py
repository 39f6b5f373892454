"""Simulated span (named-entity) crowds with a known truth.

**Documents.** Each of ``n_tasks`` documents has a number of sentences uniform in
``sentences``, each of a length (tokens) uniform in ``sentence_length``. Each sentence
holds a Poisson number of true entities of mean ``entity_rate`` times its length, each
of a type drawn uniformly among ``n_labels`` and of a length ``min(G, max_entity_length)``
with ``G`` geometric of mean ``mean_entity_length``; entities that do not fit in the
sentence are dropped, the others are laid out without overlap at uniformly drawn gaps
(two entities may touch). No entity crosses a sentence break. Ordinary tokens are
made-up lower-case words of a ``vocabulary`` with Zipf frequencies; an entity's tokens
are capitalised made-up words, drawn from the block of ``entity_vocabulary`` words of
its type, or with probability ``ambiguity`` from the block of a uniformly drawn type
(so that a word does not always name one type). The types are named ``LOC``, ``MISC``,
``ORG``, ``PER`` (the first ``n_labels`` of these) up to four types, ``T01``, ``T02``...
beyond.

**Workers.** Each document is annotated by ``per_task`` distinct workers drawn
uniformly among ``n_workers``. Each worker has five rates, each drawn uniformly in the
given ``(low, high)`` range (a single number fixes it for every worker):

* ``miss``: the probability of dropping each true entity;
* ``boundary``: the probability that a kept entity's boundary is wrong: its start or its
  end (even odds) is moved by ``min(G, ...)`` tokens, ``G`` geometric of mean
  ``boundary_shift``, cutting the entity (never below one token) or extending it (even
  odds; a one-token entity is always extended), but never past its sentence or into a
  neighbouring true entity (so an extension can be lost at a sentence edge);
* ``type_confusion``: the probability that a kept entity gets another type, drawn from
  row ``k`` of ``confusion_matrix`` for true type ``k`` (its diagonal is ignored;
  default: uniform over the other types);
* ``false_spans``: the mean number (Poisson) of false spans the worker adds per
  sentence, each of a length drawn as the true entities', a uniform position inside the
  sentence and a uniform type; a false span that overlaps one of the worker's other
  spans is dropped;
* a share ``poor`` of the workers is poor: their ``miss``, ``boundary`` and
  ``type_confusion`` are multiplied by ``poor_factor`` (capped at 1) and their
  ``false_spans`` too.

A worker's spans on a document never overlap (where two extended entities of the same
worker would, the later one starts where the earlier ends). A worker who saw a document
and marked nothing gives one "marked nothing" row. The result is a
:class:`~crowdlearn.data.Spans` with ``truth``, tasks named ``doc00000``..., workers
``w000``... (zero-padded, so that their sorted order is the code order), rows sorted by
task, worker and start. With ``return_info=True`` it also returns a dict with each
worker's ``miss``, ``boundary``, ``type_confusion``, ``false_spans`` and ``poor`` flag,
and each document's ``sentence_starts`` (token indices).

All draws are vectorised over the whole corpus (no Python loop per document, sentence
or span), so a crowd of a million tokens and five workers per document takes a few
seconds, most of it building the token strings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.spans import Spans
from crowdlearn.simulate._checks import check_int, check_real

__all__ = ["LABEL_NAMES", "MAX_LABELS", "simulate_spans"]

#: The type names of up to four types (CoNLL-2003's, sorted).
LABEL_NAMES = ("LOC", "MISC", "ORG", "PER")

_SYLLABLES = np.array(
    ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "po", "an", "el", "bu", "fi"]
)

Range = float | tuple[float, float]


def _words(n: int, offset: int = 0) -> np.ndarray:
    """``n`` distinct made-up words: index ``offset + j`` written in base-14 syllables."""
    base = len(_SYLLABLES)
    out = []
    for j in range(offset, offset + n):
        parts = [_SYLLABLES[j % base]]
        j //= base
        while j:
            parts.append(_SYLLABLES[j % base])
            j //= base
        out.append("".join(parts))
    return np.array(out, dtype=object)


def _range(name: str, value: Range, high: float = 1.0) -> tuple[float, float]:
    """A ``(low, high)`` range of a worker rate (one number: that value for everyone)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be a number or a (low, high) pair, got {value!r}")
        low, top = (check_real(name, v, 0.0, high) for v in value)
        if low > top:
            raise ValueError(f"{name}: low {low} exceeds high {top}")
        return low, top
    number = check_real(name, value, 0.0, high)
    return number, number


def _int_range(name: str, value: tuple[int, int], minimum: int = 1) -> tuple[int, int]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair of integers, got {value!r}")
    low, high = (check_int(name, v, minimum) for v in value)
    if low > high:
        raise ValueError(f"{name}: low {low} exceeds high {high}")
    return low, high


def _exclusive_cumsum(counts: np.ndarray) -> np.ndarray:
    """Start offset of each group of sizes ``counts``."""
    out = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups of sizes ``counts``: each item's group and its rank in the group."""
    group = np.repeat(np.arange(len(counts)), counts)
    rank = np.arange(len(group)) - np.repeat(_exclusive_cumsum(counts), counts)
    return group, rank


def _lengths(rng: np.random.Generator, n: int, mean: float, longest: int) -> np.ndarray:
    return np.minimum(rng.geometric(1.0 / mean, n), longest).astype(np.int64)


#: Most entity types (each has its own words and two tags).
MAX_LABELS = 1000


def _confusion_cdf(matrix: Any, n_labels: int) -> np.ndarray | None:
    """Row-wise cumulative probabilities of another type (the diagonal zeroed); None
    for the default (uniform over the other types)."""
    if matrix is None:
        return None
    table = np.array(matrix, dtype=float)
    if table.shape != (n_labels, n_labels):
        raise ValueError(
            f"confusion_matrix must be {n_labels} x {n_labels}, got shape {table.shape}"
        )
    if not np.isfinite(table).all() or (table < 0).any():
        raise ValueError("confusion_matrix must hold finite non-negative numbers")
    np.fill_diagonal(table, 0.0)
    sums = table.sum(axis=1, keepdims=True)
    if n_labels > 1 and (sums == 0).any():
        raise ValueError("every row of confusion_matrix needs weight off its diagonal")
    cdf = np.cumsum(table / np.where(sums == 0, 1, sums), axis=1)
    cdf[:, -1] = 1.0
    return cdf


def simulate_spans(
    n_tasks: int = 100,
    n_workers: int = 20,
    per_task: int = 5,
    n_labels: int = 4,
    *,
    sentences: tuple[int, int] = (5, 15),
    sentence_length: tuple[int, int] = (5, 30),
    entity_rate: float = 0.1,
    mean_entity_length: float = 1.5,
    max_entity_length: int = 6,
    vocabulary: int = 1000,
    entity_vocabulary: int = 200,
    ambiguity: float = 0.1,
    miss: Range = (0.05, 0.25),
    boundary: Range = (0.02, 0.1),
    boundary_shift: float = 1.3,
    type_confusion: Range = (0.0, 0.1),
    confusion_matrix: Any = None,
    false_spans: Range = (0.0, 0.1),
    poor: float = 0.2,
    poor_factor: float = 3.0,
    random_state: int | np.random.Generator | None = 0,
    return_info: bool = False,
) -> Spans | tuple[Spans, dict[str, Any]]:
    """A simulated span crowd (the module docstring describes the model).

    Parameters
    ----------
    n_tasks : int, default 100
        Documents.
    n_workers : int, default 20
        Workers in the pool.
    per_task : int, default 5
        Distinct workers per document (at most ``n_workers``).
    n_labels : int, default 4
        Entity types.
    sentences : (int, int), default (5, 15)
        Fewest and most sentences of a document (uniform).
    sentence_length : (int, int), default (5, 30)
        Fewest and most tokens of a sentence (uniform).
    entity_rate : float, default 0.1
        Mean true entities per token (a sentence of ``L`` tokens holds a Poisson number
        of mean ``entity_rate * L``, less those that do not fit).
    mean_entity_length : float, default 1.5
        Mean length in tokens of an entity (geometric, at least 1) before the cap.
    max_entity_length : int, default 6
        Longest entity (and false span).
    vocabulary : int, default 1000
        Ordinary (lower-case) words, Zipf frequencies.
    entity_vocabulary : int, default 200
        Capitalised words per entity type.
    ambiguity : float, default 0.1
        Probability that an entity token is drawn from another (uniform) type's words.
    miss : float or (float, float), default (0.05, 0.25)
        Per-worker probability of dropping a true entity (range of the uniform draw).
    boundary : float or (float, float), default (0.02, 0.1)
        Per-worker probability of a wrong boundary on a kept entity.
    boundary_shift : float, default 1.3
        Mean number of tokens (geometric, at least 1) a wrong boundary moves.
    type_confusion : float or (float, float), default (0.0, 0.1)
        Per-worker probability of giving a kept entity another type.
    confusion_matrix : array (n_labels, n_labels), optional
        Weights of the wrong type given the true one (row: true type; the diagonal is
        ignored). Default: uniform over the other types.
    false_spans : float or (float, float), default (0.0, 0.1)
        Per-worker mean number of false spans per sentence (Poisson).
    poor : float, default 0.2
        Share of poor workers.
    poor_factor : float, default 3.0
        Poor workers' rates are multiplied by this (probabilities capped at 1).
    random_state : int or Generator, default 0
        Seed: the same seed gives the same crowd.
    return_info : bool, default False
        Also return the per-worker parameters and the sentence starts.

    Returns
    -------
    Spans, or (Spans, dict)

    Examples
    --------
    >>> data = simulate_spans(n_tasks=20, n_workers=8, per_task=3, random_state=0)
    >>> data.n_tasks, data.n_workers, data.labels.tolist()
    (20, 8, ['LOC', 'MISC', 'ORG', 'PER'])
    >>> perfect = simulate_spans(n_tasks=5, per_task=1, miss=0, boundary=0,
    ...                          type_confusion=0, false_spans=0)
    >>> spans = perfect.to_frame().dropna()
    >>> len(spans) == len(perfect.truth)
    True
    """
    n_tasks = check_int("n_tasks", n_tasks)
    n_workers = check_int("n_workers", n_workers)
    per_task = check_int("per_task", per_task)
    if per_task > n_workers:
        raise ValueError(f"per_task={per_task} exceeds n_workers={n_workers}")
    n_labels = check_int("n_labels", n_labels)
    if n_labels > MAX_LABELS:
        raise ValueError(f"n_labels must be at most {MAX_LABELS}, got {n_labels}")
    sentences = _int_range("sentences", sentences)
    sentence_length = _int_range("sentence_length", sentence_length)
    entity_rate = check_real("entity_rate", entity_rate, 0.0, 1.0)
    mean_entity_length = check_real("mean_entity_length", mean_entity_length, 1.0)
    max_entity_length = check_int("max_entity_length", max_entity_length)
    vocabulary = check_int("vocabulary", vocabulary)
    entity_vocabulary = check_int("entity_vocabulary", entity_vocabulary)
    ambiguity = check_real("ambiguity", ambiguity, 0.0, 1.0)
    ranges = {
        "miss": _range("miss", miss),
        "boundary": _range("boundary", boundary),
        "type_confusion": _range("type_confusion", type_confusion),
        "false_spans": _range("false_spans", false_spans, high=np.inf),
    }
    boundary_shift = check_real("boundary_shift", boundary_shift, 1.0)
    poor = check_real("poor", poor, 0.0, 1.0)
    poor_factor = check_real("poor_factor", poor_factor, 0.0)
    cdf = _confusion_cdf(confusion_matrix, n_labels)
    rng = np.random.default_rng(random_state)

    # ---- workers
    rates = {name: rng.uniform(low, high, n_workers) for name, (low, high) in ranges.items()}
    is_poor = rng.random(n_workers) < poor
    for name, values in rates.items():
        scaled = np.where(is_poor, values * poor_factor, values)
        rates[name] = scaled if name == "false_spans" else np.minimum(scaled, 1.0)

    # ---- documents: sentences and their places
    n_sent = rng.integers(sentences[0], sentences[1] + 1, n_tasks)
    sent_doc = np.repeat(np.arange(n_tasks), n_sent)
    sent_len = rng.integers(sentence_length[0], sentence_length[1] + 1, len(sent_doc))
    doc_len = np.bincount(sent_doc, weights=sent_len, minlength=n_tasks).astype(np.int64)
    doc_start = _exclusive_cumsum(doc_len)  # in the corpus
    sent_at = _exclusive_cumsum(sent_len) - doc_start[sent_doc]  # in its document

    # ---- true entities: Poisson per sentence, those that fit, laid out at sorted gaps
    wanted = rng.poisson(entity_rate * sent_len)
    e_sent, _ = _expand(wanted)
    e_len = _lengths(rng, len(e_sent), mean_entity_length, max_entity_length)
    wanted_len = np.bincount(e_sent, weights=e_len, minlength=len(sent_len)).astype(np.int64)
    used = np.cumsum(e_len) - np.repeat(_exclusive_cumsum(wanted_len), wanted)  # in sentence
    fits = used <= sent_len[e_sent]
    e_sent, e_len, used = e_sent[fits], e_len[fits], used[fits]
    free = sent_len - np.bincount(e_sent, weights=e_len, minlength=len(sent_len)).astype(int)
    gap = rng.integers(0, free[e_sent] + 1)
    gap = gap[np.lexsort((gap, e_sent))]  # sorted within each sentence
    e_start = gap + used - e_len  # in the sentence: gaps so far plus lengths before
    e_label = rng.integers(0, n_labels, len(e_sent))
    e_doc = sent_doc[e_sent]
    t_start = sent_at[e_sent] + e_start
    t_end = t_start + e_len
    # room each entity may grow into: up to the neighbouring entities or sentence edges
    same_prev = np.r_[False, e_sent[1:] == e_sent[:-1]]
    same_next = np.r_[e_sent[:-1] == e_sent[1:], False]
    lo = np.where(same_prev, np.r_[0, t_end[:-1]], sent_at[e_sent])
    hi = np.where(same_next, np.r_[t_start[1:], 0], sent_at[e_sent] + sent_len[e_sent])

    # ---- tokens
    n_all = int(doc_len.sum())
    rank = np.arange(1, vocabulary + 1, dtype=float)
    word = rng.choice(vocabulary, n_all, p=(1 / rank) / (1 / rank).sum())
    tokens = _words(vocabulary)[word]
    e_tok_entity, e_tok_rank = _expand(e_len)
    e_tok = (doc_start[e_doc] + t_start)[e_tok_entity] + e_tok_rank
    block = e_label[e_tok_entity]
    other = rng.random(len(e_tok)) < ambiguity
    block = np.where(other, rng.integers(0, n_labels, len(e_tok)), block)
    names = np.array([w.capitalize() for w in _words(n_labels * entity_vocabulary, vocabulary)],
                     dtype=object)  # fmt: skip
    tokens[e_tok] = names[block * entity_vocabulary + rng.integers(0, entity_vocabulary,
                                                                   len(e_tok))]  # fmt: skip
    token_lists = [part.tolist() for part in np.split(tokens, doc_start[1:])]

    # ---- who annotates what
    seen = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task]
    p_doc = np.repeat(np.arange(n_tasks), per_task)
    p_worker = seen.ravel()

    # ---- the true entities each worker saw, then miss, boundary and type errors
    n_ent = np.bincount(e_doc, minlength=n_tasks)
    first_ent = _exclusive_cumsum(n_ent)
    pe_pair, pe_rank = _expand(n_ent[p_doc])
    ent = first_ent[p_doc[pe_pair]] + pe_rank
    w = p_worker[pe_pair]
    keep = rng.random(len(ent)) >= rates["miss"][w]
    ent, w, pair = ent[keep], w[keep], pe_pair[keep]
    s, e, lab = t_start[ent].copy(), t_end[ent].copy(), e_label[ent].copy()
    wrong = rng.random(len(ent)) < rates["boundary"][w]
    shift = np.minimum(rng.geometric(1.0 / boundary_shift, len(ent)), max_entity_length)
    at_start = rng.random(len(ent)) < 0.5
    extend = (rng.random(len(ent)) < 0.5) | (e - s == 1)
    s = np.where(wrong & at_start & extend, np.maximum(s - shift, lo[ent]), s)
    s = np.where(wrong & at_start & ~extend, np.minimum(s + shift, e - 1), s)
    e = np.where(wrong & ~at_start & extend, np.minimum(e + shift, hi[ent]), e)
    e = np.where(wrong & ~at_start & ~extend, np.maximum(e - shift, s + 1), e)
    if n_labels > 1:
        confused = rng.random(len(ent)) < rates["type_confusion"][w]
        draw = rng.random(int(confused.sum()))
        if cdf is None:  # uniform over the other types
            shift = np.minimum((draw * (n_labels - 1)).astype(np.int64), n_labels - 2) + 1
            lab[confused] = (lab[confused] + shift) % n_labels
        else:
            lab[confused] = (draw[:, None] > cdf[lab[confused]]).sum(axis=1)

    # ---- false spans: Poisson per (worker, sentence), dropped where they overlap
    first_sent = _exclusive_cumsum(n_sent)
    ps_pair, ps_rank = _expand(n_sent[p_doc])
    ps_sent = first_sent[p_doc[ps_pair]] + ps_rank
    n_false = rng.poisson(rates["false_spans"][p_worker[ps_pair]])
    f_which, _ = _expand(n_false)
    f_pair, f_sent = ps_pair[f_which], ps_sent[f_which]
    f_len = np.minimum(
        _lengths(rng, len(f_pair), mean_entity_length, max_entity_length), sent_len[f_sent]
    )
    f_start = sent_at[f_sent] + rng.integers(0, sent_len[f_sent] - f_len + 1)
    f_end = f_start + f_len
    f_label = rng.integers(0, n_labels, len(f_pair))
    pair_at = _exclusive_cumsum(doc_len[p_doc])  # each pair's tokens in one flat space
    size = int(doc_len[p_doc].sum()) + 1
    cover = np.bincount(pair_at[pair] + s, minlength=size) - np.bincount(
        pair_at[pair] + e, minlength=size
    )
    covered = np.r_[0, np.cumsum(np.cumsum(cover)[:-1] > 0)]
    clear = covered[pair_at[f_pair] + f_end] == covered[pair_at[f_pair] + f_start]
    pair = np.r_[pair, f_pair[clear]]
    s, e = np.r_[s, f_start[clear]], np.r_[e, f_end[clear]]
    lab = np.r_[lab, f_label[clear]]

    # ---- no overlap within a worker's document: a span starts where the previous ends
    order = np.lexsort((e, s, pair))
    pair, s, e, lab = pair[order], s[order], e[order], lab[order]
    big = int(doc_len.max()) + 1
    reach = np.maximum.accumulate(pair * big + e) - pair * big  # furthest end so far
    before = np.r_[-1, reach[:-1]]
    before = np.where(np.r_[True, pair[1:] != pair[:-1]], -1, before)
    s = np.maximum(s, before)
    ok = s < e
    pair, s, e, lab = pair[ok], s[ok], e[ok], lab[ok]

    # ---- rows: spans, and one "marked nothing" row per pair without any
    silent = np.setdiff1d(np.arange(len(p_doc)), pair)
    pair = np.r_[pair, silent]
    s, e = np.r_[s, np.full(len(silent), -1)], np.r_[e, np.full(len(silent), -1)]
    lab = np.r_[lab, np.full(len(silent), -1)]
    order = np.lexsort((s, p_worker[pair], p_doc[pair]))
    pair, s, e, lab = pair[order], s[order], e[order], lab[order]

    width_t, width_w = max(5, len(str(n_tasks - 1))), max(3, len(str(n_workers - 1)))
    label_ids = (
        list(LABEL_NAMES[:n_labels]) if n_labels <= len(LABEL_NAMES)
        else [f"T{k + 1:0{len(str(n_labels))}d}" for k in range(n_labels)]
    )  # fmt: skip
    truth = pd.DataFrame({"task": e_doc, "start": t_start, "end": t_end, "label": e_label})
    data = Spans(
        p_doc[pair], p_worker[pair], s, e, lab,
        tokens=token_lists,
        task_ids=np.array([f"doc{d:0{width_t}d}" for d in range(n_tasks)], dtype=object),
        worker_ids=np.array([f"w{v:0{width_w}d}" for v in range(n_workers)], dtype=object),
        labels=np.array(label_ids, dtype=object),
        truth=truth,
    )  # fmt: skip
    if not return_info:
        return data
    info: dict[str, Any] = {
        **rates,
        "poor": is_poor,
        "sentence_starts": np.split(sent_at, first_sent[1:]),
    }
    return data, info
