"""crowd-kit's image segmentation aggregators on crowdlearn's mask engines."""

from __future__ import annotations

from typing import Any

import pandas as pd

# ------------------------------------------------------------------ segmentation


def _masks(data: pd.DataFrame) -> tuple[Any, pd.Index]:
    """crowd-kit's (task, worker, segmentation) frame as crowdlearn Masks, and the
    sorted task ids (crowd-kit's group-by order)."""
    from crowdlearn.data import Masks

    frame = data[["task", "worker", "segmentation"]]  # a KeyError names a missing column
    tasks = pd.Index(pd.unique(frame["task"])).sort_values()
    masks = Masks.from_arrays(
        frame["task"].to_numpy(),
        frame["worker"].to_numpy(),
        list(frame["segmentation"]),
        task_ids=tasks.to_numpy(),
    )
    return masks, tasks.rename("task")


class _Segmentation:
    segmentations_: pd.Series | None

    def _run(self, engine: Any, data: pd.DataFrame) -> None:
        if len(data[["task", "worker", "segmentation"]]) == 0:
            self.segmentations_ = pd.Series([], dtype=object, name="agg_segmentation")
            return
        masks, tasks = _masks(data)
        engine.fit(masks)
        values = [engine.masks_(t) for t in range(len(tasks))]
        self.segmentations_ = pd.Series(values, index=tasks, name="agg_segmentation")

    def fit(self, data: pd.DataFrame) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and return ``segmentations_`` (bool masks indexed by task)."""
        self.fit(data)
        return self.segmentations_


class SegmentationMajorityVote(_Segmentation):
    """crowd-kit's ``SegmentationMajorityVote``: per-pixel vote, optionally weighted by
    worker skills (:class:`crowdlearn.aggregation.masks.WeightedMaskVote`)."""

    def __init__(
        self, default_skill: float | None = None, on_missing_skill: str = "error"
    ) -> None:
        self.default_skill = default_skill
        self.on_missing_skill = on_missing_skill
        self.segmentations_ = None
        self.skills_: pd.Series | None = None

    def fit(self, data: pd.DataFrame, skills: pd.Series | None = None) -> SegmentationMajorityVote:
        """Vote; ``skills`` (a Series indexed by worker) weights the masks."""
        from crowdlearn.aggregation.masks.weighted_vote import WeightedMaskVote

        if (
            skills is not None
            and self.on_missing_skill != "value"
            and self.default_skill is not None
        ):
            raise ValueError('default_skill is used but on_missing_skill is not "value"')
        default = None
        if skills is not None:
            if self.on_missing_skill == "ignore":
                data = data[data["worker"].isin(skills.index)]
                if len(data) == 0:
                    raise ValueError("no segmentation of a worker with a known skill")
            elif self.on_missing_skill == "value":
                default = self.default_skill
            elif self.on_missing_skill == "error":
                unknown = ~data["worker"].isin(skills.index)
                if unknown.any():
                    raise ValueError(
                        f"Skill value is missing in {int(unknown.sum())} assignments. Specify "
                        "skills for every used worker or use different 'on_unknown_skill' value."
                    )
        self._run(WeightedMaskVote(weights=skills, default_weight=default), data)
        self.skills_ = skills
        return self

    def fit_predict(  # type: ignore[override]
        self, data: pd.DataFrame, skills: pd.Series | None = None
    ) -> pd.Series:
        """Fit and return ``segmentations_``."""
        return self.fit(data, skills).segmentations_


class SegmentationRASA(_Segmentation):
    """crowd-kit's ``SegmentationRASA`` on
    :class:`crowdlearn.aggregation.masks.SegmentationRASA` (``n_iter=0``: the vote)."""

    def __init__(self, n_iter: int = 10, tol: float = 1e-5) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.segmentations_ = None

    def fit(self, data: pd.DataFrame) -> SegmentationRASA:
        """Aggregate each task's masks."""
        from crowdlearn.aggregation.masks import SegmentationRASA as Native

        self._run(Native(max_iter=self.n_iter, tol=self.tol), data)
        return self


class SegmentationEM(_Segmentation):
    """crowd-kit's ``SegmentationEM`` on
    :class:`crowdlearn.aggregation.masks.SegmentationEM` (``n_iter=0``: the vote)."""

    def __init__(self, n_iter: int = 10, tol: float = 1e-5) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.segmentations_ = None

    def fit(self, data: pd.DataFrame) -> SegmentationEM:
        """Aggregate each task's masks."""
        from crowdlearn.aggregation.masks import SegmentationEM as Native

        self._run(Native(max_iter=self.n_iter, tol=self.tol), data)
        return self
