"""The note that the model relabelled tasks with a single label (``next``, ``aggregate``)."""

from __future__ import annotations

from typing import Any

from crowdlearn.cli._app import note


def note_relabelled(crowd: Any, probas: Any) -> None:
    """Say on how many single-label tasks the model's label is not the label given
    (:func:`crowdlearn.campaign.ranking.lone_label_disagreements`); nothing when none."""
    from crowdlearn.campaign.ranking import lone_label_disagreements

    relabelled = lone_label_disagreements(crowd, probas)
    if relabelled:
        note(
            f"crowdlearn: note: on {relabelled} task(s) with a single label the model's label "
            "is not the one given: it weighs a lone label by its worker's estimated "
            "reliability and the class prior, which rest on little while few tasks are shared "
            "between workers (benchmarks/pages/campaign.md, 'The first round')"
        )
