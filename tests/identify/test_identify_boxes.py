"""Worker and task scores of bounding boxes: alignment, ranges, and the simulated
careless workers found."""

from __future__ import annotations

import numpy as np

from crowdlearn.identify.boxes import task_scores, worker_scores
from crowdlearn.simulate.boxes import simulate_boxes


def test_scores_are_aligned_bounded_and_flag_the_sloppy_workers():
    data, info = simulate_boxes(n_tasks=120, sloppy=0.3, random_state=2, return_info=True)
    workers = worker_scores(data)
    for values in workers.values():
        assert values.shape == (data.n_workers,)
    for name in ("recall", "precision", "iou", "class_accuracy"):
        finite = workers[name][np.isfinite(workers[name])]
        assert ((finite >= 0) & (finite <= 1)).all()
    sloppy = info["sloppy"]
    assert workers["recall"][sloppy].mean() < workers["recall"][~sloppy].mean()
    assert workers["iou"][sloppy].mean() < workers["iou"][~sloppy].mean()
    assert workers["n_boxes"].sum() == data.n_boxes
    tasks = task_scores(data)
    for values in tasks.values():
        assert values.shape == (data.n_tasks,)
    assert tasks["n_boxes"].sum() == data.n_boxes
    assert (tasks["n_workers"] == 5).all()
    empty = tasks["n_boxes"] == 0
    assert (
        np.isnan(tasks["unmatched"][empty]).all()
        and not np.isnan(tasks["unmatched"][~empty]).any()
    )


# ---- issue 43: boxes in huge units


def test_scores_of_boxes_near_the_largest_float_are_those_of_ordinary_boxes():
    """Corners near 1e308 used to end in an IndexError (exit 70 on the command line)."""
    import numpy as np

    from crowdlearn.data import Boxes
    from crowdlearn.identify.boxes import task_scores, worker_scores
    from crowdlearn.simulate.boxes import simulate_boxes

    data = simulate_boxes(n_tasks=20, n_workers=5, random_state=1)
    huge = Boxes(
        data.task, data.worker, data.label, np.ldexp(data.coords, 1000),
        task_ids=data.task_ids, worker_ids=data.worker_ids, classes=data.classes,
    )  # fmt: skip
    for scores in (worker_scores, task_scores):
        ordinary, scaled = scores(data), scores(huge)
        for name, values in ordinary.items():
            np.testing.assert_allclose(scaled[name], values, rtol=1e-9, err_msg=name)
