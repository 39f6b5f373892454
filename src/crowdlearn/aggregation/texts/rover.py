"""ROVER: word transition networks and a vote in each slot; and a worker-weighted vote.

J. G. Fiscus, "A post-processing system to yield reduced word error rates: Recognizer
Output Voting Error Reduction (ROVER)", IEEE Workshop on Automatic Speech Recognition
and Understanding (ASRU), 1997.

**Alignment** (:func:`word_network`, the paper's section 2.1). Each task's answers are
split into words (on whitespace; normalise them before, e.g. with
:func:`crowdlearn.metrics.normalise_text`, for case- and punctuation-blind voting).
The first answer is the initial word transition network (WTN), one slot per word. Each
next answer (in the order of the rows) is aligned against the growing network by edit
distance, the network's slots being sets of words (the "null" word, a skip, included):
placing a word in a slot costs 0 if the slot already holds that word, else 1 (a
substitution); skipping a slot (the answer gives the null word there) costs 0 if the
slot already holds the null word, else 1; a word between two slots (an insertion)
opens a new slot in which every earlier answer has the null word, at cost 1. The first
row and column of the table count 1 per step (as crowd-kit 1.4.2 does: our alignment
then agrees with theirs word for word). Among alignments of equal cost the backtrace
prefers, at each cell, placing a word in the slot, then a skip, then an insertion.
Long answers (tables over :data:`SMALL_TABLE` cells) fill the same table one row at a
time with numpy and keep only every ``sqrt(n)``-th row, refilling one stretch of rows at
a time for the backtrace: the same networks, in memory proportional to ``m * sqrt(n)``
(a 20,000-word transcription against another: about 6 s and 25 MB on one core, where a
table of Python lists took several GB); a table over :data:`MAX_CELLS` cells (texts of
about 46,000 words) is refused with one error naming the task.

**Vote** (the paper's equation (1) with alpha = 1: frequency only, no confidence
scores). In each slot the word given by the most answers wins, the null word counted
like any word (a winning null emits nothing). Ties are broken deterministically: the
longer word wins (so a real word beats the null word), then the word that sorts last
(``max`` of the strings) -- the rule of crowd-kit 1.4.2's ROVER. ``confidence_`` is
the mean over a task's slots of the winner's share of the votes.

**Weighted ROVER** (:class:`WeightedROVER`, ours). The same networks; each slot is
then an item answered by every worker of the task (with a word or the null word), and
each worker has a word accuracy ``p_w``, the probability that its entry in a slot is
the slot's true entry, the other candidates of the slot (the ``K_s`` distinct entries
seen there) sharing ``1 - p_w`` equally -- a one-coin model (Dawid and Skene, Applied
Statistics 1979, with one parameter per worker) over the slots. EM: the E-step gives
each candidate ``v`` of slot ``s`` the posterior ``softmax_v sum_{w votes v}
log(p_w (K_s - 1) / (1 - p_w))``; the M-step sets ``p_w = (1 + expected correct
entries) / (2 + entries)`` (a uniform Beta(1, 1) prior), starting from the plain vote
shares. The slot's candidate with the highest posterior wins, ties broken as above.
All EM steps are vectorised over every slot of every task (``np.bincount``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from crowdlearn.aggregation.texts._base import (
    BaseTextAggregator,
    task_groups,
    word_codes,
)
from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.texts import Texts

NULL = -1
_DIAGONAL, _SKIP, _INSERT = 0, 1, 2


#: Above this many cells (answer words x network slots), an answer is aligned with the
#: network by the vectorised table (:func:`_long_alignment`) instead of plain Python.
SMALL_TABLE = 4096
#: The largest table (answer words x network slots, about 46,000 x 46,000 words) an
#: alignment may fill; its time grows with it (about 15 s per 10**9 cells on one core).
MAX_CELLS = 2**31


class AlignmentTooLarge(Exception):
    """An answer and a network whose alignment table holds more than :data:`MAX_CELLS`
    cells."""

    def __init__(self, n_words: int, n_slots: int) -> None:
        super().__init__(n_words, n_slots)
        self.n_words, self.n_slots = n_words, n_slots


def word_network(answers: list[list[int]]) -> list[list[int]]:
    """The word transition network of one task's answers (word codes, in order).

    Returns one list per slot holding, for each answer, its word code in that slot or
    :data:`NULL` (-1). See the module docstring for the costs and the tie rule.

    Short answers are aligned by the table in plain Python; longer ones (more than
    :data:`SMALL_TABLE` cells) by :func:`_long_alignment`, which gives the same moves in
    memory proportional to ``m * sqrt(n)`` rather than ``n * m``. Raises
    :class:`AlignmentTooLarge` past :data:`MAX_CELLS` cells.

    Examples
    --------
    >>> word_network([[1, 2, 3], [1, 3]])
    [[1, 1], [2, -1], [3, 3]]
    """
    slots = [[w] for w in answers[0]]
    members = [{w} for w in answers[0]]
    for done, words in enumerate(answers[1:], start=1):
        n, m = len(words), len(slots)
        if (n + 1) * (m + 1) <= SMALL_TABLE or not (n and m):
            path = _backtrace(_full_alignment(words, members), n, m)
        else:
            if (n + 1) * (m + 1) > MAX_CELLS:
                raise AlignmentTooLarge(n, m)
            path = _long_alignment(words, members)
        merged: list[list[int]] = []
        merged_members: list[set[int]] = []
        i, j = n, m
        for move in path:
            if move == _DIAGONAL:
                slots[j - 1].append(words[i - 1])
                members[j - 1].add(words[i - 1])
                merged.append(slots[j - 1])
                merged_members.append(members[j - 1])
                i, j = i - 1, j - 1
            elif move == _SKIP:
                slots[j - 1].append(NULL)
                members[j - 1].add(NULL)
                merged.append(slots[j - 1])
                merged_members.append(members[j - 1])
                j -= 1
            else:
                merged.append([NULL] * done + [words[i - 1]])
                merged_members.append({NULL, words[i - 1]})
                i -= 1
        merged.reverse()
        merged_members.reverse()
        slots, members = merged, merged_members
    return slots


def _backtrace(move_at: Callable[[int, int], int], n: int, m: int) -> list[int]:
    """The moves from cell ``(n, m)`` back to ``(0, 0)``."""
    path = []
    i, j = n, m
    while i > 0 or j > 0:
        move = move_at(i, j)
        path.append(move)
        if move == _DIAGONAL:
            i, j = i - 1, j - 1
        elif move == _SKIP:
            j -= 1
        else:
            i -= 1
    return path


def _full_alignment(words: list[int], members: list[set[int]]) -> Callable[[int, int], int]:
    """The whole table (plain Python: fastest for short answers); returns the move at
    each cell."""
    m = len(members)
    previous = list(range(m + 1))
    back = [[_SKIP] * (m + 1)]
    skip_costs = [0 if NULL in slot else 1 for slot in members]
    for i in range(1, len(words) + 1):
        word = words[i - 1]
        current = [i]
        moves = [_INSERT]
        left, diagonal = i, previous[0]
        for up, slot, skip_cost in zip(previous[1:], members, skip_costs, strict=True):
            best = diagonal if word in slot else diagonal + 1
            move = _DIAGONAL
            if left + skip_cost < best:
                best, move = left + skip_cost, _SKIP
            if up + 1 < best:
                best, move = up + 1, _INSERT
            current.append(best)
            moves.append(move)
            left, diagonal = best, up
        previous = current
        back.append(moves)
    return lambda i, j: back[i][j]


def _word_slots(members: list[set[int]]) -> dict[int, np.ndarray]:
    """For each word, the indices of the slots holding it."""
    index: dict[int, list[int]] = {}
    for s, slot in enumerate(members):
        for word in slot:
            if word != NULL:
                index.setdefault(word, []).append(s)
    return {word: np.asarray(where, dtype=np.int64) for word, where in index.items()}


def _row(
    previous: np.ndarray,
    i: int,
    where: np.ndarray | None,
    skip_cost: np.ndarray,
    cumulated: np.ndarray,
    with_moves: bool = True,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Row ``i`` of the table from row ``i - 1`` (numpy), and its moves: the costs and the
    tie rule of :func:`_full_alignment`. ``where``: the slots holding the row's word.

    The skip (from the left) is a running minimum: with ``C = cumsum(skip_cost)``,
    ``cost[j] = C[j] + min_{k <= j} (b[k] - C[k])``, ``b`` the best of the diagonal and
    the insertion (``b[0] = i``: the first column counts 1 per insertion).
    """
    diagonal = np.empty(len(previous), dtype=np.int64)
    diagonal[0] = _FAR
    np.add(previous[:-1], 1, out=diagonal[1:])
    if where is not None:
        diagonal[where + 1] -= 1  # the slot holds the word: no substitution
    best = np.minimum(diagonal, previous + 1)
    best[0] = i
    best -= cumulated
    current = np.minimum.accumulate(best, out=best)
    current += cumulated
    if not with_moves:
        return current, None
    move = np.full(len(previous), _INSERT, dtype=np.uint8)
    from_left = np.zeros(len(previous), dtype=bool)
    np.equal(current[:-1] + skip_cost[1:], current[1:], out=from_left[1:])
    move[from_left] = _SKIP
    move[diagonal == current] = _DIAGONAL
    return current, move


_FAR = np.int64(1) << 40  # a cost no alignment reaches


def _long_alignment(words: list[int], members: list[set[int]]) -> list[int]:
    """The moves of :func:`_full_alignment`'s backtrace, the table filled one row at a
    time with numpy (:func:`_row`) and kept only every ``k = sqrt(n)`` rows: the
    backtrace refills the ``k`` rows of one stretch at a time from the kept row above
    it. Memory: ``(n / k) * m`` costs and ``k * m`` moves; time: two fillings of the
    table."""
    n, m = len(words), len(members)
    index = _word_slots(members)
    has_null = np.fromiter((NULL in slot for slot in members), bool, m)
    skip_cost = np.concatenate(([0], (~has_null).astype(np.int64)))  # entering column j
    cumulated = np.cumsum(skip_cost)
    stretch = max(1, math.isqrt(n))
    kept = {0: np.arange(m + 1, dtype=np.int32)}
    previous = kept[0].astype(np.int64)
    for i in range(1, n + 1):
        previous = _row(previous, i, index.get(words[i - 1]), skip_cost, cumulated, False)[0]
        if i % stretch == 0 and i < n:
            kept[i] = previous.astype(np.int32)
    path: list[int] = []
    i, j = n, m
    for top in sorted(kept, reverse=True):
        if i <= top and top > 0:
            continue
        moves = {}
        previous = kept[top].astype(np.int64)
        for row in range(top + 1, i + 1):
            previous, moves[row] = _row(
                previous, row, index.get(words[row - 1]), skip_cost, cumulated
            )
        while i > top or (top == 0 and j > 0):
            move = _SKIP if i == 0 else int(moves[i][j])
            path.append(move)
            if move == _DIAGONAL:
                i, j = i - 1, j - 1
            elif move == _SKIP:
                j -= 1
            else:
                i -= 1
    return path


class SlotVotes:
    """Every slot of every task's network, flattened (one entry per answer and slot).

    Attributes
    ----------
    cell_row : (n_cells,) the row (annotation) of each entry
    cell_candidate : (n_cells,) the entry's candidate code
    candidate_slot, candidate_word : (n_candidates,) the slot (global, tasks in order)
        and word code (``n_words`` for the null word) of each distinct (slot, entry)
    slot_task : (n_slots,) the task of each slot, nondecreasing
    slot_start : (n_slots,) the first candidate of each slot (candidates are grouped
        by slot)
    """

    def __init__(self, data: Texts) -> None:
        order, starts, counts = task_groups(data)
        coded, self.vocabulary = word_codes(data.text[order])
        rows, slot_counts, entries = [], np.zeros(data.n_tasks, dtype=np.int64), []
        for t in range(data.n_tasks):
            start, count = int(starts[t]), int(counts[t])
            if count == 0:
                continue
            try:
                slots = word_network(coded[start : start + count])
            except AlignmentTooLarge as error:
                task_id = data.task_ids[t : t + 1].tolist()[0]
                raise CrowdDataError(
                    f"task {task_id!r}: aligning an answer of {error.n_words:,} "
                    f"words with the {error.n_slots:,} word slots of the task's other "
                    f"answers takes a table of more than {MAX_CELLS:,} cells (texts of "
                    "about 46,000 words); split such long texts into shorter tasks"
                ) from None
            network_array = np.asarray(slots, dtype=np.int64)
            slot_counts[t] = network_array.shape[0]
            entries.append(network_array.ravel())
            rows.append(np.tile(order[start : start + count], network_array.shape[0]))
        n_words = len(self.vocabulary)
        word = np.concatenate(entries)
        word[word == NULL] = n_words
        self.n_words = n_words
        self.cell_row = np.concatenate(rows)
        per_slot = np.repeat(counts, slot_counts)  # answers per slot
        self.slot_task = np.repeat(np.arange(data.n_tasks), slot_counts)
        cell_slot = np.repeat(np.arange(len(per_slot)), per_slot)
        key = cell_slot * (n_words + 1) + word
        unique, self.cell_candidate = np.unique(key, return_inverse=True)
        self.cell_candidate = self.cell_candidate.ravel()
        self.candidate_slot = unique // (n_words + 1)
        self.candidate_word = unique % (n_words + 1)
        self.n_slots = len(per_slot)
        first = np.ones(len(unique), dtype=bool)
        first[1:] = self.candidate_slot[1:] != self.candidate_slot[:-1]
        self.slot_start = np.flatnonzero(first)
        self.n_tasks = data.n_tasks
        lengths = np.array([len(w) for w in self.vocabulary] + [0], dtype=np.int64)
        ranks = np.empty(n_words + 1, dtype=np.int64)
        ranks[np.argsort(np.array(self.vocabulary, dtype=object), kind="stable")] = np.arange(
            n_words
        )
        ranks[n_words] = -1
        self.candidate_length = lengths[self.candidate_word]
        self.candidate_rank = ranks[self.candidate_word]

    def candidate_totals(self, cell_weight: np.ndarray) -> np.ndarray:
        """Sum of ``cell_weight`` over the entries of each candidate."""
        return np.bincount(
            self.cell_candidate, weights=cell_weight, minlength=len(self.candidate_slot)
        )

    def winners(self, score: np.ndarray) -> np.ndarray:
        """The candidate of each slot with the highest score (ties: longer word, then
        the word that sorts last)."""
        score = np.round(score, 12)  # float sums of equal votes tie exactly
        order = np.lexsort(
            (self.candidate_rank, self.candidate_length, score, self.candidate_slot)
        )
        last = np.ones(len(order), dtype=bool)
        last[:-1] = self.candidate_slot[order][1:] != self.candidate_slot[order][:-1]
        return order[last]  # one per slot, slots in order

    def texts(self, winners: np.ndarray) -> np.ndarray:
        """Each task's text: its slots' winning words in slot order, nulls dropped."""
        word = self.candidate_word[winners]
        keep = word != self.n_words
        vocabulary = np.array([*self.vocabulary, ""], dtype=object)
        chosen = vocabulary[word[keep]].tolist()
        bounds = np.searchsorted(self.slot_task[keep], np.arange(self.n_tasks + 1))
        out = np.empty(self.n_tasks, dtype=object)
        for t in range(self.n_tasks):
            out[t] = " ".join(chosen[bounds[t] : bounds[t + 1]])
        return out

    def confidence(self, winners: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Mean over each task's slots of the winner's ``share``."""
        total = np.bincount(self.slot_task, weights=share[winners], minlength=self.n_tasks)
        n = np.bincount(self.slot_task, minlength=self.n_tasks)
        return total / np.maximum(n, 1)

    def slot_softmax(self, score: np.ndarray) -> np.ndarray:
        """Per-slot softmax of candidate scores."""
        peak = np.maximum.reduceat(score, self.slot_start)
        exp = np.exp(score - peak[self.candidate_slot])
        total = np.bincount(self.candidate_slot, weights=exp, minlength=self.n_slots)
        return exp / total[self.candidate_slot]


class ROVER(BaseTextAggregator):
    """ROVER (Fiscus 1997): align each task's answers into a word transition network
    and keep, in each slot, the word most answers give (see the module docstring).

    Attributes
    ----------
    texts_ : ndarray of object, shape (n_tasks,)
    confidence_ : ndarray of shape (n_tasks,)
        Mean over the task's slots of the winning entry's share of the answers.

    Examples
    --------
    >>> from crowdlearn.data import Texts
    >>> data = Texts.from_arrays(
    ...     ["t"] * 3, ["a", "b", "c"], ["the cat sat", "the cat sat down", "a cat sat"])
    >>> ROVER().fit(data).texts_.tolist()
    ['the cat sat']
    """

    def _fit(self, data: Texts) -> None:
        votes = SlotVotes(data)
        count = votes.candidate_totals(np.ones(len(votes.cell_row)))
        winners = votes.winners(count)
        answers = np.bincount(votes.candidate_slot, weights=count, minlength=votes.n_slots)
        self.texts_ = votes.texts(winners)
        self.confidence_ = votes.confidence(winners, count / answers[votes.candidate_slot])


class WeightedROVER(BaseTextAggregator):
    """ROVER networks with a vote weighted by each worker's word accuracy, estimated by
    EM on the slots (ours; see the module docstring for the model).

    Parameters
    ----------
    max_iter : int, default 50
    tol : float, default 1e-6
        Stop when no worker accuracy moves by more than ``tol``.

    Attributes
    ----------
    texts_ : ndarray of object, shape (n_tasks,)
    confidence_ : ndarray of shape (n_tasks,)
        Mean over the task's slots of the winner's posterior probability.
    accuracy_ : ndarray of shape (n_workers,)
        Each worker's estimated word accuracy (posterior mean under a Beta(1, 1) prior).
    n_iter_ : int

    Examples
    --------
    >>> from crowdlearn.data import Texts
    >>> data = Texts.from_arrays(
    ...     ["t"] * 3, ["a", "b", "c"], ["the cat sat", "the cat sat down", "a cat sat"])
    >>> WeightedROVER().fit(data).texts_.tolist()
    ['the cat sat']
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("accuracy_",)

    def __init__(self, max_iter: int = 50, tol: float = 1e-6) -> None:
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, data: Texts) -> None:
        votes = SlotVotes(data)
        n_cells = len(votes.cell_row)
        worker = data.worker[votes.cell_row]
        entries = np.bincount(worker, minlength=data.n_workers).astype(np.float64)
        count = votes.candidate_totals(np.ones(n_cells))
        answers = np.bincount(votes.candidate_slot, weights=count, minlength=votes.n_slots)
        posterior = count / answers[votes.candidate_slot]
        n_candidates = np.bincount(votes.candidate_slot, minlength=votes.n_slots)
        log_others = np.log(np.maximum(n_candidates - 1, 1))[
            votes.candidate_slot[votes.cell_candidate]
        ]
        accuracy = np.full(data.n_workers, 0.5)
        self.n_iter_ = 0
        for iteration in range(1, self.max_iter + 1):
            correct = np.bincount(
                worker, weights=posterior[votes.cell_candidate], minlength=data.n_workers
            )
            new = (1.0 + correct) / (2.0 + entries)
            change = float(np.max(np.abs(new - accuracy)))
            accuracy = new
            log_odds = np.log(accuracy) - np.log1p(-accuracy)
            score = votes.candidate_totals(log_odds[worker] + log_others)
            posterior = votes.slot_softmax(score)
            self.n_iter_ = iteration
            if change <= self.tol:
                break
        winners = votes.winners(posterior)
        self.texts_ = votes.texts(winners)
        self.confidence_ = votes.confidence(winners, posterior)
        self.accuracy_ = accuracy
