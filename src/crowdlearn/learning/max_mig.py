"""Max-MIG: a data classifier and a crowd aggregator that maximise their f-mutual information.

Cao, Xu, Kong & Wang, "Max-MIG: an information theoretic approach for joint learning
from crowds", ICLR 2019. Two "experts" of the same ground truth are trained together:

* the data classifier ``h(x)`` (the backbone, softmax output);
* the crowd aggregator ``g(y^[M]) = softmax(sum_m W_m e(y^m) + log p)``: for each
  annotator ``m`` a K x K map ``W_m`` applied to the one-hot answer ``e(y^m)`` (a
  missing answer is the zero vector, so it adds nothing), plus a learned log prior
  ``log p``, ``p = softmax(b)``. Written out, the aggregator's logit of class ``k`` is
  ``b_k' + sum_m W_m[k, y^m]`` (``b'`` = log p), the posterior of a Dawid-Skene model
  whose log-confusions are ``W_m``. ``W_m`` starts at ``log(C_m + 0.01)``, ``C_m``
  annotator ``m``'s empirical confusion against the majority vote (row ``k``: the
  distribution of its answers on the tasks whose majority vote is ``k``), and ``b``
  at the log of the majority vote's class frequencies.

They maximise the f-mutual-information gain (the paper's eq. for MIG^f) over a batch
of ``B`` tasks, with the KL divergence (``f(t) = t log t``, ``f'(t) = 1 + log t``,
``f*(f'(t)) = t``) and the pointwise "agreement" ``K(x, y) = sum_c h(x)_c g(y)_c /
p_c``:

    MIG = 1 + (1/B) sum_i log K(x_i, y_i) - 1/(B(B-1)) sum_{i != j} K(x_i, y_j).

Matched pairs (an instance with its own answers) are rewarded, mismatched pairs (an
instance with another task's answers) penalised; the loss is ``-MIG``. A batch of one
task has no mismatched pair: its second term is 0.

Readings chosen here: the prior ``p`` in ``K`` is the aggregator's learned prior
(shared); ``confusions_`` are the row softmaxes of ``W_m`` (row = true class), which
for the initial maps are ``(C_m + 0.01)`` renormalised; ``_crowd_log_likelihood`` reads
the same row-stochastic confusions as a Dawid-Skene noise model with ``h(x)`` as the
class prior. Prediction uses the data classifier only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn.data import CrowdData, TaskInputs
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._batches import TaskBatch

SMOOTHING = 0.01


class CrowdAggregator(nn.Module):
    """Per-annotator maps ``W_m`` on one-hot answers plus a learned log prior.

    Parameters
    ----------
    n_workers, n_classes : int
    """

    def __init__(self, n_workers: int, n_classes: int) -> None:
        super().__init__()
        self.maps = nn.Parameter(torch.zeros(n_workers, n_classes, n_classes))
        self.prior_logits = nn.Parameter(torch.zeros(n_classes))

    def log_prior(self) -> torch.Tensor:
        """(K,) ``log p``."""
        return F.log_softmax(self.prior_logits, dim=0)

    def forward(
        self, n_tasks: int, position: torch.Tensor, worker: torch.Tensor, label: torch.Tensor
    ) -> torch.Tensor:
        """(B, K) log ``g(y)`` of ``n_tasks`` tasks from their annotations (row of the
        task, worker, label): ``log_softmax(log p + sum_m W_m[:, y^m])``."""
        columns = self.maps[worker, :, label]  # (A, K): W_m e(y^m)
        scores = self.log_prior().expand(n_tasks, -1).index_add(0, position, columns)
        return F.log_softmax(scores, dim=1)

    def confusions(self) -> np.ndarray:
        """(n_workers, K, K) row softmaxes of the maps."""
        with torch.no_grad():
            return torch.softmax(self.maps, dim=2).double().cpu().numpy()


def mig_kl(log_h: torch.Tensor, log_g: torch.Tensor, log_prior: torch.Tensor) -> torch.Tensor:
    """f-mutual-information gain (KL) of a batch from log h (B, K), log g (B, K), log p (K,).

    Returns
    -------
    Tensor ()
        ``1 + mean_i log K_ii - mean_{i != j} K_ij``, ``K_ij = sum_c h_ic g_jc / p_c``.
    """
    # log K_ij = logsumexp_c(log h_ic + log g_jc - log p_c), computed stably
    log_k = torch.logsumexp(log_h[:, None, :] + (log_g - log_prior)[None, :, :], dim=2)
    n = len(log_k)
    matched = torch.diagonal(log_k).mean()
    if n < 2:
        return 1.0 + matched
    off = ~torch.eye(n, dtype=torch.bool, device=log_k.device)
    return 1.0 + matched - log_k[off].exp().mean()


def majority_vote_confusions(data: CrowdData) -> tuple[np.ndarray, np.ndarray]:
    """Each annotator's empirical confusion against the majority vote (n_workers, K, K),
    rows normalised (a row without tasks is uniform), and the vote's class frequencies."""
    k = data.n_classes
    counts = np.zeros((data.n_tasks, k))
    np.add.at(counts, (data.task, data.label), 1.0)
    # ties go to the smallest class code, which argmax does
    vote = counts.argmax(axis=1)
    confusion = np.zeros((data.n_workers, k, k))
    np.add.at(confusion, (data.worker, vote[data.task], data.label), 1.0)
    totals = confusion.sum(axis=2, keepdims=True)
    confusion = np.where(totals > 0, confusion / np.maximum(totals, 1.0), 1.0 / k)
    annotated = counts.sum(axis=1) > 0
    frequencies = np.bincount(vote[annotated], minlength=k).astype(float) + 1.0
    return confusion, frequencies / frequencies.sum()


class MaxMIG(BaseLearner):
    """Max-MIG (Cao, Xu, Kong & Wang, ICLR 2019), KL version.

    Parameters
    ----------
    **training
        The shared training parameters (see :class:`BaseLearner`). Max-MIG's loss
        compares the tasks of a batch with each other, so the batch size matters more
        than usual (the paper trains with batches of the usual size, 64 here).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        Row softmaxes of the aggregator's maps ``W_m`` (row = true class).
    prior_ : ndarray (K,)
        The aggregator's learned class prior ``p``.
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``module_["noise"]`` is the :class:`CrowdAggregator`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = MaxMIG(max_epochs=5).fit(crowd)
    >>> model.confusions_.shape, model.prior_.shape
    ((8, 2, 2), (2,))
    """

    def __init__(self, **training: Any) -> None:
        super().__init__(**training)

    def _noise_model(
        self, n_workers: int, n_classes: int, item_shape: tuple[int, ...]
    ) -> nn.Module:
        return CrowdAggregator(n_workers, n_classes)

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        confusion, frequencies = majority_vote_confusions(data)
        self._initial_maps = np.log(confusion + SMOOTHING)
        self._initial_prior = np.log(frequencies)

    def _epoch_start(self, context: Any) -> None:
        # the aggregator starts from the majority-vote estimates (first epoch only)
        if context.epoch == 0 and getattr(self, "_initial_maps", None) is not None:
            noise = context.module["noise"]
            with torch.no_grad():
                noise.maps.copy_(torch.as_tensor(self._initial_maps, dtype=noise.maps.dtype))
                noise.prior_logits.copy_(
                    torch.as_tensor(self._initial_prior, dtype=noise.prior_logits.dtype)
                )

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        log_g = noise(len(batch.tasks), batch.position, batch.worker, batch.label)
        return -mig_kl(F.log_softmax(logits, dim=1), log_g, noise.log_prior())

    def _crowd_log_likelihood(
        self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module
    ) -> torch.Tensor:
        """(B,) ``logsumexp_k(log h_k(x) + sum_a log pi_{r_a}[k, y_a])`` with ``pi_m`` the
        row softmaxes of the maps."""
        log_conf = F.log_softmax(noise.maps, dim=2)[batch.worker, :, batch.label]  # (A, K)
        scores = F.log_softmax(logits, dim=1).index_add(0, batch.position, log_conf)
        return torch.logsumexp(scores, dim=1)

    def _method_state(self) -> dict[str, Any]:
        return {
            "_initial_maps": getattr(self, "_initial_maps", None),
            "_initial_prior": getattr(self, "_initial_prior", None),
        }

    @property
    def confusions_(self) -> np.ndarray:
        self._check_fitted()
        return self.module_["noise"].confusions()

    @property
    def prior_(self) -> np.ndarray:
        self._check_fitted()
        with torch.no_grad():
            return self.module_["noise"].log_prior().exp().double().cpu().numpy()
