"""CrowdInG's training: the counterfactual risk, the two-step split, the entropy-based
selection and the rounds of pre-training and CrowdInG epochs.

Part of :mod:`crowdlearn.learning.crowding` (Chu & Wang, KDD 2021; the module doc there
gives the method and the choices the paper leaves open). This module holds:

* the loss of eq. 5-6 (:func:`crm_loss`), the two-step split of sec. 3.3.3
  (:func:`entropy_split`, :func:`share_split`, on :func:`normalised_entropy`) and the
  entropy-based selection of sec. 3.3.1 (:func:`select_generated`);
* :class:`_CrowdInGRounds`, the part of :class:`~crowdlearn.learning.crowding.CrowdInG`
  that trains the networks once the classifier is pre-trained: the generator's and the
  discriminator's pre-training, and each CrowdInG epoch (the logging policy's sample,
  a pass of D and Q, the CRM passes of G and of the classifier);
* the fixed tensors of a fit (:class:`_State`), an epoch's logged sample
  (:class:`_Logged`) and the batching helpers.

The networks are in :mod:`crowdlearn.learning._crowding_nets`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from crowdlearn._progress import format_postfix, progress_bar
from crowdlearn.data import CrowdData
from crowdlearn.learning._crowding_nets import Discriminator

_EPS = 1e-6


# ---------------------------------------------------------------------- loss, split, selection


def crm_loss(
    delta: torch.Tensor, mu: float, current: torch.Tensor, logged: torch.Tensor
) -> torch.Tensor:
    """Counterfactual risk of eq. 5 / 6: ``mean((delta - mu) * current / logged)``.

    Parameters
    ----------
    delta : Tensor (n,)
        Loss of each logged annotation (no gradient).
    mu : float
        Lagrange multiplier.
    current : Tensor (n,)
        Probability of each logged annotation under the policy being trained.
    logged : Tensor (n,)
        Its probability under the logging policy ``G_0`` (no gradient).
    """
    return torch.mean((delta.detach() - mu) * current / logged.detach().clamp_min(_EPS))


def normalised_entropy(proba: np.ndarray) -> np.ndarray:
    """Row entropies divided by ``log K`` (in [0, 1])."""
    proba = np.clip(np.asarray(proba, dtype=np.float64), 1e-12, 1.0)
    k = proba.shape[1]
    return -(proba * np.log(proba)).sum(axis=1) / math.log(k) if k > 1 else np.zeros(len(proba))


def entropy_split(proba: np.ndarray, t: float) -> np.ndarray:
    """The two-step split: True for tasks whose normalised classifier entropy is below
    ``t`` (they update the generator), False for the others (they update the
    classifier)."""
    return normalised_entropy(proba) < t


def share_split(proba: np.ndarray, share: float) -> tuple[np.ndarray, float]:
    """The two-step split with the classifier's share fixed instead of ``t``.

    The ``round(share * n)`` tasks with the highest normalised classifier entropy update
    the classifier (False), the others the generator (True); ties are broken by task
    order, so the share is met exactly whatever the entropies.

    Parameters
    ----------
    proba : ndarray (n, K)
        The classifier's probabilities.
    share : float in [0, 1]
        Share of the tasks that update the classifier.

    Returns
    -------
    low : ndarray of bool (n,)
        True for the tasks that update the generator.
    t : float
        The threshold this split amounts to: the smallest normalised entropy among the
        classifier's tasks (1.0 when there are none).

    Examples
    --------
    >>> low, t = share_split(np.array([[0.9, 0.1], [0.5, 0.5], [0.6, 0.4]]), 1 / 3)
    >>> low.tolist(), round(t, 3)
    ([True, False, True], 1.0)
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"crm_share must be in [0, 1], got {share}")
    entropy = normalised_entropy(proba)
    n = len(entropy)
    n_high = round(share * n)
    # stable sort of -entropy: the highest entropies first, ties in task order
    order = np.argsort(-entropy, kind="stable")
    low = np.ones(n, dtype=bool)
    low[order[:n_high]] = False
    t = float(entropy[order[n_high - 1]]) if n_high > 0 else 1.0
    return low, t


def select_generated(
    pair_worker: np.ndarray,
    entropy: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
    rule: Literal["entropy", "random"] = "entropy",
) -> np.ndarray:
    """Indices of the generated annotations the discriminator sees.

    For each annotator ``r``, ``counts[r]`` candidates among those with
    ``pair_worker == r`` (all of them when fewer), without replacement, with probability
    proportional to ``1 / entropy`` (``rule="entropy"``) or uniformly (``"random"``).
    """
    pair_worker = np.asarray(pair_worker, dtype=np.int64)
    entropy = np.asarray(entropy, dtype=np.float64)
    if rule not in ("entropy", "random"):
        raise ValueError(f"selection must be 'entropy' or 'random', got {rule!r}")
    order = np.argsort(pair_worker, kind="stable")
    starts = np.searchsorted(pair_worker[order], np.arange(len(counts) + 1))
    chosen = []
    for r, wanted in enumerate(np.asarray(counts, dtype=np.int64)):
        pool = order[starts[r] : starts[r + 1]]
        if wanted <= 0 or len(pool) == 0:
            continue
        size = min(int(wanted), len(pool))
        weights = None
        if rule == "entropy":
            weights = 1.0 / np.maximum(entropy[pool], 1e-8)
            weights = weights / weights.sum()
        chosen.append(rng.choice(pool, size=size, replace=False, p=weights))
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------------- the rounds


class _CrowdInGRounds:
    """The generator's and the discriminator's pre-training and the CrowdInG epochs.

    A base of :class:`~crowdlearn.learning.crowding.CrowdInG`, which sets the
    parameters read here (see its docstring) and runs these steps from its ``_fit``.
    """

    lam: float
    t: float
    mu: Any
    updates_per_epoch: int
    gan_pretrain_epochs: int
    noise_dim: int
    sparsity: float
    info_loss: bool
    selection: Literal["entropy", "random"]
    crm_share: float | None
    shuffle_signal: bool
    batch_size: int
    lr: float
    max_epochs: int

    def _zhat(self, module: nn.ModuleDict, state: _State) -> torch.Tensor:
        classifier = module["classifier"]
        was = classifier.training
        classifier.eval()
        with torch.no_grad():
            out = torch.softmax(classifier(state.inputs_x).float(), dim=1)
        classifier.train(was)
        return out

    def _log(self, module: nn.ModuleDict, state: _State, rng: np.random.Generator) -> _Logged:
        """The logging policy's sample: one annotation for every pair, from ``G_0``."""
        n, r = state.data.n_tasks, state.data.n_workers
        zhat = self._zhat(module, state)
        device = state.device
        eps = torch.randn(n * r, self.noise_dim, device=device)
        pairs = torch.arange(n * r, device=device)
        task, worker = pairs // r, pairs % r
        generator = module["generator"]
        with torch.no_grad():
            logits = torch.cat(
                [
                    generator(
                        state.x,
                        worker[s : s + 65536],
                        eps[s : s + 65536],
                        zhat[task[s : s + 65536]],
                        task=task[s : s + 65536],
                    )
                    for s in range(0, n * r, 65536)
                ]
            )
            proba = torch.softmax(logits, dim=1)
            label = torch.multinomial(proba, 1).squeeze(1)
            logged = proba.gather(1, label[:, None]).squeeze(1)
            entropy = -(proba * torch.log(proba.clamp_min(1e-12))).sum(dim=1)
        return _Logged(zhat, eps, label, logged, entropy.cpu().numpy())

    def _d_pass(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        chosen: np.ndarray,
        opt_d: torch.optim.Optimizer,
        rng: np.random.Generator,
    ) -> tuple[float, float]:
        """One pass of D (authentic vs selected generated) and Q; returns the mean D
        loss and the mean ``log P_Q(z_hat | x, e, y)`` on the generated annotations."""
        data, r, device = state.data, state.data.n_workers, state.device
        disc: Discriminator = module["discriminator"]  # type: ignore[assignment]
        real_pairs = data.task.astype(np.int64) * r + data.worker
        pairs = np.concatenate([real_pairs, chosen])
        labels = np.concatenate([data.label.astype(np.int64), logged.label[chosen].cpu().numpy()])
        target = np.concatenate([np.ones(len(real_pairs)), np.zeros(len(chosen))])
        order = rng.permutation(len(pairs))
        step = 2 * self.batch_size
        d_total, info_total, info_count, batches = 0.0, 0.0, 0, 0
        for s in range(0, len(order), step):
            idx = order[s : s + step]
            p = torch.as_tensor(pairs[idx], device=device)
            task, worker = p // r, p % r
            y = torch.as_tensor(labels[idx], device=device)
            tgt = torch.as_tensor(target[idx], dtype=torch.float32, device=device)
            fake = tgt == 0
            any_fake = bool(fake.any())
            # one encoding serves D's scores and Q (on the generated pairs)
            scores, q = disc.scores_and_q(
                state.x[task], worker, y if any_fake else None, rows=fake
            )
            picked = scores.gather(1, y[:, None]).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(picked, tgt)
            loss = loss + self.sparsity * torch.sigmoid(scores).pow(2).sum(dim=1).mean()
            if any_fake:
                q_log = torch.log_softmax(q, dim=1)
                info = (logged.zhat[task[fake]] * q_log).sum(dim=1).mean()
                loss = loss - info  # Q maximises the lower bound of eq. 3
                info_total += float(info.detach()) * int(fake.sum())
                info_count += int(fake.sum())
            opt_d.zero_grad(set_to_none=True)
            loss.backward()
            opt_d.step()
            d_total += float(loss.detach())
            batches += 1
        return d_total / max(batches, 1), info_total / max(info_count, 1)

    def _deltas(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        pairs: torch.Tensor,
        xs: torch.Tensor,
        local: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``L_G = log(1 - D(y))`` and ``delta = L_G - lambda L_I`` of logged pairs
        (``xs``: the features of their distinct tasks, ``local`` indexes it)."""
        r = state.data.n_workers
        disc: Discriminator = module["discriminator"]  # type: ignore[assignment]
        task, worker = pairs // r, pairs % r
        y = logged.label[pairs]
        with torch.no_grad():
            scores, q = disc.scores_and_q(xs, worker, y if self.info_loss else None, task=local)
            d = torch.sigmoid(scores.gather(1, y[:, None]).squeeze(1))
            lg = torch.log((1 - d).clamp_min(_EPS))
            delta = lg
            if q is not None:
                q_log = torch.log_softmax(q, dim=1)
                delta = lg - self.lam * (logged.zhat[task] * q_log).sum(dim=1)
        return lg, delta

    def _mu(self, delta: torch.Tensor) -> float:
        return float(delta.mean()) if self.mu == "mean" else float(self.mu)

    def _g_pass(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        tasks: np.ndarray,
        opt_g: torch.optim.Optimizer,
        rng: np.random.Generator,
    ) -> tuple[float, float]:
        """Eq. 5 over all pairs of ``tasks`` (classifier fixed)."""
        r, device = state.data.n_workers, state.device
        generator = module["generator"]
        total, batches, mus = 0.0, 0, []
        for chunk in _chunks(rng.permutation(tasks), self.batch_size):
            pairs = _pairs_of(chunk, r, device)
            xs = state.x[torch.as_tensor(chunk, device=device)]
            local = torch.arange(len(chunk), device=device).repeat_interleave(r)
            _, delta = self._deltas(module, state, logged, pairs, xs, local)
            task, worker = pairs // r, pairs % r
            logits = generator(xs, worker, logged.eps[pairs], logged.zhat[task], task=local)
            current = torch.softmax(logits, dim=1).gather(1, logged.label[pairs, None]).squeeze(1)
            mu = self._mu(delta)
            loss = crm_loss(delta, mu, current, logged.logged[pairs])
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()
            total += float(loss.detach())
            batches += 1
            mus.append(mu)
        return total / max(batches, 1), float(np.mean(mus)) if mus else np.nan

    def _c_pass(
        self,
        module: nn.ModuleDict,
        state: _State,
        logged: _Logged,
        tasks: np.ndarray,
        opt_c: torch.optim.Optimizer,
        rng: np.random.Generator,
    ) -> float:
        """Eq. 6 over all pairs of ``tasks``: gradients reach C through ``z_hat``."""
        r, device = state.data.n_workers, state.device
        generator, classifier = module["generator"], module["classifier"]
        generator.requires_grad_(False)
        classifier.train()
        total, batches = 0.0, 0
        # batch norm cannot train on one task: merge a last batch of one, or skip
        norm = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in classifier.modules())
        chunks = _chunks(rng.permutation(tasks), self.batch_size, min_last=2 if norm else 1)
        try:
            for chunk in chunks:
                if norm and len(chunk) < 2:
                    continue
                pairs = _pairs_of(chunk, r, device)
                xs = state.x[torch.as_tensor(chunk, device=device)]
                local = torch.arange(len(chunk), device=device).repeat_interleave(r)
                lg, _ = self._deltas(module, state, logged, pairs, xs, local)
                if self.shuffle_signal:
                    lg = lg[torch.as_tensor(rng.permutation(len(lg)), device=device)]
                worker = pairs % r
                zhat = torch.softmax(classifier(state.inputs_x[chunk]).float(), dim=1)[local]
                logits = generator(xs, worker, logged.eps[pairs], zhat, task=local)
                current = (
                    torch.softmax(logits, dim=1).gather(1, logged.label[pairs, None]).squeeze(1)
                )
                loss = crm_loss(lg, self._mu(lg), current, logged.logged[pairs])
                opt_c.zero_grad(set_to_none=True)
                loss.backward()
                opt_c.step()
                total += float(loss.detach())
                batches += 1
        finally:
            generator.requires_grad_(True)
        return total / max(batches, 1)

    def _select(self, state: _State, logged: _Logged, rng: np.random.Generator) -> np.ndarray:
        free = np.flatnonzero(~state.observed)
        r = state.data.n_workers
        picked = select_generated(
            free % r, logged.entropy[free], state.counts, rng, self.selection
        )
        return free[picked]

    def _pretrain_gan(
        self,
        module: nn.ModuleDict,
        state: _State,
        opt_g: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        rng: np.random.Generator,
        show: bool = False,
        stage_bar: Any = None,
        stages: list[str] | None = None,
    ) -> None:
        data, device = state.data, state.device
        zhat = self._zhat(module, state)
        generator = module["generator"]
        task_all = data.task.astype(np.int64)
        # maximum likelihood on the observed annotations, with the classifier's recipe
        opt_pre = torch.optim.Adam(generator.parameters(), lr=self.lr, foreach=True)
        bar = progress_bar(
            range(self.max_epochs), progress=show, desc="G pre-training", unit="epoch"
        )
        for _ in bar:
            order = rng.permutation(data.n_annotations)
            # summed on the device: one synchronisation per epoch, for the bar only
            total = torch.zeros((), device=device)
            for s in range(0, len(order), self.batch_size):
                idx = order[s : s + self.batch_size]
                task = torch.as_tensor(task_all[idx], device=device)
                worker = torch.as_tensor(data.worker[idx], dtype=torch.long, device=device)
                y = torch.as_tensor(data.label[idx], dtype=torch.long, device=device)
                eps = torch.randn(len(idx), self.noise_dim, device=device)
                loss = F.cross_entropy(generator(state.x[task], worker, eps, zhat[task]), y)
                opt_pre.zero_grad(set_to_none=True)
                loss.backward()
                opt_pre.step()
                total += loss.detach()
            if show:
                batches = max(math.ceil(len(order) / self.batch_size), 1)
                bar.set_postfix(format_postfix({"loss": float(total) / batches}))
        bar.close()
        if stage_bar is not None and stages is not None:
            stage_bar.update()
            stage_bar.set_postfix(stage=stages[2])
        bar = progress_bar(
            range(self.gan_pretrain_epochs), progress=show, desc="D pre-training", unit="pass"
        )
        for _ in bar:
            logged = self._log(module, state, rng)
            d_loss, _ = self._d_pass(
                module, state, logged, self._select(state, logged, rng), opt_d, rng
            )
            bar.set_postfix(format_postfix({"d_loss": d_loss}))
        bar.close()
        if stage_bar is not None:
            stage_bar.update()

    def _epoch(
        self,
        module: nn.ModuleDict,
        state: _State,
        opt_g: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        opt_c: torch.optim.Optimizer,
        rng: np.random.Generator,
        bar: Any = None,
    ) -> dict[str, float]:
        logged = self._log(module, state, rng)  # G_0: the generator of the last epoch
        proba = logged.zhat.cpu().numpy()
        if self.crm_share is None:
            low, t_used = entropy_split(proba, self.t), float(self.t)
        else:
            low, t_used = share_split(proba, self.crm_share)
        low_tasks, high_tasks = np.flatnonzero(low), np.flatnonzero(~low)
        d_losses, infos, g_losses, c_losses, mus = [], [], [], [], []
        for _ in range(self.updates_per_epoch):
            chosen = self._select(state, logged, rng)
            d_loss, info = self._d_pass(module, state, logged, chosen, opt_d, rng)
            g_loss, mu = self._g_pass(module, state, logged, low_tasks, opt_g, rng)
            c_loss = self._c_pass(module, state, logged, high_tasks, opt_c, rng)
            d_losses.append(d_loss)
            infos.append(info)
            g_losses.append(g_loss)
            c_losses.append(c_loss)
            mus.append(mu)
            if bar is not None:
                bar.update()
        return {
            "d_loss": float(np.mean(d_losses)),
            "g_loss": float(np.mean(g_losses)),
            "c_loss": float(np.mean(c_losses)),
            "info_loss": float(np.mean(infos)),
            "n_low": len(low_tasks),
            "n_classifier": len(high_tasks),
            "share_low": len(low_tasks) / max(len(low), 1),
            "t_used": t_used,
            "mu": float(np.nanmean(mus)) if np.isfinite(mus).any() else np.nan,
        }


class _State:
    """Fixed tensors of one fit."""

    def __init__(
        self,
        data: CrowdData,
        x: torch.Tensor,
        inputs_x: torch.Tensor,
        observed: np.ndarray,
        counts: np.ndarray,
        device: torch.device,
    ) -> None:
        self.data = data
        self.x = x
        self.inputs_x = inputs_x
        self.observed = observed
        self.counts = counts
        self.device = device


class _Logged:
    """One epoch's logged sample from ``G_0``, over all (task, annotator) pairs."""

    def __init__(
        self,
        zhat: torch.Tensor,
        eps: torch.Tensor,
        label: torch.Tensor,
        logged: torch.Tensor,
        entropy: np.ndarray,
    ) -> None:
        self.zhat = zhat
        self.eps = eps
        self.label = label
        self.logged = logged
        self.entropy = entropy


def _chunks(values: np.ndarray, size: int, min_last: int = 1) -> list[np.ndarray]:
    """``values`` in consecutive chunks of ``size``; a last chunk shorter than
    ``min_last`` joins the previous one (when there is one)."""
    chunks = [values[s : s + size] for s in range(0, len(values), size)]
    if len(chunks) > 1 and len(chunks[-1]) < min_last:
        chunks[-2:] = [np.concatenate(chunks[-2:])]
    return chunks


def _pairs_of(tasks: np.ndarray, n_workers: int, device: torch.device) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(tasks, dtype=np.int64), device=device)
    return (t[:, None] * n_workers + torch.arange(n_workers, device=device)[None, :]).reshape(-1)
