"""Learning from crowds: classifiers trained directly on crowd annotations.

A learner is a backbone (any ``torch.nn.Module`` mapping inputs to K logits; an MLP by
default), an optional noise model of the crowd, and a recipe; one shared trainer runs
every method (mini-batches of tasks with their annotations, optimiser, validation-based
model selection, early stopping, seeding, checkpoints). Every learner follows the
scikit-learn contract: ``fit(data, valid=None)``, ``predict_proba(X)``, ``predict(X)``,
``history_``, and ``save``/``load``.
"""

from crowdlearn.learning._base import TRAINING_PARAMS, BaseLearner
from crowdlearn.learning.backbones import MLP, SmallCNN, build_backbone
from crowdlearn.learning.crowd_layer import CrowdLayer
from crowdlearn.learning.two_stage import Supervised, TwoStage

__all__ = [
    "MLP",
    "TRAINING_PARAMS",
    "BaseLearner",
    "CrowdLayer",
    "SmallCNN",
    "Supervised",
    "TwoStage",
    "build_backbone",
]
