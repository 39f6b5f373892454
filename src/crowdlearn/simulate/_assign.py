"""Which workers label which task: each task gets distinct workers, drawn at random.

Every task ``i`` receives ``n_labels[i]`` distinct workers by *successive sampling*: each
next worker is drawn with probability proportional to its weight among the workers the
task does not have yet (equal weights: a uniform random subset). Two exact ways compute
it, picked by cost:

* slot by slot with rejection (redraw a worker the task already has), in
  O(annotations) when the workers a task holds carry little of the total weight: the
  usual sparse case, whatever the crowd size;
* an *exponential race* (the Gumbel-top-k trick): every (task, worker) pair gets a key
  ``E / weight[worker]``, ``E ~ Exp(1)``, and each task keeps its smallest keys. It
  costs O(tasks x workers), so tasks go in chunks of about ``CHUNK_KEYS`` keys; it
  serves dense demands and the ``workerload`` cap.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

#: Number of (task, worker) keys held in memory at once (float32, so ~16 MB).
CHUNK_KEYS = 1 << 22


def assign_workers(
    n_labels: np.ndarray,
    n_workers: int,
    rng: np.random.Generator,
    *,
    weights: np.ndarray | None = None,
    workerload: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw distinct workers for every task.

    Parameters
    ----------
    n_labels : array of int, shape (n_tasks,)
        Number of distinct workers each task receives (``0..n_workers``).
    n_workers : int
    rng : numpy Generator
    weights : array of shape (n_workers,), optional
        Positive relative chances of the workers to be drawn (successive sampling);
        uniform by default.
    workerload : int, optional
        Upper bound on the number of tasks of each worker (peerannot's ``workerload``).
        Chunks of tasks are then filled one after the other, a worker's chance being
        also proportional to the room it has left; inside a chunk, a worker picked by
        more tasks than it has room for keeps a random subset of them and the others
        draw again among the workers that still have room. Whenever the tasks fit in one
        chunk this always succeeds when the demand is feasible.

    Returns
    -------
    task, worker : arrays of int32
        One entry per annotation, grouped by task in increasing task order.

    Raises
    ------
    ValueError
        When a task asks for more workers than exist, when the labels asked for exceed
        ``n_workers * workerload``, or when the random filling of a later chunk runs out
        of workers with room left for some task (only possible when ``workerload``
        leaves almost no slack).
    """
    n_labels = np.asarray(n_labels, dtype=np.int64)
    too_many = np.flatnonzero(n_labels > n_workers)
    if len(too_many):
        raise ValueError(
            f"task {too_many[0]} asks for {n_labels[too_many[0]]} labels but there are only "
            f"{n_workers} workers: a task's labels come from distinct workers"
        )
    weights = np.ones(n_workers) if weights is None else np.asarray(weights, dtype=np.float64)
    if workerload is None and _rejection_is_cheap(n_labels, weights):
        return _successive_draws(n_labels, weights, rng)
    scale = (1.0 / weights).astype(np.float32)
    spare = None
    if workerload is not None:
        demand = int(n_labels.sum())
        if demand > n_workers * workerload:
            raise ValueError(
                f"{demand} labels are asked for but n_worker={n_workers} workers with "
                f"workerload={workerload} can give at most {n_workers * workerload}"
            )
        spare = np.full(n_workers, workerload, dtype=np.int64)

    # Chunks of equal size, so that the last one is not a handful of tasks facing the
    # leftover capacity alone.
    n_tasks = len(n_labels)
    n_chunks = max(1, -(-n_tasks * n_workers // CHUNK_KEYS))
    edges = np.arange(n_chunks + 1) * n_tasks // n_chunks
    tasks, workers = [], []
    for start, stop in pairwise(edges):
        counts = n_labels[start:stop]
        keys = rng.standard_exponential((len(counts), n_workers), dtype=np.float32)
        keys *= scale
        if spare is None:
            rows, chosen = _smallest_keys(keys, counts)
        else:
            # Chances proportional to the room left keep the loads in step with the
            # cap, so that later chunks still find enough distinct workers.
            with np.errstate(divide="ignore"):
                keys /= spare.astype(np.float32)
            rows, chosen = _capped_choice(keys, counts, spare, rng, workerload, start)
            spare -= np.bincount(chosen, minlength=n_workers)
        tasks.append((rows + start).astype(np.int32))
        workers.append(chosen.astype(np.int32))
    return np.concatenate(tasks), np.concatenate(workers)


def _rejection_is_cheap(n_labels: np.ndarray, weights: np.ndarray) -> bool:
    """True when a task's last draw is rejected at most half of the time: the workers it
    already holds carry at most half of the weight, even when they are the heaviest."""
    widest = int(n_labels.max(initial=0))
    heaviest = np.sort(weights)[::-1][: max(widest - 1, 0)]
    return bool(heaviest.sum() <= 0.5 * weights.sum())


def _successive_draws(
    n_labels: np.ndarray, weights: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Fill slot after slot: every task still needing a worker draws one proportionally
    to the weights, and draws again while it gets a worker it already has."""
    cumulative = np.cumsum(weights)
    widest = int(n_labels.max(initial=0))
    chosen = np.full((len(n_labels), widest), -1, dtype=np.int64)
    for slot in range(widest):
        pending = np.flatnonzero(n_labels > slot)
        while len(pending):
            targets = rng.random(len(pending)) * cumulative[-1]
            # min(): a product rounded up to the total must not fall beyond the last worker
            draws = np.minimum(
                np.searchsorted(cumulative, targets, side="right"), len(weights) - 1
            )
            again = (chosen[pending, :slot] == draws[:, None]).any(axis=1)
            chosen[pending[~again], slot] = draws[~again]
            pending = pending[again]
    wanted = np.arange(widest) < n_labels[:, None]
    task = np.repeat(np.arange(len(n_labels), dtype=np.int32), n_labels)
    return task, chosen[wanted].astype(np.int32)


def _smallest_keys(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the ``counts[row]`` smallest keys of each row, by row then key."""
    widest = int(counts.max(initial=0))
    if widest == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    best = np.argpartition(keys, widest - 1, axis=1)[:, :widest]
    by_key = np.argsort(np.take_along_axis(keys, best, axis=1), axis=1)
    best = np.take_along_axis(best, by_key, axis=1)
    wanted = np.arange(widest) < counts[:, None]
    rows = np.broadcast_to(np.arange(len(counts))[:, None], wanted.shape)[wanted]
    return rows, best[wanted]


def _capped_choice(
    keys: np.ndarray,
    counts: np.ndarray,
    spare: np.ndarray,
    rng: np.random.Generator,
    workerload: int,
    first_task: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Smallest keys per row such that no worker is picked more than ``spare`` times.

    Each round, a worker picked too often keeps a random ``spare`` of the rows that
    picked it; it is then closed (infinite key) to every other row, and those rows pick
    their next smallest keys. Every round closes at least one key, so this ends. Rows
    left short (all workers with room already label them) are completed by exchanges.
    """
    while True:
        rows, chosen = _smallest_keys(keys, counts)
        found = np.isfinite(keys[rows, chosen])
        rows, chosen = rows[found], chosen[found]
        picked = np.bincount(chosen, minlength=len(spare))
        if np.all(picked <= spare):
            break
        keep = keep_random_quota(chosen, spare, rng)
        full = picked >= spare
        held = keep & full[chosen]
        held_keys = keys[rows[held], chosen[held]]
        keys[:, full] = np.inf
        keys[rows[held], chosen[held]] = held_keys
    member = np.zeros(keys.shape, dtype=bool)
    member[rows, chosen] = True
    if len(rows) < counts.sum():
        _complete_short_rows(member, counts, spare - picked, rng, workerload, first_task)
    return np.nonzero(member)


def _complete_short_rows(
    member: np.ndarray,
    counts: np.ndarray,
    room: np.ndarray,
    rng: np.random.Generator,
    workerload: int,
    first_task: int,
) -> None:
    """Give short rows their missing workers, in place, without breaking the cap.

    A short row already holds every worker ``w`` with room left, so another row ``j``
    without ``w`` hands one of its workers ``v`` to the short row and takes ``w``
    instead: the short row gains a worker, ``w`` gains a task, every other load stays.
    This only runs when the cap is nearly tight, for the few labels still missing.
    """
    while np.any(short := member.sum(axis=1) < counts):
        row = int(np.flatnonzero(short)[0])
        with_room = np.flatnonzero(room > 0)
        open_workers = with_room[~member[row, with_room]]
        if len(open_workers):
            worker = rng.choice(open_workers)
            member[row, worker] = True
            room[worker] -= 1
            continue
        # The least used of them can be given to the most rows.
        used = member[:, with_room].sum(axis=0)
        worker = rng.choice(with_room[used == used.min()])
        lacking = member & ~member[row]
        donors = np.flatnonzero(~member[:, worker] & lacking.any(axis=1))
        if len(donors) == 0:
            raise ValueError(
                f"workerload={workerload} is too tight: no way was found to give task "
                f"{first_task + row} its {counts[row]} distinct workers; increase workerload "
                "or lower feedback"
            )
        donor = rng.choice(donors)
        given = rng.choice(np.flatnonzero(lacking[donor]))
        member[donor, given] = False
        member[donor, worker] = True
        member[row, given] = True
        room[worker] -= 1


def keep_random_quota(
    values: np.ndarray, quota: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Mask keeping, for each value ``v`` of ``values``, ``quota[v]`` of its entries at
    random (all of them when there are fewer)."""
    order = np.lexsort((rng.random(len(values)), values))
    ordered = values[order]
    rank = np.arange(len(order)) - np.searchsorted(ordered, ordered)
    keep = np.empty(len(order), dtype=bool)
    keep[order] = rank < quota[ordered]
    return keep
