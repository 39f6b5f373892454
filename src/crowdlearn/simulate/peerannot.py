"""peerannot's simulated crowds.

Lefort, Charlier, Joly and Salmon, *Peerannot: learning from crowdsourced image datasets
with Python*, Computo (2023), section 3.2: independent mistakes (3.2.1), the
student-teacher setting of correlated mistakes (3.2.2) and discrete task difficulty after
Whitehill et al. (3.2.3), plus the hammer-spammer crowd of peerannot's ``simulate``
command. Defaults follow the paper's examples.

Shared by all four:

* each task's true class is uniform over the ``n_classes`` classes (or drawn from
  ``class_prior`` in :func:`independent_confusion`);
* each task receives ``feedback`` labels from distinct workers drawn uniformly at random
  (with ``imbalance_votes``, a number drawn uniformly in ``1..feedback`` instead), with
  at most ``workerload`` tasks per worker when that bound is given;
* a worker answers a task of true class ``k`` by drawing from row ``k`` of its confusion
  matrix.

Workers are numbered in peerannot's order (e.g. hammers before spammers, teachers
before students); ``SimulationInfo.worker_group`` names each one's group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crowdlearn.data._memory import array_bytes, check_allocation
from crowdlearn.simulate._assign import assign_workers
from crowdlearn.simulate._checks import (
    check_int,
    check_labels_per_task,
    check_proportions,
    check_real,
)
from crowdlearn.simulate._draw import draw_labels
from crowdlearn.simulate._matrices import (
    dirichlet_rows,
    identity_rows,
    move_row_max_to_diagonal,
    uniform_rows,
)
from crowdlearn.simulate._result import Simulated, simulated

#: Task difficulty levels of :func:`discrete_difficulty`, in the order of their codes.
DIFFICULTIES = ("easy", "hard", "random")


def independent_confusion(
    n_worker: int = 30,
    n_task: int = 200,
    n_classes: int = 5,
    feedback: int = 10,
    *,
    workerload: int | None = None,
    imbalance_votes: bool = False,
    class_prior: Sequence[float] | None = None,
    seed: int | None = 0,
    return_info: bool = False,
) -> Simulated:
    """Independent mistakes: one diagonally dominant confusion matrix per worker.

    Every row of every worker's matrix is drawn uniformly on the simplex
    (Dirichlet(1, ..., 1)); the row's largest entry is then swapped onto the diagonal.
    This is the Dawid-Skene model itself (peerannot paper, section 3.2.1).

    Parameters
    ----------
    n_worker, n_task, n_classes : int
        Sizes of the crowd (at least 1, 1 and 2).
    feedback : int
        Labels per task, from distinct workers (at most ``n_worker``).
    workerload : int, optional
        Upper bound on the number of tasks answered by each worker.
    imbalance_votes : bool
        Draw each task's number of labels uniformly in ``1..feedback``.
    class_prior : sequence of float, optional
        Probability of each true class (``n_classes`` non-negative numbers summing to
        1), for class-imbalanced crowds. None (the default) draws the true classes
        uniformly, exactly as without this parameter.
    seed : int or None
        Seed of ``numpy.random.default_rng``; the same seed gives the same crowd.
    return_info : bool
        Also return a :class:`SimulationInfo`.

    Returns
    -------
    CrowdData, or (CrowdData, SimulationInfo) when ``return_info``
        Tasks, workers and classes are numbered from 0; ``truth`` is set.

    Examples
    --------
    >>> data = independent_confusion(seed=1)
    >>> data
    CrowdData(n_tasks=200, n_workers=30, n_classes=5, n_annotations=2000, truth=200 known)
    """
    params = _common_params("independent-confusion", locals())
    rng, truth = _start(params)
    confusions = dirichlet_rows(rng, params["n_worker"], params["n_classes"], 1.0)
    confusions = move_row_max_to_diagonal(confusions)
    return _answer(rng, truth, confusions, params)


def hammer_spammer(
    n_worker: int = 30,
    n_task: int = 200,
    n_classes: int = 5,
    ratio: float = 0.1,
    feedback: int = 10,
    *,
    workerload: int | None = None,
    imbalance_votes: bool = False,
    seed: int | None = 0,
    return_info: bool = False,
) -> Simulated:
    """Hammers, who are always right, and spammers, who answer uniformly at random.

    ``floor(ratio * n_worker)`` workers are spammers (every confusion row ``1/K``), the
    others hammers (identity matrix). This is the default strategy of peerannot's
    ``simulate`` command.

    Parameters
    ----------
    ratio : float in [0, 1]
        Share of spammers.
    n_worker, n_task, n_classes, feedback, workerload, imbalance_votes, seed, return_info
        As in :func:`independent_confusion`.
    """
    params = _common_params("hammer-spammer", locals())
    n_worker, n_classes = params["n_worker"], params["n_classes"]
    n_spammer = _share_of(params["ratio"], n_worker)
    rng, truth = _start(params)
    confusions = np.concatenate(
        [identity_rows(n_worker - n_spammer, n_classes), uniform_rows(n_spammer, n_classes)]
    )
    groups = np.repeat(["hammer", "spammer"], [n_worker - n_spammer, n_spammer])
    return _answer(rng, truth, confusions, params, worker_group=groups)


def student_teacher(
    n_worker: int = 50,
    n_task: int = 200,
    n_classes: int = 5,
    ratio: float = 0.8,
    feedback: int = 10,
    *,
    workerload: int | None = None,
    imbalance_votes: bool = False,
    seed: int | None = 0,
    return_info: bool = False,
) -> Simulated:
    """Correlated mistakes: students copy the confusion matrix of a teacher.

    ``floor(ratio * n_worker)`` workers are students, the rest teachers. Teachers'
    matrices are drawn as in :func:`independent_confusion` (diagonally dominant); each
    student is assigned a teacher uniformly at random and answers with that teacher's
    matrix, independently of it (peerannot paper, section 3.2.2). Workers
    ``0..n_teacher-1`` are the teachers; ``SimulationInfo.worker_group`` reads
    ``"teacher"`` or ``"student_of_<teacher's worker code>"``.

    Parameters
    ----------
    ratio : float in [0, 1]
        Share of students; at least one teacher must remain when there are students.
    n_worker, n_task, n_classes, feedback, workerload, imbalance_votes, seed, return_info
        As in :func:`independent_confusion`.
    """
    params = _common_params("student-teacher", locals())
    n_worker, n_classes = params["n_worker"], params["n_classes"]
    n_student = _share_of(params["ratio"], n_worker)
    n_teacher = n_worker - n_student
    if n_teacher == 0:
        raise ValueError(
            f"ratio={ratio} makes all {n_worker} workers students: at least one teacher is needed"
        )
    rng, truth = _start(params)
    teachers = move_row_max_to_diagonal(dirichlet_rows(rng, n_teacher, n_classes, 1.0))
    followed = rng.integers(n_teacher, size=n_student)
    confusions = np.concatenate([teachers, teachers[followed]])
    groups = np.concatenate(
        [np.full(n_teacher, "teacher"), np.char.add("student_of_", followed.astype(str))]
    )
    return _answer(rng, truth, confusions, params, worker_group=groups)


def discrete_difficulty(
    n_worker: int = 100,
    n_task: int = 200,
    n_classes: int = 5,
    ratio: float = 0.35,
    ratio_diff: float = 1.0,
    random: float = 0.0,
    feedback: int = 10,
    *,
    workerload: int | None = None,
    imbalance_votes: bool = False,
    seed: int | None = 0,
    return_info: bool = False,
) -> Simulated:
    """Good and bad workers facing easy, hard and random tasks (Whitehill et al., 2009).

    ``floor(ratio * n_worker)`` good workers have rows drawn from Dirichlet(0.2, ...,
    0.2) with the row maximum swapped onto the diagonal; the other, bad, workers have
    rows drawn uniformly on the simplex, without swap. Each task is ``"hard"`` with
    probability ``p_hard = (1 - random) / (ratio_diff + 1)``, ``"easy"`` with
    ``ratio_diff * p_hard`` and ``"random"`` with ``random``. Easy tasks are answered
    correctly by everyone, random tasks uniformly at random, hard tasks following the
    worker's confusion matrix (peerannot paper, section 3.2.3).

    Parameters
    ----------
    ratio : float in [0, 1]
        Share of good workers.
    ratio_diff : float >= 0
        Odds of easy against hard tasks.
    random : float in [0, 1]
        Probability that a task is unidentifiable (answered at random).
    n_worker, n_task, n_classes, feedback, workerload, imbalance_votes, seed, return_info
        As in :func:`independent_confusion`.
    """
    params = _common_params("discrete-difficulty", locals())
    n_worker, n_classes = params["n_worker"], params["n_classes"]
    n_good = _share_of(params["ratio"], n_worker)
    odds_easy, p_random = params["ratio_diff"], params["random"]
    p_hard = (1.0 - p_random) / (odds_easy + 1.0)
    rng, truth = _start(params)
    difficulty = rng.choice(
        len(DIFFICULTIES), size=len(truth), p=[odds_easy * p_hard, p_hard, p_random]
    )
    good = move_row_max_to_diagonal(dirichlet_rows(rng, n_good, n_classes, 0.2))
    bad = dirichlet_rows(rng, n_worker - n_good, n_classes, 1.0)
    groups = np.repeat(["good", "bad"], [n_good, n_worker - n_good])
    return _answer(
        rng,
        truth,
        np.concatenate([good, bad]),
        params,
        worker_group=groups,
        difficulty=difficulty,
    )


# ---------------------------------------------------------------------- shared steps


def _common_params(strategy: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate the parameters of a strategy.

    ``arguments`` is the strategy's ``locals()`` taken before anything else, i.e. its
    arguments; they are returned, validated, with the strategy name first.
    """
    n_worker = check_int("n_worker", arguments["n_worker"])
    checked: dict[str, Any] = {
        "n_worker": n_worker,
        "n_task": check_int("n_task", arguments["n_task"]),
        "n_classes": check_int("n_classes", arguments["n_classes"], minimum=2),
        "feedback": check_labels_per_task("feedback", arguments["feedback"], n_worker, "n_worker"),
        "imbalance_votes": bool(arguments["imbalance_votes"]),
    }
    # Every strategy draws an (n_worker, K, K) array of confusion matrices and the
    # answers are stored as int32 codes; refuse sizes that cannot fit before drawing.
    k = checked["n_classes"]
    check_allocation(
        array_bytes([n_worker + 2, k, k]),
        f"the confusion matrices of {n_worker} workers x {k} x {k} classes",
    )
    if arguments["workerload"] is not None:
        checked["workerload"] = check_int("workerload", arguments["workerload"])
    if "ratio" in arguments:
        checked["ratio"] = check_real("ratio", arguments["ratio"], 0.0, 1.0)
    if arguments.get("class_prior") is not None:
        prior = check_proportions("class_prior", arguments["class_prior"])
        if len(prior) != checked["n_classes"]:
            raise ValueError(
                f"class_prior has {len(prior)} entries but n_classes={checked['n_classes']}"
            )
        checked["class_prior"] = prior.tolist()
    if "ratio_diff" in arguments:
        checked["ratio_diff"] = check_real("ratio_diff", arguments["ratio_diff"], 0.0)
        checked["random"] = check_real("random", arguments["random"], 0.0, 1.0)
    return {"strategy": strategy, **arguments, **checked}


def _share_of(ratio: float, n_worker: int) -> int:
    """``floor(ratio * n_worker)`` as peerannot counts it, immune to float noise
    (``0.29 * 100`` is 28.999...)."""
    return math.floor(ratio * n_worker + 1e-9)


def _start(params: dict[str, Any]) -> tuple[np.random.Generator, np.ndarray]:
    """The seeded generator and the true classes: uniform over the classes, or drawn
    from ``params["class_prior"]`` when it is set."""
    rng = np.random.default_rng(params["seed"])
    prior = params.get("class_prior")
    if prior is None:
        return rng, rng.integers(params["n_classes"], size=params["n_task"])
    return rng, rng.choice(params["n_classes"], size=params["n_task"], p=prior)


def _answer(
    rng: np.random.Generator,
    truth: np.ndarray,
    confusions: np.ndarray,
    params: dict[str, Any],
    *,
    worker_group: np.ndarray | None = None,
    difficulty: np.ndarray | None = None,
) -> Simulated:
    """Assign workers to tasks, draw their answers and package the result."""
    return_info = params.pop("return_info")
    n_worker, n_classes, feedback = params["n_worker"], params["n_classes"], params["feedback"]
    if params["imbalance_votes"]:
        n_labels = rng.integers(1, feedback + 1, size=len(truth))
    else:
        n_labels = np.full(len(truth), feedback)
    task, worker = assign_workers(n_labels, n_worker, rng, workerload=params["workerload"])
    if difficulty is None:
        label = draw_labels(confusions, worker, truth[task], rng)
    else:
        # Easy and random tasks are answered by two extra "workers": always right, and
        # uniform. Hard tasks keep the real worker's matrix.
        extended = np.concatenate(
            [confusions, identity_rows(1, n_classes), uniform_rows(1, n_classes)]
        )
        level = difficulty[task]
        easy = level == DIFFICULTIES.index("easy")
        unidentifiable = level == DIFFICULTIES.index("random")
        answering = np.select([easy, unidentifiable], [n_worker, n_worker + 1], worker)
        label = draw_labels(extended, answering, truth[task], rng)
    return simulated(
        task,
        worker,
        label,
        truth,
        confusions,
        params=params,
        return_info=return_info,
        worker_group=worker_group,
        task_difficulty=None if difficulty is None else np.array(DIFFICULTIES)[difficulty],
    )
