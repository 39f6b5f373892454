"""Mask worker and task scores: hand-worked pairs, leave-one-out, the CLI command."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.data import Masks
from crowdlearn.identify.masks import task_scores, worker_scores
from crowdlearn.metrics import iou
from crowdlearn.simulate import simulate_masks


def test_scores_match_pairwise_iou_by_hand() -> None:
    rng = np.random.default_rng(0)
    masks = [rng.random((5, 4)) < 0.5 for _ in range(4)]
    data = Masks.from_arrays([0, 0, 0, 1], ["a", "b", "c", "a"], masks)
    pairs = {(i, j): iou(masks[i], masks[j]) for i in range(3) for j in range(3) if i != j}
    tasks = task_scores(data)
    assert np.isclose(tasks["agreement"][0], np.mean(list(pairs.values())))
    assert np.isnan(tasks["agreement"][1]) and tasks["n_masks"].tolist() == [3, 1]
    workers = worker_scores(data)
    expected_a = (pairs[0, 1] + pairs[0, 2]) / 2
    assert np.isclose(workers["iou_with_others"][0], expected_a)
    assert workers["n_masks"].tolist() == [2, 1, 1]
    for name in ("sensitivity", "specificity"):
        assert ((workers[name] > 0) & (workers[name] < 1)).all()


def test_noisy_workers_agree_less() -> None:
    data, info = simulate_masks(
        n_tasks=20, n_workers=6, per_task=6, mix={"noise": 0.5}, flip=0.2,
        random_state=4, return_info=True,
    )  # fmt: skip
    scores = worker_scores(data)["iou_with_others"]
    noisy = info["types"] == "noise"
    assert noisy.any() and (~noisy).any()
    assert scores[noisy].max() < scores[~noisy].min()


def test_identify_command(tmp_path) -> None:
    root = tmp_path / "in"
    simulate_masks(n_tasks=3, n_workers=4, per_task=3, folder=root, random_state=1)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["identify", str(root), "--kind", "mask", "-o", str(out)])
    assert result.exit_code == 0, result.output
    workers = pd.read_csv(out / "workers.csv")
    assert {"worker", "sensitivity", "specificity", "iou_with_others"} <= set(workers.columns)
    assert len(pd.read_csv(out / "tasks.csv")) == 3
