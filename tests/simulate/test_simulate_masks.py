"""Segmentation crowd simulator: shapes, worker types behave as documented, seeds."""

from __future__ import annotations

import pytest

from crowdlearn.data import Masks
from crowdlearn.simulate import simulate_masks


def test_sizes_truth_and_reproducible() -> None:
    data = simulate_masks(n_tasks=5, n_workers=6, per_task=4, size=(20, 30), random_state=7)
    assert isinstance(data, Masks) and data.n_annotations == 20
    for t, workers, masks in data.iter_tasks():
        assert len(set(workers.tolist())) == 4
        h, w = masks.shape[1:]
        assert 20 <= h <= 30 and 20 <= w <= 30
        assert data.truth_mask(t).shape == (h, w)
    again = simulate_masks(n_tasks=5, n_workers=6, per_task=4, size=(20, 30), random_state=7)
    assert again == data


@pytest.mark.parametrize("kind, inside", [("dilate", True), ("erode", False)])
def test_dilating_workers_cover_the_truth_eroding_ones_stay_inside(
    kind: str, inside: bool
) -> None:
    data = simulate_masks(
        n_tasks=4, n_workers=3, per_task=3, size=40, mix={kind: 1.0}, offset=2, random_state=1
    )
    for t, _, masks in data.iter_tasks():
        truth = data.truth_mask(t)
        for mask in masks:
            if inside:
                assert not (truth & ~mask).any() and mask.sum() > truth.sum()
            else:
                assert not (mask & ~truth).any() and mask.sum() < truth.sum()


def test_folder_output_matches_info(tmp_path) -> None:
    data, info = simulate_masks(
        n_tasks=3, n_workers=4, per_task=2, folder=tmp_path, random_state=0, return_info=True
    )
    assert data.mask_format == "npy" and data.has_truth
    assert len(info["types"]) == data.n_workers
    assert (tmp_path / "_truth").is_dir()


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="per_task"):
        simulate_masks(n_workers=2, per_task=3)
    with pytest.raises(ValueError, match="unknown worker types"):
        simulate_masks(mix={"sleepy": 0.2})
