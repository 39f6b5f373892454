"""BoxEM: matched boxes consolidated with EM-estimated worker reliability.

After matching (:func:`~crowdlearn.aggregation.boxes._base.match_boxes`), each group
``g`` is a candidate object, real (``z_g = 1``) or not. Each worker ``w`` who saw the
group's task draws a box in it with probability ``r_w`` (recall) when it is real and
``f_w`` (false-box rate) when not: the two-coin model of Raykar et al. (JMLR 2010,
section 2) applied to "did the worker draw this object", as the detection
consolidation of Ground Truth weighs workers (SageMaker developer guide, "Annotation
consolidation"). The E-step (Bayes' rule, in log odds)::

    logit q_g = logit pi + sum_{w drew g} log(r_w / f_w)
                + sum_{w saw g, did not draw it} log((1 - r_w) / (1 - f_w))

and the M-step, each worker's rates shrunk toward the pooled rates ``R`` and ``F`` of
the whole crowd (a Beta prior of ``s = prior_strength`` pseudo-counts centred on them,
so that a worker with few boxes, or a small crowd, is not fitted to its noise)::

    r_w = (s R + sum_{g drawn by w} q_g) / (s + sum_{g seen by w} q_g)
    f_w = (s F + sum_{g drawn by w} (1 - q_g)) / (s + sum_{g seen by w} (1 - q_g))
    pi  = mean_g q_g

The corners of a group are the mean of its members' corners weighted by
``q_g``-weighted localisation quality of their workers, ``u_w / (1 - u_w)`` with
``u_w`` the worker's mean IoU with the fused boxes (WBF eq. 1-2, Solovyev, Peng and
Wang, Image and Vision Computing 2021, with worker weights for confidences); the class
is a vote weighted by each worker's one-coin class log odds
``log(a_w (K - 1) / (1 - a_w))`` with ``a_w`` the worker's (smoothed) share of boxes
with the group's class. The score is ``q_g``. All of it is ``np.bincount`` over the
group members and exposure pairs.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit, logit

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.boxes._base import BaseBoxAggregator, Groups, fuse, member_iou, vote
from crowdlearn.data.boxes import Boxes


class BoxEM(BaseBoxAggregator):
    """Existence, corners and class weighted by EM-estimated worker reliability.

    Parameters
    ----------
    iou_threshold : float in (0, 1], default 0.5
    threshold : float in [0, 1], default 0.5
        Posterior probability of being real above which a group is kept.
    max_iter : int, default 100
    tol : float, default 1e-6
        Stop when no posterior moves by more than ``tol``.
    prior_strength : float > 0, default 10
        Pseudo-counts pulling each worker's ``r_w`` and ``f_w`` toward the rates pooled
        over all workers (a worker with few boxes gets about the crowd's rates).

    Attributes
    ----------
    false_rate_ : ndarray (n_workers,)
        ``f_w``: probability of drawing a box on a group that is not an object.
    n_iter_, converged_

    Examples
    --------
    >>> from crowdlearn.simulate.boxes import simulate_boxes
    >>> model = BoxEM().fit(simulate_boxes(n_tasks=20, random_state=0))
    >>> list(model.boxes_.columns), bool(model.converged_)
    (['task', 'class', 'x_min', 'y_min', 'x_max', 'y_max', 'score'], True)
    """

    param_bounds: ClassVar[dict[str, Bounds]] = {
        **BaseBoxAggregator.param_bounds,
        "max_iter": Bounds(0, integer=True),  # 0: the initialisation alone
        "tol": Bounds(0),  # 0: run max_iter iterations
        "prior_strength": Bounds(0, low_open=True),
    }

    def __init__(
        self,
        iou_threshold: float = 0.5,
        threshold: float = 0.5,
        max_iter: int = 100,
        tol: float = 1e-6,
        prior_strength: float = 10.0,
    ) -> None:
        self.iou_threshold = iou_threshold
        self.threshold = threshold
        self.max_iter = max_iter
        self.tol = tol
        self.prior_strength = prior_strength

    def _consolidate(
        self, data: Boxes, groups: Groups
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n, g = data.n_workers, groups.n_groups
        k = max(data.n_classes, 2)
        q = groups.n_members / groups.n_seen  # majority share as the start
        weight = np.ones(len(groups.group))
        class_weight = np.ones(len(groups.group))
        self.converged_ = False
        self.n_iter_ = 0
        fused = fuse(groups, weight)
        label = vote(groups, class_weight, data.n_classes)
        false = np.full(n, np.nan)  # max_iter=0: the initial boxes, no rate estimated
        for it in range(int(self.max_iter)):
            # M-step
            seen_q = np.bincount(groups.seen_worker, weights=q[groups.seen_group], minlength=n)
            seen_n = np.bincount(groups.seen_worker, minlength=n).astype(np.float64)
            mq = q[groups.group]
            drawn_q = np.bincount(groups.worker, weights=mq, minlength=n)
            drawn_n = np.bincount(groups.worker, minlength=n).astype(np.float64)
            # worker rates shrunk toward the pooled rates (prior_strength pseudo-counts)
            s = float(self.prior_strength)
            pooled_r = (1.0 + drawn_q.sum()) / (2.0 + seen_q.sum())
            pooled_f = (1.0 + drawn_n.sum() - drawn_q.sum()) / (2.0 + seen_n.sum() - seen_q.sum())
            recall = (s * pooled_r + drawn_q) / (s + seen_q)
            false = (s * pooled_f + drawn_n - drawn_q) / (s + seen_n - seen_q)
            pi = np.clip(q.mean() if g else 0.5, 1e-6, 1 - 1e-6)
            iou = member_iou(groups, fused)
            quality = (1.0 + np.bincount(groups.worker, weights=mq * iou, minlength=n)) / (
                2.0 + drawn_q
            )
            quality = np.clip(quality, 1e-3, 1 - 1e-3)
            right = (groups.label == label[groups.group]).astype(np.float64)
            accuracy = (1.0 + np.bincount(groups.worker, weights=mq * right, minlength=n)) / (
                2.0 + drawn_q
            )
            # E-step
            miss = np.log1p(-recall) - np.log1p(-false)
            hit = np.log(recall) - np.log(false)
            log_odds = (
                logit(pi)
                + np.bincount(groups.seen_group, weights=miss[groups.seen_worker], minlength=g)
                + np.bincount(groups.group, weights=(hit - miss)[groups.worker], minlength=g)
            )
            new_q = expit(log_odds)
            weight = (quality / (1.0 - quality))[groups.worker]
            class_weight = np.maximum(np.log(accuracy * (k - 1) / (1.0 - accuracy)), 1e-6)[
                groups.worker
            ]
            fused = fuse(groups, weight)
            label = vote(groups, class_weight, data.n_classes)
            change = np.max(np.abs(new_q - q)) if g else 0.0
            q = new_q
            self.n_iter_ = it + 1
            if change < self.tol:
                self.converged_ = True
                break
        self.false_rate_ = false if g else np.full(n, np.nan)
        return fused, label, q
