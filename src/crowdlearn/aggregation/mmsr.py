"""M-MSR: worker skills by robust rank-one completion of the worker covariance matrix.

Ma and Olshevsky, "Adversarial crowdsourcing through robust rank-one matrix completion",
NeurIPS 2020. In the one-coin model worker ``j`` answers the true class with
probability ``p_j`` and each of the ``K - 1`` other classes with probability
``(1 - p_j) / (K - 1)``. With the reliability ``s_j = (K p_j - 1) / (K - 1)``, two
workers who share tasks agree at a rate ``a_ij`` with

    C_ij = K / (K - 1) a_ij - 1 / (K - 1),    E[C_ij] = s_i s_j   (i != j),

so the observed entries of ``C`` are those of the rank-one matrix ``s s^T``, some of
them corrupted (few common tasks, adversarial workers). The steps:

* :func:`worker_covariance`: agreement counts ``sum_k B_k B_k^T`` and common-task counts
  ``B B^T`` from sparse worker x task indicator matrices (``B_k``: answers of class
  ``k``). Only pairs that share a task are stored, so memory is O(pairs), at worst
  O(n_workers^2).
* :meth:`MMSR._m_msr`: the paper's Matrix Mean-Subsequence-Reduced iteration on
  ``|C|``: alternately, for every worker at once, ``v_j`` = trimmed mean
  of ``|C_ij| / u_i`` over its partners ``i``, then ``u_i`` = trimmed mean of
  ``|C_ij| / v_j``. A trimmed mean drops up to ``F`` of the values below the current
  value and up to ``F`` above it, with ``F = floor(d / 2) - 1`` for ``d`` the smallest
  number of partners of a worker (workers who share a task). ``|s| = u / sqrt(|u| /
  |v|)``.
* :func:`_signs`: the signs of ``s`` from the sign pattern of ``C`` (same sign when
  ``C_ij > 0``, opposite when ``C_ij < 0``): the leading eigenvector of the normalised
  signed adjacency matrix, per connected component, oriented so that most workers are
  positive (honest).
* Reliabilities are clipped to ``[-1 / (K - 1) + eps, 1 - eps]`` (``eps = 1 / sqrt(n)``
  for ``n`` annotated tasks), turned into accuracies ``p_j`` and into the log-odds skills
  ``w_j = log((K - 1) p_j / (1 - p_j))``; tasks get the weighted majority vote.

Facts taken from crowd-kit's MMSR (and where this module departs from it): the
covariance construction, ``F`` from the sparsity, the trimming rule, the clipping and
the skills are crowd-kit's. crowd-kit gives pairs without common tasks and the diagonal
the value ``-1 / (K - 1)`` in the sign step (as if they disagreed); here they carry no
sign. crowd-kit finds the signs with a dense eigen-decomposition of a graph with one
node per worker and per positively correlated pair (memory quadratic in the number of
pairs) and
orients them once for all workers; here the signed adjacency stays sparse and each
connected component is oriented on its own. A worker who shares no task with another
keeps its random start in crowd-kit; here it gets ``eps``. crowd-kit's ``F`` is ``-1``
when some worker has fewer than two partners, which keeps only the largest value; here
``d`` is taken over the workers with partners and ``F >= 0``. A mean of exactly 0
becomes ``eps`` (crowd-kit only does this for a single remaining value; otherwise it
would divide by zero). After each iteration ``u`` and ``v`` are rescaled to equal norms,
which changes no estimate, and clipped to ``[eps^2, 1 / eps]``, which binds only when an
estimate leaves that range (a reliability is at most 1), as on data that no rank-one
matrix fits, where crowd-kit's iteration overflows. ``probas_`` is the softmax of the
weighted votes, which is the one-coin posterior under those skills; crowd-kit divides
the weighted votes by their sum, which is not a distribution once adversaries have
negative weights (where the sum is negative, its labels are the least voted classes).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from crowdlearn.aggregation._base import BaseAggregator, TieBreak
from crowdlearn.aggregation._design import normalise_log
from crowdlearn.data import CrowdData, CrowdDataError

#: Most workers accepted: the worker pairs can take O(n_workers^2) memory.
MAX_WORKERS = 20_000
#: Power iterations of the sign step, and the change at which it stops.
_SIGN_MAX_ITER = 1000
_SIGN_TOL = 1e-12


class MMSR(BaseAggregator):
    """M-MSR: robust worker skills from pairwise agreement, then a weighted vote.

    Parameters
    ----------
    max_iter : int, default 10000
        Maximum number of M-MSR iterations (each updates ``v`` then ``u``).
    tol : float, default 1e-10
        Stop when the Frobenius norm of the change of ``u v^T`` is below this.
    random_state : int, default 0
        Seed of the uniform initial ``u = v`` and of the random tie-break.
    tie_break : {"random", "lowest"}, default "random"

    Attributes
    ----------
    probas_ : ndarray (n_tasks, n_classes)
        Softmax of the skill-weighted votes (uniform for tasks without annotations).
    labels_ : ndarray (n_tasks,)
    skills_ : ndarray (n_workers,)
        Log-odds weight ``log((K - 1) p_j / (1 - p_j))`` of each worker: positive for
        workers better than chance, negative for adversaries, 0 at chance level.
    reliabilities_ : ndarray (n_workers,)
        The clipped reliabilities ``s_j`` (1 perfect, 0 chance, negative adversarial).
        A worker who shares no task with another gets ``1 / sqrt(n)`` (``n`` annotated
        tasks).
    history_ : DataFrame
        One row per iteration: ``iteration``, ``change`` (Frobenius norm of the change
        of ``u v^T``) and ``seconds``.
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.simulate import crowd_on_features
    >>> y = np.random.default_rng(0).integers(3, size=400)
    >>> data, info = crowd_on_features(
    ...     np.zeros((400, 1)), y, n_workers=20, labels_per_task=6,
    ...     groups={"expert": 0.7, "adversarial": 0.3}, return_info=True,
    ... )
    >>> skills = MMSR().fit(data).skills_
    >>> bool(skills[info.worker_group == "expert"].min() > 0)
    True
    >>> bool(skills[info.worker_group == "adversarial"].max() < 0)
    True
    """

    worker_attributes = ("skills_", "reliabilities_")
    accepts_anonymous = False

    def __init__(
        self,
        max_iter: int = 10000,
        tol: float = 1e-10,
        random_state: int | None = 0,
        tie_break: TieBreak = "random",
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.tie_break = tie_break

    def _fit(self, data: CrowdData) -> None:
        if int(self.max_iter) != self.max_iter or self.max_iter < 0:
            raise ValueError(f"max_iter must be a non-negative integer, got {self.max_iter!r}")
        if not self.tol >= 0:
            raise ValueError(f"tol must be non-negative, got {self.tol}")
        if data.n_workers > MAX_WORKERS:
            raise CrowdDataError(
                f"MMSR compares every pair of workers (O(n_workers^2) memory); the data "
                f"have {data.n_workers} workers, more than its limit of {MAX_WORKERS}"
            )
        k = max(data.n_classes, 2)  # one declared class: any K works, all answers agree
        annotated = np.count_nonzero(data.feedback_effort)
        if annotated < 2 and data.n_classes > 1:
            # eps = 1 / sqrt(1) clips every reliability to one value: no skill can be told
            raise CrowdDataError(
                "MMSR needs at least two annotated tasks: it estimates each worker's "
                "reliability from the agreement of workers over the tasks they share, and "
                f"the data have {annotated}; use majority vote (mv) for a single task"
            )
        eps = 1.0 / np.sqrt(max(annotated, 1))
        covariance = worker_covariance(data, k)
        magnitudes = self._m_msr(covariance, eps)
        signed = _signs(covariance, magnitudes) * magnitudes
        self.reliabilities_ = np.maximum(np.minimum(signed, 1 - eps), -1 / (k - 1) + eps)
        accuracy = self.reliabilities_ * (k - 1) / k + 1 / k
        self.skills_ = np.log(accuracy * (k - 1) / (1 - accuracy))
        cell = data.task.astype(np.int64) * data.n_classes + data.label
        votes = np.bincount(
            cell, weights=self.skills_[data.worker], minlength=data.n_tasks * data.n_classes
        )
        self.probas_, _ = normalise_log(votes.reshape(data.n_tasks, data.n_classes))

    def _initial_vector(self, n_workers: int) -> np.ndarray:
        """The random start of the rank-one iteration, in (0, 1]."""
        return 1.0 - np.random.default_rng(self.random_state).random(n_workers)

    def _m_msr(self, covariance: sp.csr_matrix, eps: float) -> np.ndarray:
        """``|s|`` from the trimmed-mean iteration on ``|C|``; ``eps`` for workers
        without partners. Sets ``history_``, ``n_iter_`` and ``converged_``."""
        start = time.perf_counter()
        n_workers = covariance.shape[0]
        partners = np.diff(covariance.indptr)
        paired = partners > 0
        trim = max(int(partners[paired].min()) // 2 - 1, 0) if paired.any() else 0
        row = np.repeat(np.arange(n_workers), partners)
        column, size = covariance.indices, np.abs(covariance.data)
        u = self._initial_vector(n_workers)
        v = u.copy()
        rows = []
        self.converged_ = not paired.any()  # nothing to estimate without pairs
        n_iter = int(self.max_iter) if paired.any() else 0
        for iteration in range(1, n_iter + 1):
            new_v = _trimmed_means(row, size / u[column], v, trim, eps)
            new_u = _trimmed_means(row, size / new_v[column], u, trim, eps)
            new_u, new_v = _balanced(new_u, new_v, paired, eps)
            change = _rank_one_change(u, v, new_u, new_v)
            u, v = new_u, new_v
            rows.append(
                {"iteration": iteration, "change": change, "seconds": time.perf_counter() - start}
            )
            if change < self.tol:
                self.converged_ = True
                break
        self.n_iter_ = len(rows)
        self.history_ = pd.DataFrame(rows, columns=["iteration", "change", "seconds"])
        if not rows:
            return np.full(n_workers, eps)
        scale = np.sqrt(np.linalg.norm(u[paired]) / np.linalg.norm(v[paired]))
        return np.where(paired, u / scale, eps)


def worker_covariance(data: CrowdData, n_classes: int) -> sp.csr_matrix:
    """Sparse symmetric (n_workers, n_workers) matrix of ``C_ij`` for the pairs ``i != j``
    that share a task (an explicit entry, possibly 0, for each such pair).

    ``C_ij = K / (K - 1) * agreements_ij / common_ij - 1 / (K - 1)``, counting pairs of
    annotations on common tasks.
    """
    n_workers = data.n_workers
    ones = np.ones(data.n_annotations)
    by_task = sp.csr_matrix((ones, (data.worker, data.task)), shape=(n_workers, data.n_tasks))
    answer_column = data.task.astype(np.int64) * data.n_classes + data.label
    by_answer = sp.csr_matrix(
        (ones, (data.worker, answer_column)), shape=(n_workers, data.n_tasks * data.n_classes)
    )
    common = _off_diagonal(by_task @ by_task.T)
    agreements = _off_diagonal(by_answer @ by_answer.T)
    # Agreeing pairs are a subset of the pairs with common tasks: place their counts on
    # the structure of `common` by matching sorted (row, column) keys.
    where = np.searchsorted(_pair_keys(common), _pair_keys(agreements))
    agreed = np.zeros(common.nnz)
    agreed[where] = agreements.data
    values = n_classes / (n_classes - 1) * agreed / common.data - 1 / (n_classes - 1)
    return sp.csr_matrix((values, common.indices, common.indptr), shape=common.shape)


def _off_diagonal(matrix: sp.spmatrix) -> sp.csr_matrix:
    """The matrix without its diagonal, in canonical CSR form (sorted indices)."""
    coo = sp.coo_matrix(matrix)
    keep = coo.row != coo.col
    result = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=coo.shape)
    result.sum_duplicates()
    return result


def _pair_keys(matrix: sp.csr_matrix) -> np.ndarray:
    """``row * n + column`` of each stored entry, ascending for canonical CSR."""
    row = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))
    return row * matrix.shape[1] + matrix.indices


def _trimmed_means(
    group: np.ndarray, values: np.ndarray, current: np.ndarray, trim: int, eps: float
) -> np.ndarray:
    """For every group (``group`` ascending), the mean of its ``values`` without its
    ``trim`` smallest values below ``current`` and ``trim`` largest above it (fewer if
    fewer are beyond ``current``). Groups left empty keep ``current``; a mean of 0
    becomes ``eps`` (it would make the next divisions infinite).

    The values are sorted as one padded table of a row per group (``inf`` beyond a
    group's size), so all groups are trimmed at once.
    """
    n_groups = len(current)
    sizes = np.bincount(group, minlength=n_groups)
    if trim > 0:
        slot = np.arange(len(values)) - (np.cumsum(sizes) - sizes)[group]
        table = np.full((n_groups, sizes.max()), np.inf)
        table[group, slot] = values
        table.sort(axis=1)
        below = np.minimum(np.bincount(group, values < current[group], n_groups), trim)
        above = np.minimum(np.bincount(group, values > current[group], n_groups), trim)
        rank = np.arange(table.shape[1])
        keep = (rank >= below[:, None]) & (rank < (sizes - above)[:, None])
        count = keep.sum(axis=1)
        total = np.where(keep, table, 0.0).sum(axis=1)
    else:
        count, total = sizes, np.bincount(group, weights=values, minlength=n_groups)
    means = np.divide(total, count, out=current.copy(), where=count > 0)
    means[(count > 0) & (means == 0)] = eps
    return means


def _balanced(
    u: np.ndarray, v: np.ndarray, paired: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """``u / c`` and ``v * c`` with equal norms over the paired workers, clipped to
    ``[eps^2, 1 / eps]``.

    The iteration is equivariant to ``(u, v) -> (u / c, v * c)``, so the balance changes
    no estimate; it keeps ``u`` and ``v`` of the order of ``|s| <= 1``, where the clip
    binds only on data that no rank-one matrix fits (e.g. ``C_01 > 0``, ``C_02 > 0``,
    ``C_12 = 0``), on which the iteration would send some values to infinity and others
    to 0.
    """
    scale = np.sqrt(np.linalg.norm(u[paired]) / np.linalg.norm(v[paired]))
    return np.clip(u / scale, eps**2, 1 / eps), np.clip(v * scale, eps**2, 1 / eps)


def _rank_one_change(u: np.ndarray, v: np.ndarray, new_u: np.ndarray, new_v: np.ndarray) -> float:
    """``||new_u new_v^T - u v^T||_F`` without forming the matrices, written with the
    differences ``du`` and ``dv`` so that no large terms cancel."""
    du, dv = new_u - u, new_v - v
    squared = du @ du * (new_v @ new_v) + u @ u * (dv @ dv) + 2 * (du @ u) * (new_v @ dv)
    return float(np.sqrt(max(squared, 0.0)))


def _signs(covariance: sp.csr_matrix, magnitudes: np.ndarray) -> np.ndarray:
    """+1 / -1 per worker from the sign pattern of ``C`` (+1 for workers without signed
    partners).

    The leading eigenvector of ``D^-1/2 S D^-1/2`` (``S = sign(C)``, ``D`` its degrees)
    has, on a balanced component, the sign of ``s``; it is found by power iteration on
    ``I + D^-1/2 S D^-1/2`` with a norm per connected component, so that every
    component converges to its own leading vector, started from ``sqrt(D) |s|``. Each
    component is then turned so that most of its workers are positive.
    """
    signs = sp.csr_matrix(
        (np.sign(covariance.data), covariance.indices, covariance.indptr), shape=covariance.shape
    )
    signs.eliminate_zeros()
    degree = np.diff(signs.indptr)
    scale = np.where(degree > 0, 1 / np.sqrt(np.maximum(degree, 1)), 0.0)
    operator = sp.diags(scale) @ signs @ sp.diags(scale)
    _, component = connected_components(signs, directed=False)

    def per_component_unit(vector: np.ndarray) -> np.ndarray:
        norms = np.sqrt(np.bincount(component, weights=vector**2))
        return vector / np.where(norms > 0, norms, 1.0)[component]

    vector = per_component_unit(np.sqrt(degree) * magnitudes)
    for _ in range(_SIGN_MAX_ITER):
        previous, vector = vector, per_component_unit(vector + operator @ vector)
        if np.abs(vector - previous).max(initial=0.0) < _SIGN_TOL:
            break
    sign = np.sign(vector)
    orientation = np.sign(np.bincount(component, weights=sign))
    sign *= np.where(orientation < 0, -1.0, 1.0)[component]
    return np.where(sign == 0, 1.0, sign)
