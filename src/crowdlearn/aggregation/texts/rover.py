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

from typing import ClassVar

import numpy as np

from crowdlearn.aggregation.texts._base import (
    BaseTextAggregator,
    task_groups,
    word_codes,
)
from crowdlearn.data.texts import Texts

NULL = -1
_DIAGONAL, _SKIP, _INSERT = 0, 1, 2


def word_network(answers: list[list[int]]) -> list[list[int]]:
    """The word transition network of one task's answers (word codes, in order).

    Returns one list per slot holding, for each answer, its word code in that slot or
    :data:`NULL` (-1). See the module docstring for the costs and the tie rule.

    Examples
    --------
    >>> word_network([[1, 2, 3], [1, 3]])
    [[1, 1], [2, -1], [3, 3]]
    """
    slots = [[w] for w in answers[0]]
    members = [{w} for w in answers[0]]
    for done, words in enumerate(answers[1:], start=1):
        n, m = len(words), len(slots)
        previous = list(range(m + 1))
        back = [[_SKIP] * (m + 1)]
        skip_costs = [0 if NULL in slot else 1 for slot in members]
        for i in range(1, n + 1):
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
        merged: list[list[int]] = []
        merged_members: list[set[int]] = []
        i, j = n, m
        while i > 0 or j > 0:
            move = back[i][j]
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
            network = np.asarray(word_network(coded[start : start + count]), dtype=np.int64)
            slot_counts[t] = network.shape[0]
            entries.append(network.ravel())
            rows.append(np.tile(order[start : start + count], network.shape[0]))
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
