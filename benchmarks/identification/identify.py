"""Benchmark ``identify``: do the worker scores find the reliable workers, and does WAUM
pruning help a classifier?

1. Simulated crowds with known worker groups (peerannot's hammer-spammer and
   discrete-difficulty, and a crowd of behaviour groups on Gaussian features): Spearman
   correlation between each worker score and the true worker accuracy
   ``sum_k p(k) pi_kk`` (true confusion, class shares of the truth), and the ROC AUC of
   flagging the spammers (group ``spammer``, or ``bad`` for discrete-difficulty:
   random answers on hard tasks) by a low score.
2. LabelMe, Music and Bluebirds (truth known): Spearman correlation of each worker score
   with the worker's accuracy against the truth (workers with at least 3 labels).
3. WAUM pruning (Lefort et al. 2022): on LabelMe and Music, the tasks of the lowest
   ``alpha`` = 10% WAUM are removed, then the labels are aggregated (MV or DS) and an
   MLP is trained on them; test accuracy with and without pruning, same seeds.

Scores: ``trace`` and ``spammer`` of Dawid-Skene confusions (``ds-``) and of a Crowd
Layer's (``cl-``, only where there are features and not in ``--quick``),
GLAD's ability, and the agreement with the majority vote.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from benchmarks._learning import PAPER_SETTINGS
from benchmarks._registry import BenchResult, register
from benchmarks._strategies import mean_std
from crowdlearn import datasets
from crowdlearn._progress import progress_bar
from crowdlearn.data import CrowdData
from crowdlearn.datasets import DatasetError
from crowdlearn.identify import (
    agreement_with_labels,
    confusion_trace,
    glad_ability,
    gold_accuracy,
    spammer_score,
    waum,
    worst_codes,
)

NAME = "identify"
REAL_DATASETS = ("labelme", "music", "bluebirds")
QUICK_REAL_DATASETS = ("bluebirds",)
WAUM_DATASETS = ("labelme", "music")
QUICK_WAUM_DATASETS = ("labelme",)
PRUNE_ALPHA = 0.1
#: Workers with fewer labels of known truth are left out of the real-data correlations.
MIN_LABELS = 3
SCORE_NAMES = ("ds-trace", "ds-spammer", "glad-ability", "mv-agreement", "cl-trace", "cl-spammer")


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread (the benchmark machine is shared), restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def worker_scores(data: CrowdData, learned: bool, seed: int) -> pd.DataFrame:
    """Every worker score of the benchmark, one column each, rows = worker codes."""
    from crowdlearn.aggregation import DawidSkene, MajorityVote

    ds = DawidSkene().fit(data)
    majority = MajorityVote(tie_break="random", random_state=seed).fit(data).predict()
    scores = {
        "ds-trace": confusion_trace(data, ds),
        "ds-spammer": spammer_score(data, ds),
        "glad-ability": glad_ability(data),
        "mv-agreement": agreement_with_labels(data, majority),
    }
    if learned and data.features is not None:
        from crowdlearn.learning import CrowdLayer

        layer = CrowdLayer(
            "MW", max_epochs=30, random_state=seed, device="cpu", **PAPER_SETTINGS
        ).fit(data, valid=None)
        scores["cl-trace"] = confusion_trace(data, layer)
        scores["cl-spammer"] = spammer_score(data, layer)
    return pd.DataFrame(scores)


def _spearman(score: np.ndarray, target: np.ndarray) -> float:
    keep = np.isfinite(score) & np.isfinite(target)
    if keep.sum() < 3 or np.ptp(score[keep]) == 0 or np.ptp(target[keep]) == 0:
        return float("nan")
    return float(spearmanr(score[keep], target[keep]).statistic)


def _auc(score: np.ndarray, flagged: np.ndarray) -> float:
    keep = np.isfinite(score)
    if flagged[keep].all() or not flagged[keep].any():
        return float("nan")
    return float(roc_auc_score(flagged[keep], -score[keep]))


def simulated_crowds(quick: bool, seed: int) -> dict[str, tuple[CrowdData, object, tuple]]:
    """Name -> (data, SimulationInfo, names of the flagged groups)."""
    from crowdlearn.simulate import crowd_on_features, discrete_difficulty, hammer_spammer

    scale = 0.4 if quick else 1.0
    n_tasks = int(1000 * scale)
    crowds = {
        "hammer-spammer": (
            hammer_spammer(
                n_worker=50,
                n_task=n_tasks,
                n_classes=5,
                ratio=0.3,
                feedback=5,
                seed=seed,
                return_info=True,
            ),
            ("spammer",),
        ),
        "discrete-difficulty": (
            discrete_difficulty(
                n_worker=50,
                n_task=n_tasks,
                n_classes=5,
                ratio=0.5,
                feedback=5,
                seed=seed,
                return_info=True,
            ),
            ("bad",),
        ),
    }
    rng = np.random.default_rng(seed)
    y = rng.integers(5, size=n_tasks)
    X = rng.normal(size=(n_tasks, 10)) + 2.0 * np.eye(5, 10)[y]
    crowds["groups-on-features"] = (
        crowd_on_features(X, y, n_workers=50, labels_per_task=5, seed=seed, return_info=True),
        ("spammer",),
    )
    return {name: (data, info, flagged) for name, ((data, info), flagged) in crowds.items()}


def true_accuracy(data: CrowdData, confusions: np.ndarray) -> np.ndarray:
    """``sum_k p(k) pi_kk`` per worker, ``p`` the class shares of the truth."""
    prior = np.bincount(data.truth[data.truth >= 0], minlength=data.n_classes)
    prior = prior / prior.sum()
    return np.diagonal(confusions, axis1=1, axis2=2) @ prior


def simulated_rows(quick: bool, seeds: int) -> list[dict]:
    rows = []
    for seed in progress_bar(range(seeds), progress="auto", desc=f"{NAME} simulated", unit="seed"):
        for crowd, (data, info, flagged_groups) in simulated_crowds(quick, seed).items():
            scores = worker_scores(data, learned=not quick, seed=seed)
            accuracy = true_accuracy(data, info.confusions)
            flagged = np.isin(info.worker_group, flagged_groups)
            for score in scores.columns:
                values = scores[score].to_numpy(dtype=float)
                rows.append(
                    {
                        "part": "simulated",
                        "crowd": crowd,
                        "seed": seed,
                        "score": score,
                        "spearman": _spearman(values, accuracy),
                        "spammer_auc": _auc(values, flagged),
                        "n_workers": data.n_workers,
                        "n_flagged": int(flagged.sum()),
                    }
                )
    return rows


def _load(name: str, notes: list[str]) -> datasets.Dataset | None:
    """A registry dataset; Music's Marsyas features are standardised with the training
    features' mean and std, as in the music benchmark (raw, their scales differ by
    orders of magnitude and the networks train poorly)."""
    import dataclasses

    from benchmarks.learning.music import standardise

    try:
        dataset = datasets.load(name, root=datasets.data_root())
    except DatasetError as error:
        notes.append(f"{name} skipped: {str(error).split(';')[0]}")
        return None
    if name == "music" and dataset.test is not None:
        train_x, test_x = standardise(dataset.train.features, dataset.test[0])
        dataset = dataclasses.replace(
            dataset,
            train=dataset.train.with_features(train_x),
            test=(test_x, dataset.test[1]),
        )
    return dataset


def real_rows(names: tuple[str, ...], quick: bool, seeds: int, notes: list[str]) -> list[dict]:
    rows = []
    for name in progress_bar(names, progress="auto", desc=f"{NAME} real", unit="dataset"):
        dataset = _load(name, notes)
        if dataset is None:
            continue
        data = dataset.train
        accuracy = gold_accuracy(data)
        known = np.bincount(data.worker[data.truth[data.task] >= 0], minlength=data.n_workers)
        accuracy = np.where(known >= MIN_LABELS, accuracy, np.nan)
        learned_seeds = 1 if quick else seeds
        for seed in range(learned_seeds):
            scores = worker_scores(data, learned=not quick, seed=seed)
            for score in scores.columns:
                if seed > 0 and not score.startswith("cl-"):
                    continue  # the feature-blind scores do not depend on the seed
                rows.append(
                    {
                        "part": "real",
                        "crowd": name,
                        "seed": seed,
                        "score": score,
                        "spearman": _spearman(scores[score].to_numpy(float), accuracy),
                        "spammer_auc": float("nan"),
                        "n_workers": int(np.isfinite(accuracy).sum()),
                        "n_flagged": 0,
                    }
                )
    return rows


def _fit_accuracy(
    data: CrowdData, aggregator: str, valid: tuple | None, test: tuple, seed: int, epochs: int
) -> float:
    from crowdlearn.aggregation import make_aggregator
    from crowdlearn.learning import TwoStage
    from crowdlearn.metrics import accuracy

    model = TwoStage(
        make_aggregator(aggregator),
        max_epochs=epochs,
        random_state=seed,
        device="cpu",
        **PAPER_SETTINGS,
    ).fit(data, valid=valid)
    return accuracy(test[1], model.predict(test[0]))


def waum_rows(names: tuple[str, ...], quick: bool, seeds: int, notes: list[str]) -> list[dict]:
    rows = []
    waum_epochs, epochs = (2, 2) if quick else (20, 30)
    for name in progress_bar(names, progress="auto", desc=f"{NAME} waum", unit="dataset"):
        dataset = _load(name, notes)
        if dataset is None or dataset.test is None:
            continue
        data = dataset.train
        for seed in range(seeds):
            scores = waum(data, max_epochs=waum_epochs, random_state=seed, device="cpu")
            drop = worst_codes(scores, "low", PRUNE_ALPHA)
            pruned = data.select_tasks(np.setdiff1d(np.arange(data.n_tasks), drop))
            dropped_truth = data.truth[drop]
            mislabel = float(np.mean(dataset.train.truth[drop] != _mv(data)[drop]))
            for aggregator in ("mv", "ds"):
                full = _fit_accuracy(data, aggregator, dataset.valid, dataset.test, seed, epochs)
                kept = _fit_accuracy(pruned, aggregator, dataset.valid, dataset.test, seed, epochs)
                rows.append(
                    {
                        "part": "waum",
                        "crowd": name,
                        "seed": seed,
                        "aggregator": aggregator,
                        "accuracy_all": full,
                        "accuracy_pruned": kept,
                        "gain": kept - full,
                        "n_pruned": len(drop),
                        "pruned_mv_error": mislabel,
                        "pruned_known": int((dropped_truth >= 0).sum()),
                    }
                )
    return rows


def _mv(data: CrowdData) -> np.ndarray:
    from crowdlearn.aggregation import MajorityVote

    return MajorityVote(tie_break="random", random_state=0).fit(data).predict()


def _score_table(raw: pd.DataFrame, value: str) -> pd.DataFrame:
    table = raw.pivot_table(index="score", columns="crowd", values=value, aggfunc=list)
    order = [s for s in SCORE_NAMES if s in table.index]
    table = table.loc[order]
    formatted = table.map(lambda v: mean_std(v) if isinstance(v, list) and len(v) else "n/a")
    return formatted.reset_index()


@register(NAME, "worker scores vs true accuracy, spammer AUC, WAUM pruning gain")
def identify_bench(out: Path, quick: bool, seeds: int) -> BenchResult:
    notes: list[str] = []
    with one_thread():
        rows = simulated_rows(quick, seeds)
        real = QUICK_REAL_DATASETS if quick else REAL_DATASETS
        rows += real_rows(real, quick, seeds, notes)
        waum_names = QUICK_WAUM_DATASETS if quick else WAUM_DATASETS
        pruning = waum_rows(waum_names, quick, seeds, notes)
    raw = pd.DataFrame(rows)
    sim = raw[raw["part"] == "simulated"]
    table = _score_table(sim, "spearman")
    table.columns = ["score", *[f"rho {c}" for c in table.columns[1:]]]
    auc = _score_table(sim, "spammer_auc")
    auc.columns = ["score", *[f"AUC {c}" for c in auc.columns[1:]]]
    table = table.merge(auc, on="score")
    extra = {}
    real_raw = raw[raw["part"] == "real"]
    if not real_raw.empty:
        real_table = _score_table(real_raw, "spearman")
        extra["Spearman correlation with accuracy against the truth (real crowds)"] = real_table
    if pruning:
        waum_raw = pd.DataFrame(pruning)
        grouped = waum_raw.groupby(["crowd", "aggregator"], sort=False)
        extra[f"Test accuracy without / with WAUM pruning (alpha = {PRUNE_ALPHA})"] = grouped.agg(
            all_tasks=("accuracy_all", lambda v: mean_std(list(v))),
            waum_pruned=("accuracy_pruned", lambda v: mean_std(list(v))),
            gain=("gain", lambda v: mean_std(list(v))),
            pruned_mv_error=("pruned_mv_error", "mean"),
        ).reset_index()
        raw = pd.concat([raw, waum_raw], ignore_index=True)
    notes += [
        f"{seeds} seed(s); simulated: 50 workers, 5 classes, 5 labels per task, "
        f"{400 if quick else 1000} tasks; rho = Spearman correlation with the true worker "
        "accuracy sum_k p(k) pi_kk; AUC = ROC AUC of flagging the spammer group "
        "(`bad` for discrete-difficulty) by a low score.",
        "ds-/cl-: Dawid-Skene / Crowd Layer (MW, 30 epochs) confusions; trace and Raykar & "
        "Yu spammer score; glad-ability: GLAD alpha; mv-agreement: share of labels equal to "
        "the majority vote. cl- scores need features (not on hammer-spammer, "
        "discrete-difficulty, bluebirds) and are left out with --quick.",
        f"real crowds: workers with at least {MIN_LABELS} labels; cl- scores averaged over "
        "seeds, the others are deterministic.",
    ]
    if pruning:
        notes.append(
            f"WAUM: MLP trained {2 if quick else 20} epochs on the vote frequencies for the "
            "margins, trust from Dawid-Skene; then TwoStage(MV or DS) MLP, "
            f"{2 if quick else 30} epochs (model selection on LabelMe's validation split); "
            "pruned_mv_error: share of the pruned tasks whose majority "
            "vote is wrong."
        )
    return BenchResult(raw=raw, table=table, notes=notes, extra_tables=extra)
