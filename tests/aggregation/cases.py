"""Crowds that aggregation methods must handle without NaN or a crash (shared by tests)."""

from __future__ import annotations

from crowdlearn import CrowdData


def degenerate_cases() -> dict[str, CrowdData]:
    return {
        "one worker": CrowdData.from_arrays([0, 1, 2], [0, 0, 0], [0, 1, 1]),
        "one class in total": CrowdData.from_arrays([0, 1, 2], [0, 1, 0], ["a", "a", "a"]),
        "one class observed of three": CrowdData.from_arrays(
            [0, 1, 2, 2], [0, 1, 0, 1], ["a"] * 4, classes=["a", "b", "c"]
        ),
        "a worker with a single label": CrowdData.from_arrays(
            [0, 0, 1, 1, 2], [0, 1, 0, 1, 2], [0, 1, 1, 1, 0]
        ),
        "a task with a single label": CrowdData.from_arrays(
            [0, 0, 1, 1, 2], [0, 1, 0, 1, 0], [0, 0, 1, 1, 1]
        ),
        "classes never observed": CrowdData.from_arrays(
            [0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1], classes=[0, 1, 2, 3]
        ),
        "all workers agree": CrowdData.from_arrays(
            [0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 1, 0, 0, 0]
        ),
        "tasks without annotations": CrowdData.from_arrays(
            ["a", "a", "b"], [0, 1, 0], [0, 1, 1], task_ids=["a", "b", "c", "d"]
        ),
        "a declared worker without annotations": CrowdData.from_arrays(
            ["a", "a", "b"], [0, 1, 0], [0, 1, 1], worker_ids=[0, 1, 2]
        ),
    }
