"""Mini-batches over tasks, each with all its annotations.

A batch holds the inputs of ``B`` tasks and, in coordinate form, every annotation of
those tasks: its position in the batch, its worker and its label. Losses are computed
over these annotations only, which is what masking missing annotations out of a dense
task x worker matrix achieves, without building that matrix. The annotations of a
batch are gathered from the per-task CSR index of the CrowdData with a few vectorised
NumPy operations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from crowdlearn.data import CrowdData, TaskInputs


@dataclass
class TaskBatch:
    """One mini-batch.

    Attributes
    ----------
    tasks : ndarray (B,)
        Task codes.
    x : Tensor (B, ...)
        Inputs of the tasks.
    position : Tensor (A,)
        For each annotation of these tasks, the row of its task in the batch.
    worker : Tensor (A,) or None
        Worker codes (None for anonymous data).
    label : Tensor (A,)
        Class codes.
    """

    tasks: np.ndarray
    x: torch.Tensor
    position: torch.Tensor
    worker: torch.Tensor | None
    label: torch.Tensor

    def counts(self, n_classes: int) -> torch.Tensor:
        """(B, K) number of votes of each class per task of the batch."""
        counts = torch.zeros(len(self.tasks), n_classes, device=self.x.device)
        counts.index_put_(
            (self.position, self.label),
            torch.ones_like(self.position, dtype=counts.dtype),
            accumulate=True,
        )
        return counts


def annotation_rows(data: CrowdData, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the annotations of ``tasks`` (grouped by task, in the given task order)
    and, for each, the position of its task in ``tasks``."""
    index = data.by_task
    starts = index.indptr[tasks]
    lengths = index.indptr[tasks + 1] - starts
    total = int(lengths.sum())
    # Offsets start, start+1, ... for each task, built without a Python loop.
    firsts = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    rows = index.order[firsts + np.arange(total)]
    return rows, np.repeat(np.arange(len(tasks)), lengths)


class TaskBatcher:
    """Yields :class:`TaskBatch` objects over a set of tasks, in a seeded random order.

    Parameters
    ----------
    data : CrowdData
    inputs : TaskInputs
        Inputs aligned with the task codes of ``data``.
    tasks : ndarray
        The task codes to iterate over (e.g. the tasks with annotations).
    batch_size : int
    device : torch.device
    """

    def __init__(
        self,
        data: CrowdData,
        inputs: TaskInputs,
        tasks: np.ndarray,
        batch_size: int,
        device: torch.device,
    ) -> None:
        self.data = data
        self.inputs = inputs
        self.tasks = np.asarray(tasks, dtype=np.int64)
        self.batch_size = batch_size
        self.device = device

    def __len__(self) -> int:
        return -(-len(self.tasks) // self.batch_size)

    def epoch(self, rng: np.random.Generator) -> Iterator[TaskBatch]:
        """One pass over the tasks in a random order drawn from ``rng``."""
        order = self.tasks[rng.permutation(len(self.tasks))]
        for start in range(0, len(order), self.batch_size):
            yield self.batch(order[start : start + self.batch_size])

    def batch(self, tasks: np.ndarray) -> TaskBatch:
        """The batch of the given task codes."""
        rows, position = annotation_rows(self.data, tasks)
        device = self.device
        worker = None
        if self.data.worker is not None:
            worker = torch.as_tensor(self.data.worker[rows], dtype=torch.long, device=device)
        return TaskBatch(
            tasks=tasks,
            x=torch.as_tensor(self.inputs.take(tasks), device=device),
            position=torch.as_tensor(position, dtype=torch.long, device=device),
            worker=worker,
            label=torch.as_tensor(self.data.label[rows], dtype=torch.long, device=device),
        )
