"""The campaign loop: which tasks need another label, who should give it, and when a
task is done (:func:`next_labels`, :func:`rank_tasks`); worker decisions are in
:func:`crowdlearn.identify.worker_decisions`."""

from crowdlearn.campaign.budget import labels_to_target
from crowdlearn.campaign.ranking import (
    fitted_model,
    learner_weights,
    next_labels,
    next_worker_confusion,
    rank_tasks,
    route_workers,
    worker_correctness,
)
from crowdlearn.campaign.values import (
    SCORES,
    cavity_posteriors,
    mix_learner,
    next_label_value,
    one_coin_confusion,
)

__all__ = [
    "SCORES",
    "cavity_posteriors",
    "fitted_model",
    "labels_to_target",
    "learner_weights",
    "mix_learner",
    "next_label_value",
    "next_labels",
    "next_worker_confusion",
    "one_coin_confusion",
    "rank_tasks",
    "route_workers",
    "worker_correctness",
]
