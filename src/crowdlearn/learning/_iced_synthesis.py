"""ICED's synthetic-data module (sec. 2.4): minority samples made in the embedding space.

Part of :mod:`crowdlearn.learning.iced` (Wang et al. 2021; the module doc there gives
the method and the choices the paper leaves open). This module holds:

* the networks around the embedding: ``G`` (the classifier up to its output layer,
  :func:`output_layer`, :func:`embed`) and the decoder ``Q`` (:func:`build_decoder`);
* the SMOTE steps: same-class neighbours (:func:`same_class_neighbours`), the
  certainty-weighted step of eq. 2.5 (:func:`interpolation_weights`) and the
  interpolation of eq. 2.3 (:func:`smote_interpolate`);
* the synthetic samples' crowd labels (:func:`synthetic_crowd_labels`) and the crowd
  they make with the real one (:func:`_augmented_crowd`);
* :class:`_ICEDSynthesis`, the part of :class:`~crowdlearn.learning.iced.ICED` that
  makes a round's synthetic samples and trains ``Q`` (or pre-trains ``G`` and ``Q`` as
  an autoencoder).

The warm-up, the truth inference and the schedule of rounds are in
:mod:`crowdlearn.learning.iced`.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.neighbors import NearestNeighbors
from torch import nn

from crowdlearn._progress import progress_bar
from crowdlearn.data import CrowdData
from crowdlearn.learning._batches import annotation_rows
from crowdlearn.learning._trainer import EpochContext

Interpolation = Literal["towards-certain", "as-printed"]
INTERPOLATIONS = ("towards-certain", "as-printed")
SyntheticLabels = Literal["knn", "duplicate", "random"]
SYNTHETIC_LABELS = ("knn", "duplicate", "random")


# ---------------------------------------------------------------------- networks


def output_layer(classifier: nn.Module) -> nn.Linear:
    """The classifier's last ``nn.Linear`` module (registration order): its input is the
    embedding ``G(x)`` and its output the logits."""
    linears = [module for module in classifier.modules() if isinstance(module, nn.Linear)]
    if not linears:
        raise ValueError(
            "ICED needs a classifier whose last nn.Linear layer gives the logits (its "
            "input is the embedding of the feature extractor G); the backbone has none"
        )
    return linears[-1]


def embed(
    classifier: nn.Module, inputs: np.ndarray, batch_size: int, device: torch.device
) -> np.ndarray:
    """Embeddings ``G(x)`` (the input of the output layer), in evaluation mode."""
    head = output_layer(classifier)
    captured: list[torch.Tensor] = []
    handle = head.register_forward_hook(lambda _m, args, _o: captured.append(args[0].detach()))
    was_training = classifier.training
    classifier.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(inputs), batch_size):
                classifier(torch.as_tensor(inputs[start : start + batch_size], device=device))
    finally:
        handle.remove()
        classifier.train(was_training)
    if not captured:
        return np.zeros((0, head.in_features))
    return torch.cat(captured).flatten(1).double().cpu().numpy()


def build_decoder(
    embedding_dim: int, item_shape: tuple[int, ...], hidden: tuple[int, ...]
) -> nn.Sequential:
    """The decoder ``Q``: an MLP from embeddings back to inputs of ``item_shape``."""
    layers: list[nn.Module] = []
    width = embedding_dim
    for units in hidden:
        layers += [nn.Linear(width, units), nn.ReLU()]
        width = units
    layers += [nn.Linear(width, math.prod(item_shape)), nn.Unflatten(1, tuple(item_shape))]
    return nn.Sequential(*layers)


# ---------------------------------------------------------------------- SMOTE and crowd labels


def interpolation_weights(
    certainty: np.ndarray,
    neighbour_certainty: np.ndarray,
    eta: float,
    rng: np.random.Generator,
    interpolation: Interpolation = "towards-certain",
) -> np.ndarray:
    """``delta`` of eq. (2.5) for each pair (candidate, chosen neighbour), in [0, 1].

    ``"towards-certain"``: ``S(x^r) / (S(x) + S(x^r)) + eta`` (the synthetic point is
    closer to the more certain task, as the paper's text says); ``"as-printed"``:
    ``S(x) / (S(x) + S(x^r)) + eta``. ``eta ~ U(-eta, eta)``; the result is clipped to
    [0, 1].
    """
    certainty = np.asarray(certainty, dtype=np.float64)
    neighbour_certainty = np.asarray(neighbour_certainty, dtype=np.float64)
    total = certainty + neighbour_certainty
    own = neighbour_certainty if interpolation == "towards-certain" else certainty
    base = np.divide(own, total, out=np.full_like(total, 0.5), where=total > 0)
    noise = rng.uniform(-eta, eta, size=base.shape) if eta > 0 else 0.0
    return np.clip(base + noise, 0.0, 1.0)


def smote_interpolate(z: np.ndarray, z_neighbour: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Synthetic embeddings ``z' = z + delta (z^r - z)`` (eq. 2.3), one per row.

    Examples
    --------
    >>> smote_interpolate(np.array([[0.0, 0.0]]), np.array([[2.0, 4.0]]), np.array([0.25]))
    array([[0.5, 1. ]])
    """
    z = np.asarray(z, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)[:, None]
    return z + delta * (np.asarray(z_neighbour, dtype=np.float64) - z)


def same_class_neighbours(z: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``min(k, m - 1)`` nearest other rows of each row of ``z`` (m, d)
    (Euclidean); shape (m, min(k, m - 1))."""
    m = len(z)
    n_neighbours = min(k, m - 1)
    if n_neighbours < 1:
        return np.zeros((m, 0), dtype=np.int64)
    index = NearestNeighbors(n_neighbors=n_neighbours + 1).fit(z)
    found = index.kneighbors(z, return_distance=False)
    keep = found != np.arange(m)[:, None]
    # rows whose own index was not returned (duplicate points): drop the farthest instead
    missing_self = keep.all(axis=1)
    keep[missing_self, -1] = False
    return found[keep].reshape(m, n_neighbours)


def synthetic_crowd_labels(
    data: CrowdData, neighbours: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Crowd labels of synthetic samples, simulated from their real neighbours' labels.

    Worker ``u`` labels synthetic sample ``s`` with probability equal to the share of
    the ``k`` neighbours of ``s`` it labelled (capped at 1), and answers one of its
    labels on those neighbours drawn uniformly. A sample that would get no label gets
    one of its neighbours' annotations, picked at random.

    Parameters
    ----------
    data : CrowdData
        The real crowd (with workers).
    neighbours : ndarray of int of shape (n_synthetic, k)
        Task codes of the real nearest neighbours of each synthetic sample; each must
        have at least one annotation.
    rng : numpy Generator

    Returns
    -------
    sample, worker, label : ndarrays of int
        One entry per synthetic annotation (at most one per sample and worker).
    """
    neighbours = np.asarray(neighbours, dtype=np.int64)
    n_samples, k = neighbours.shape
    rows, position = annotation_rows(data, neighbours.ravel())
    sample = position // k
    worker = data.worker[rows].astype(np.int64)
    label = data.label[rows].astype(np.int64)
    key = sample * data.n_workers + worker
    # sort by (sample, worker) with random order inside a group: its first entry is a
    # label drawn uniformly from the worker's labels on the neighbours
    order = np.lexsort((rng.random(len(key)), key))
    key, label = key[order], label[order]
    firsts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    group_size = np.diff(np.r_[firsts, len(key)])
    group_key, group_label = key[firsts], label[firsts]
    group_sample = group_key // data.n_workers
    kept = rng.random(len(firsts)) < np.minimum(group_size / k, 1.0)
    without = np.bincount(group_sample[kept], minlength=n_samples) == 0
    if without.any():
        # a sample left without labels keeps the group with its largest random draw
        by_sample = np.lexsort((rng.random(len(firsts)), group_sample))
        sorted_sample = group_sample[by_sample]
        lasts = by_sample[np.r_[sorted_sample[1:] != sorted_sample[:-1], True]]
        kept[lasts[without[group_sample[lasts]]]] = True
    return group_sample[kept], group_key[kept] % data.n_workers, group_label[kept]


def _no_synthetic(item_shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    empty = np.zeros(0, dtype=np.int64)
    return {
        "inputs": np.zeros((0, *item_shape), dtype=np.float32),
        "classes": empty,
        "sample": empty,
        "worker": empty,
        "label": empty,
        "labels": empty,
    }


def _augmented_crowd(data: CrowdData, synthetic: dict[str, np.ndarray]) -> CrowdData:
    """The real crowd followed by the synthetic samples (task codes from ``n_tasks``)."""
    n_synthetic = len(synthetic["classes"])
    return CrowdData(
        np.r_[data.task, data.n_tasks + synthetic["sample"]],
        np.r_[data.worker, synthetic["worker"]],
        np.r_[data.label, synthetic["label"]],
        n_tasks=data.n_tasks + n_synthetic,
        n_workers=data.n_workers,
        n_classes=data.n_classes,
        duplicates="keep",
    )


# ---------------------------------------------------------------------- a round's synthesis


class _ICEDSynthesis:
    """The synthetic samples of a round, the decoder's training and the autoencoder
    pre-training.

    A base of :class:`~crowdlearn.learning.iced.ICED`, which sets the parameters and
    the fitted attributes read here (see its docstring) and calls these steps from its
    trainer hooks.
    """

    k: int
    oversample_to: float
    eta: float
    interpolation: Interpolation
    decoder_epochs: int
    decoder_refit_epochs: int
    decoder_lr: float
    decoder_pretrain: bool
    synthetic_labels: SyntheticLabels
    batch_size: int
    progress: bool | str
    labels_: np.ndarray
    certainty_: np.ndarray
    _rng: np.random.Generator

    def _synthesize(self, context: EpochContext, round_index: int) -> dict[str, np.ndarray]:
        """Synthetic minority samples (sec. 2.4): SMOTE in G's embedding space with
        certainty-weighted steps, crowd labels from the real neighbours, inputs from Q."""
        data, rng = context.data, self._rng
        real = self._real_inputs(context)
        batch = 4 * self.batch_size
        z = embed(context.module["classifier"], real, batch, context.device)
        annotated = np.flatnonzero(data.feedback_effort > 0)
        counts = np.bincount(self.labels_[annotated], minlength=data.n_classes)
        target = math.ceil(self.oversample_to * counts.max())
        origins, partners, classes = [], [], []
        for c in np.flatnonzero((counts > 0) & (counts < target)):  # loop over classes
            candidates = annotated[self.labels_[annotated] == c]
            n_new = target - counts[c]
            neighbours = same_class_neighbours(z[candidates], self.k)
            picks = np.resize(rng.permutation(len(candidates)), n_new)
            if neighbours.shape[1]:
                chosen = neighbours[picks, rng.integers(neighbours.shape[1], size=n_new)]
            else:  # a lone candidate: its synthetic samples are copies
                chosen = picks
            origins.append(candidates[picks])
            partners.append(candidates[chosen])
            classes.append(np.full(n_new, c, dtype=np.int64))
        if not origins:
            return _no_synthetic(real.shape[1:])
        origin, partner = np.concatenate(origins), np.concatenate(partners)
        delta = interpolation_weights(
            self.certainty_[origin], self.certainty_[partner], self.eta, rng, self.interpolation
        )
        z_new = smote_interpolate(z[origin], z[partner], delta)
        n_neighbours = min(self.k, len(annotated))
        index = NearestNeighbors(n_neighbors=n_neighbours).fit(z[annotated])
        nearest = annotated[index.kneighbors(z_new, return_distance=False)]
        sample, worker, label = synthetic_crowd_labels(data, nearest, rng)
        if self.synthetic_labels == "duplicate":  # the origin's own crowd labels
            rows, sample = annotation_rows(data, origin)
            worker, label = data.worker[rows].astype(np.int64), data.label[rows].astype(np.int64)
        elif self.synthetic_labels == "random":  # same workers, uninformative labels
            label = rng.integers(data.n_classes, size=len(label))
        decoder = context.module["decoder"]
        if not self.decoder_pretrain:  # a pre-trained decoder stays as it is
            epochs = self.decoder_epochs if round_index == 1 else self.decoder_refit_epochs
            self._train_decoder(decoder, z, real, epochs, context.device)
        return {
            "inputs": self._decode(decoder, z_new, context.device),
            "classes": np.concatenate(classes),
            "sample": sample,
            "worker": worker,
            "label": label,
            "labels": np.zeros(len(origin), dtype=np.int64),
        }

    def _pretrain_autoencoder(self, context: EpochContext) -> None:
        """Train ``G`` and ``Q`` together to reconstruct the training inputs (mean
        squared error, ``decoder_epochs`` epochs, Adam with ``decoder_lr``)."""
        classifier, decoder = context.module["classifier"], context.module["decoder"]
        real = torch.as_tensor(self._real_inputs(context), device=context.device)
        head = output_layer(classifier)
        captured: list[torch.Tensor] = []
        handle = head.register_forward_hook(lambda _m, args, _o: captured.append(args[0]))
        # G's parameters: every classifier parameter but the output layer's
        in_head = {id(parameter) for parameter in head.parameters()}
        parameters = [p for p in classifier.parameters() if id(p) not in in_head]
        optimizer = torch.optim.Adam([*parameters, *decoder.parameters()], lr=self.decoder_lr)
        classifier.train()
        decoder.train()
        try:
            for _ in range(self.decoder_epochs):
                order = torch.as_tensor(self._rng.permutation(len(real)), device=context.device)
                for start in range(0, len(real), self.batch_size):
                    rows = order[start : start + self.batch_size]
                    captured.clear()
                    classifier(real[rows])
                    loss = F.mse_loss(decoder(captured[0].flatten(1)), real[rows])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
        finally:
            handle.remove()
        optimizer.zero_grad(set_to_none=True)  # leave no gradient for the trainer's step
        decoder.eval()
        self._pretrained = True

    def _train_decoder(
        self,
        decoder: nn.Module,
        z: np.ndarray,
        inputs: np.ndarray,
        epochs: int,
        device: torch.device,
    ) -> None:
        """Fit ``Q`` to reconstruct the inputs from their embeddings (mean squared error)."""
        if epochs < 1:
            return
        optimizer = torch.optim.Adam(decoder.parameters(), lr=self.decoder_lr)
        codes = torch.as_tensor(z, dtype=torch.float32, device=device)
        targets = torch.as_tensor(inputs, dtype=torch.float32, device=device)
        decoder.train()
        # nested under the trainer's epoch bar ("auto" follows the fit's decision)
        bar = progress_bar(
            range(epochs), progress=self.progress, desc="ICED decoder", unit="epoch"
        )
        for _ in bar:
            order = torch.as_tensor(self._rng.permutation(len(codes)), device=device)
            for start in range(0, len(codes), self.batch_size):
                rows = order[start : start + self.batch_size]
                loss = F.mse_loss(decoder(codes[rows]), targets[rows])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        bar.close()
        optimizer.zero_grad(set_to_none=True)  # leave no gradient for the trainer's step
        decoder.eval()

    def _decode(self, decoder: nn.Module, z: np.ndarray, device: torch.device) -> np.ndarray:
        with torch.no_grad():
            codes = torch.as_tensor(z, dtype=torch.float32, device=device)
            return decoder(codes).cpu().numpy().astype(np.float32)

    def _real_inputs(self, context: EpochContext) -> np.ndarray:
        """The training inputs as one float32 array (cached for the fit)."""
        cached = getattr(self, "_inputs_cache", None)
        if cached is None or cached[0] is not context.inputs:
            array = context.inputs.take(np.arange(context.data.n_tasks))
            cached = (context.inputs, np.asarray(array, dtype=np.float32))
            self._inputs_cache = cached
        return cached[1]
