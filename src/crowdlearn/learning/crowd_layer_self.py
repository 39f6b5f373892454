"""DL-CL+Self: fill every missing annotation with a pre-trained Crowd Layer, retrain.

The augmentation baseline of the CrowdInG paper (Chu & Wang, KDD 2021, sec. 4.4.1):
"we complete the missing annotations using a pre-trained DL-CL model, and then train
another DL-CL model based on the completed annotations". It is one round of
:class:`~crowdlearn.learning.SelfCrowd` that adds *every* (task, annotator) pair not
observed, each with the most probable label of the pre-trained Crowd Layer's
annotator distribution, then trains a fresh Crowd Layer (MW on probabilities) on the
observed and completed annotations. Pseudo-annotations weigh as much as observed ones.
"""

from __future__ import annotations

from typing import Any, Literal

from crowdlearn.learning.crowd_layer import Variant
from crowdlearn.learning.self_crowd import SelfCrowd

#: ``n_per_round`` that takes every candidate pair.
ALL_PAIRS = 2**62


class CrowdLayerSelf(SelfCrowd):
    """DL-CL+Self: a Crowd Layer retrained on the annotations completed by another.

    Parameters
    ----------
    variant, on, trainable
        The Crowd Layer (see :class:`~crowdlearn.learning.CrowdLayer`).
    **training
        The shared training parameters (:class:`BaseLearner`), for both trainings.

    Attributes
    ----------
    history_ : DataFrame
        Two rows (round 0: the pre-trained Crowd Layer, round 1: the retrained one), see
        :class:`SelfCrowd`.
    pseudo_ : DataFrame
        The completed annotations.
    """

    def __init__(
        self,
        variant: Variant = "MW",
        on: Literal["probabilities", "logits"] = "probabilities",
        trainable: bool = True,
        **training: Any,
    ) -> None:
        super().__init__(
            n_per_round=ALL_PAIRS,
            n_rounds=1,
            selection="confidence",
            stopping="rounds",
            retrain="scratch",
            variant=variant,
            on=on,
            trainable=trainable,
            **training,
        )
