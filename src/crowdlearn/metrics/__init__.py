"""Evaluation metrics shared by every engine.

Classification quality (accuracy, macro-F1, calibration, likelihood), the quality of
aggregated training labels (AccTrain), class imbalance (the imbalance ratio, largest
over smallest class count, and the Self-Crowd paper's R), Jensen-Shannon divergences
between confusion matrices (the CMM paper's I-JS and G-JS), and ICED's label
certainty score, the word error rate of texts (``word_error_rate``), and the
overlap of segmentation masks (``iou``, ``dice``), and strict span scores
(``span_scores``, ``span_f1``).

Labels are class *codes* (``0..K-1``) as used throughout crowdlearn; ``-1`` in a
truth array marks an unknown truth and such entries are left out. The names are
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.metrics._boxes import (
        average_precision,
        box_iou,
        detection_scores,
        mean_average_precision,
    )
    from crowdlearn.metrics._classification import (
        acc_train,
        accuracy,
        expected_calibration_error,
        macro_f1,
        negative_log_likelihood,
    )
    from crowdlearn.metrics._crowd import (
        confusion_js,
        empirical_confusions,
        global_confusion,
        global_js,
        imbalance_ratio,
        individual_js,
        js_divergence,
        label_certainty,
        self_crowd_r,
    )
    from crowdlearn.metrics._masks import dice, iou
    from crowdlearn.metrics._spans import span_f1, span_scores
    from crowdlearn.metrics._text import edit_distance, normalise_text, word_error_rate

_CLASSIFICATION = [
    "acc_train",
    "accuracy",
    "expected_calibration_error",
    "macro_f1",
    "negative_log_likelihood",
]
_CROWD = [
    "confusion_js",
    "empirical_confusions",
    "global_confusion",
    "global_js",
    "imbalance_ratio",
    "individual_js",
    "js_divergence",
    "label_certainty",
    "self_crowd_r",
]

_TEXT = ["edit_distance", "normalise_text", "word_error_rate"]
_BOXES = ["average_precision", "box_iou", "detection_scores", "mean_average_precision"]
_MASKS = ["dice", "iou"]
_SPANS = ["span_f1", "span_scores"]

__getattr__, __dir__ = attach(
    __name__,
    {
        **{name: "._classification" for name in _CLASSIFICATION},
        **{name: "._crowd" for name in _CROWD},
        **{name: "._text" for name in _TEXT},
        **{name: "._boxes" for name in _BOXES},
        **{name: "._masks" for name in _MASKS},
        **{name: "._spans" for name in _SPANS},
    },
)

__all__ = [
    "acc_train",
    "accuracy",
    "average_precision",
    "box_iou",
    "confusion_js",
    "detection_scores",
    "dice",
    "edit_distance",
    "empirical_confusions",
    "expected_calibration_error",
    "global_confusion",
    "global_js",
    "imbalance_ratio",
    "individual_js",
    "iou",
    "js_divergence",
    "label_certainty",
    "macro_f1",
    "mean_average_precision",
    "negative_log_likelihood",
    "normalise_text",
    "self_crowd_r",
    "span_f1",
    "span_scores",
    "word_error_rate",
]
