"""CrowdInG's networks: the generator and the discriminator with its LCA decoder and Q.

Part of :mod:`crowdlearn.learning.crowding` (Chu & Wang, KDD 2021; the module doc there
gives the method and the choices the paper leaves open). This module holds:

* :class:`Generator`: ``G(y | x, e_r, eps, z_hat)`` of eq. 1;
* :class:`Discriminator`: the bilinear multi-label ``D(y = c | x, e_r)`` of eq. 2 with
  the label-correlation-aggregation (LCA) decoder, and the auxiliary network
  ``Q(z_hat | x, e_r, y)`` of eq. 3 sharing its encoders;
* :func:`lca_matrix`: the normalised label co-occurrence matrix the LCA decoder
  aggregates the class matrices with.

The training (losses, selection, the rounds) is in
:mod:`crowdlearn.learning._crowding_train`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

# ---------------------------------------------------------------------- LCA matrix


def lca_matrix(task: Any, worker: Any, label: Any, n_classes: int) -> np.ndarray:
    """The GCN-normalised label co-occurrence matrix ``D^-1/2 (A + I) D^-1/2``.

    ``A[c, c']`` (``c != c'``) is the number of pairs of annotations by different
    annotators on the same task with labels ``c`` and ``c'``, divided by
    ``sqrt(n_c n_c')`` (``n_c``: the annotations of class ``c``); the diagonal of ``A``
    is zero. ``D`` is the diagonal degree matrix of ``A + I``.

    Parameters
    ----------
    task, worker, label : array of int (n_annotations,)
    n_classes : int

    Returns
    -------
    ndarray (n_classes, n_classes)
        Symmetric, non-negative, with spectral radius 1.

    Examples
    --------
    >>> m = lca_matrix([0, 0, 1], [0, 1, 0], [0, 1, 1], 3)
    >>> bool(np.allclose(m, m.T)), float(m[2, 2])
    (True, 1.0)
    """
    task = np.asarray(task, dtype=np.int64)
    worker = np.asarray(worker, dtype=np.int64)
    label = np.asarray(label, dtype=np.int64)
    counts = np.zeros((n_classes, n_classes))
    order = np.argsort(task, kind="stable")
    task, worker, label = task[order], worker[order], label[order]
    bounds = np.flatnonzero(np.diff(task)) + 1
    for labels, workers in zip(np.split(label, bounds), np.split(worker, bounds), strict=True):
        if len(labels) < 2:
            continue
        different = workers[:, None] != workers[None, :]
        np.add.at(counts, (labels[:, None], labels[None, :]), different.astype(float))
    np.fill_diagonal(counts, 0.0)
    per_class = np.bincount(label, minlength=n_classes).astype(float)
    scale = np.sqrt(np.outer(per_class, per_class))
    adjacency = np.divide(counts, scale, out=np.zeros_like(counts), where=scale > 0)
    adjacency = adjacency + np.eye(n_classes)
    degree = adjacency.sum(axis=1)
    inv_sqrt = 1.0 / np.sqrt(degree)
    return inv_sqrt[:, None] * adjacency * inv_sqrt[None, :]


# ---------------------------------------------------------------------- networks


class Generator(nn.Module):
    """``G(y | x, e_r, eps, z_hat)`` (eq. 1): a two-layer network to K logits.

    The first layer acts on the concatenation ``[eps, z_hat, x, one_hot(r)]``; it is
    stored in parts (``x_in`` for the instance features, ``worker_in`` for the
    annotator's one-hot column, ``rest_in`` for noise and classifier output, each
    initialised with the fan-in of the whole concatenation) so that ``W_x x`` is
    computed once per task and broadcast to its annotator pairs (``task=`` in
    :meth:`forward`), and the one-hot product is a column look-up.
    """

    def __init__(
        self,
        x_dim: int,
        n_workers: int,
        n_classes: int,
        noise_dim: int,
        hidden: int,
        instance_features: bool,
        annotator_features: bool,
    ) -> None:
        super().__init__()
        self.use_x = instance_features
        self.use_e = annotator_features
        self.n_workers = n_workers
        width = noise_dim + n_classes + (x_dim if instance_features else 0)
        width += n_workers if annotator_features else 0
        bound = 1.0 / math.sqrt(width)
        self.rest_in = nn.Linear(noise_dim + n_classes, hidden)
        self.x_in = nn.Linear(x_dim, hidden, bias=False) if instance_features else None
        self.worker_in = (
            nn.Parameter(torch.empty(n_workers, hidden)) if annotator_features else None
        )
        for weight in (self.rest_in.weight, self.rest_in.bias, self.worker_in):
            if weight is not None:
                nn.init.uniform_(weight, -bound, bound)
        if self.x_in is not None:
            nn.init.uniform_(self.x_in.weight, -bound, bound)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(
        self,
        x: torch.Tensor,
        worker: torch.Tensor,
        eps: torch.Tensor,
        zhat: torch.Tensor,
        task: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (n, K) for n (task, annotator) pairs.

        ``x`` holds one row per pair, or, with ``task`` (n,), one row per distinct
        task with ``task`` indexing its rows (the same result, computed once per task).
        """
        h = self.rest_in(torch.cat([eps, zhat], dim=1))
        if self.x_in is not None:
            hx = self.x_in(x)
            h = h + (hx if task is None else hx[task])
        if self.worker_in is not None:
            h = h + self.worker_in[worker]
        return self.out(h)


class Discriminator(nn.Module):
    """Bilinear multi-label discriminator with the LCA decoder (eq. 2) and the
    auxiliary network Q (eq. 3) sharing its encoders."""

    def __init__(
        self,
        x_dim: int,
        n_workers: int,
        n_classes: int,
        embed: int,
        q_hidden: int,
        lca: bool,
    ) -> None:
        super().__init__()
        self.n_workers = n_workers
        self.encode_worker = nn.Linear(n_workers, embed)
        self.encode_x = nn.Linear(x_dim, embed)
        flat = embed * embed
        self.M = nn.Parameter(torch.randn(n_classes, flat) / embed)
        self.W = nn.Parameter(torch.eye(flat))
        self.lca = lca
        self.register_buffer("adjacency", torch.eye(n_classes))
        self.embed = embed
        self.label_embedding = nn.Linear(flat, embed)
        self.q = nn.Sequential(
            nn.Linear(3 * embed, q_hidden), nn.ReLU(), nn.Linear(q_hidden, n_classes)
        )

    def class_matrices(self) -> torch.Tensor:
        """``M_hat`` (K, embed * embed): with LCA ``A_norm M W``, else ``M``."""
        if not self.lca:
            return self.M
        return self.adjacency @ self.M @ self.W

    def encode(
        self, x: torch.Tensor, worker: torch.Tensor, task: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``u_r = W_u e_r + b_u`` (a column look-up of the one-hot product) and
        ``v_n = W_v x_n + b_v``; with ``task``, ``x`` has one row per distinct task and
        ``task`` indexes it (see :meth:`Generator.forward`)."""
        u = self.encode_worker.weight.t()[worker] + self.encode_worker.bias
        v = self.encode_x(x)
        return u, (v if task is None else v[task])

    def scores(
        self, x: torch.Tensor, worker: torch.Tensor, task: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits of ``D(y = c | x, e_r)`` for every class c, (n, K)."""
        return self.scores_and_q(x, worker, task=task)[0]

    def q_logits(
        self,
        x: torch.Tensor,
        worker: torch.Tensor,
        label: torch.Tensor,
        task: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits of ``P_Q(z_hat | x, e_r, y)``, (n, K)."""
        u, v = self.encode(x, worker, task)
        return self._q(u, v, self.class_matrices(), label)

    def scores_and_q(
        self,
        x: torch.Tensor,
        worker: torch.Tensor,
        label: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
        task: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`scores` of every pair and, with ``label``, :meth:`q_logits` of the
        pairs ``rows`` selects (a boolean mask; all pairs when None), from one encoding
        and one ``M_hat``: the same values as the two calls, at half the encoder work."""
        u, v = self.encode(x, worker, task)
        matrices = self.class_matrices()
        scores = torch.einsum("nd,kde,ne->nk", u, matrices.view(-1, self.embed, self.embed), v)
        if label is None:
            return scores, None
        if rows is not None:
            u, v, label = u[rows], v[rows], label[rows]
        return scores, self._q(u, v, matrices, label)

    def _q(
        self, u: torch.Tensor, v: torch.Tensor, matrices: torch.Tensor, label: torch.Tensor
    ) -> torch.Tensor:
        m = self.label_embedding(matrices[label])
        return self.q(torch.cat([u, v, m], dim=1))
