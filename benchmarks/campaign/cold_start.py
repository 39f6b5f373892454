"""Benchmark ``campaign-cold-start``: a campaign's first round, where every task has one
label (issue 30).

campaign-power found cleanlab's mean curve up to several tasks ahead of the policy's
early on WSD, the lead gone within a few rounds (by-hand replays placed it in the first
round). This control asks why, on the seven crowds of campaign-replay and its orders.
Fixed before its first run:

- **the model at one, two and three labels a task**: Dawid-Skene's accuracy (the
  replay's reading) beside the vote's (the expected accuracy of the most voted class,
  ties broken at random), and, with one label a task, the share of tasks whose
  Dawid-Skene label differs from their lone label and the share of those lone labels
  that are right. With one label a task no worker shares a task with another, so what
  Dawid-Skene learns of a worker comes from its own labels and the smoothing;
- **the first round**, from one label a task (campaign-replay's first batch, 5 % of the
  tasks): for the policy (:func:`crowdlearn.campaign.rank_tasks` with its defaults) and
  cleanlab's ActiveLab (when its interpreter is there), the share of the tasks bought
  whose Dawid-Skene label differed from their lone label, and the correct tasks
  Dawid-Skene gains from that round (refitted on the revealed labels, as the replay
  does).

Every number is the mean over ``--seeds`` orders (order s: campaign-replay's order s).

Added after the first run, a control on simulated crowds where no two workers share a
task (one label a task, each worker labelling a run of tasks; three classes with prior
0.7, 0.2 and 0.1; every worker right 97 % of the time, a wrong answer uniform; seeds 0
to ``--seeds`` - 1): whether Dawid-Skene relabels lone labels when the crowd leaves it
nothing to learn about the workers, how often those lone labels were right, and its
estimate of the rarest class's prior.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from benchmarks.campaign.replay import (
    DATASETS,
    MIN_BATCH_SHARE,
    QUICK_DATASETS,
    CleanlabClient,
    accuracy_of,
    annotation_positions,
    batch_size,
    cleanlab_chooser,
    cleanlab_python,
    fit_ds,
    load_crowds,
    policy_chooser,
    probe_cleanlab,
    revealed_data,
)
from crowdlearn.data import CrowdData
from crowdlearn.metrics import acc_train

NAME = "campaign-cold-start"
LABELS_PER_TASK = (1, 2, 3)


def vote_accuracy(data: CrowdData) -> float:
    """Expected accuracy of the most voted class, ties broken uniformly at random, on
    the tasks with known truth (AccTrain of the vote counts)."""
    return acc_train(data, data.vote_counts.toarray(), ties="expected")


def lone_labels(data: CrowdData) -> np.ndarray:
    """Each task's label where it has exactly one (-1 elsewhere)."""
    counts = np.bincount(data.task, minlength=data.n_tasks)
    lone = np.full(data.n_tasks, -1)
    single = counts[data.task] == 1
    lone[data.task[single]] = data.label[single]
    return lone


def cold_start(data: CrowdData, seed: int, choosers: dict) -> dict[str, float]:
    """The readings of one order of one crowd (see the module docstring)."""
    positions = annotation_positions(data, seed)
    sizes = np.bincount(data.task, minlength=data.n_tasks)
    row: dict[str, float] = {}
    for k in LABELS_PER_TASK:
        sub = revealed_data(data, positions, np.minimum(sizes, k))
        row[f"ds_{k}"] = accuracy_of(fit_ds(sub, seed), sub)
        row[f"vote_{k}"] = vote_accuracy(sub)
    revealed = np.minimum(sizes, 1)
    sub = revealed_data(data, positions, revealed)
    model = fit_ds(sub, seed)
    ds_label = np.asarray(model.probas_).argmax(axis=1)
    lone = lone_labels(sub)
    flipped = (lone >= 0) & (ds_label != lone)
    known = flipped & (data.truth >= 0)
    row["flipped"] = float(flipped.mean())
    row["flipped_lone_right"] = (
        float((lone[known] == data.truth[known]).mean()) if known.any() else np.nan
    )
    batch = batch_size(data.n_tasks, int(revealed.sum()), MIN_BATCH_SHARE, 0.0)
    before = accuracy_of(model, sub) * (data.truth >= 0).sum()
    for arm, chooser in choosers.items():
        chosen = np.asarray(chooser(model, sub, revealed < sizes, batch, 0), dtype=np.int64)
        after_revealed = revealed.copy()
        after_revealed[chosen] += 1
        after = revealed_data(data, positions, after_revealed)
        gained = accuracy_of(fit_ds(after, seed), after) * (data.truth >= 0).sum() - before
        row[f"{arm}_on_flipped"] = float(flipped[chosen].mean())
        row[f"{arm}_gain"] = float(gained)
    return row


#: The simulated crowds of the control: tasks, classes' prior, workers' accuracy, and
#: the labels each worker gives (one label a task, no task shared).
SIMULATED_TASKS = 150
SIMULATED_PRIOR = (0.7, 0.2, 0.1)
SIMULATED_ACCURACY = 0.97
LABELS_PER_WORKER = (3, 5, 8)


def no_overlap_crowd(per_worker: int, seed: int) -> CrowdData:
    """One label a task, worker w labelling tasks ``w * per_worker`` onwards."""
    rng = np.random.default_rng(seed)
    k = len(SIMULATED_PRIOR)
    truth = rng.choice(k, size=SIMULATED_TASKS, p=SIMULATED_PRIOR)
    wrong = rng.random(SIMULATED_TASKS) >= SIMULATED_ACCURACY
    other = (truth + rng.integers(1, k, SIMULATED_TASKS)) % k
    label = np.where(wrong, other, truth)
    task = np.arange(SIMULATED_TASKS)
    return CrowdData(task, task // per_worker, label, n_classes=k, truth=truth)


def no_overlap_row(per_worker: int, seed: int) -> dict[str, float]:
    """Dawid-Skene on one simulated crowd of the control."""
    data = no_overlap_crowd(per_worker, seed)
    model = fit_ds(data, seed)
    relabelled = np.asarray(model.probas_).argmax(axis=1) != data.label
    right = data.label == data.truth
    return {
        "labels_per_worker": per_worker,
        "seed": seed,
        "relabelled": float(relabelled.mean()),
        "relabelled_lone_right": float(right[relabelled].mean()) if relabelled.any() else np.nan,
        "ds": accuracy_of(model, data),
        "lone": float(right.mean()),
        "rarest_prior": float(np.min(model.priors_)),
    }


@register(
    NAME, "a campaign's first round: Dawid-Skene at one label a task, and what each arm buys"
)
def bench_campaign_cold_start(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else DATASETS
    python = cleanlab_python()
    version, missing = probe_cleanlab(python)
    loaded, skipped, root = load_crowds(names)
    notes = [
        f"orders 0-{seeds - 1} (campaign-replay's); Dawid-Skene: `ds` with its defaults, "
        "fitted on the revealed labels as in the replay; accuracies on the tasks with "
        "known truth",
        f"cleanlab {version}" if version else f"cleanlab not run: {missing}",
        f"data root: {root} ($CROWDLEARN_DATA)",
        *skipped,
    ]
    client = CleanlabClient(python) if version else None
    rows = []
    try:
        for name, data in loaded.items():
            for seed in range(seeds):
                choosers = {"policy": policy_chooser(seed)}
                if client is not None:
                    choosers["cleanlab"] = cleanlab_chooser(client, seed)
                rows.append({"dataset": name, "order": seed, **cold_start(data, seed, choosers)})
    finally:
        if client is not None:
            client.close()
    raw = pd.DataFrame(rows)
    if raw.empty:
        return BenchResult(raw=raw, table=pd.DataFrame(), notes=notes)
    mean = raw.groupby("dataset", sort=False).mean(numeric_only=True)
    table = pd.DataFrame(
        {
            "dataset": mean.index,
            **{
                f"DS / vote, {k} label{'s' if k > 1 else ''} a task": [
                    f"{ds:.3f} / {vote:.3f}"
                    for ds, vote in zip(mean[f"ds_{k}"], mean[f"vote_{k}"], strict=True)
                ]
                for k in LABELS_PER_TASK
            },
            "DS label differs from the lone label (share of tasks)": [
                f"{v:.3f}" for v in mean["flipped"]
            ],
            "of those, lone label right": [
                "-" if np.isnan(v) else f"{v:.2f}" for v in mean["flipped_lone_right"]
            ],
        }
    )
    arms = ["policy", *(["cleanlab"] if client is not None else [])]
    first = pd.DataFrame(
        {
            "dataset": mean.index,
            **{
                f"{arm}: bought on differing tasks (share)": [
                    f"{v:.2f}" for v in mean[f"{arm}_on_flipped"]
                ]
                for arm in arms
            },
            **{
                f"{arm}: correct tasks gained": [f"{v:+.2f}" for v in mean[f"{arm}_gain"]]
                for arm in arms
            },
        }
    )
    control = pd.DataFrame(
        [no_overlap_row(per, seed) for per in LABELS_PER_WORKER for seed in range(seeds)]
    )
    by_size = control.groupby("labels_per_worker").mean(numeric_only=True)
    simulated = pd.DataFrame(
        {
            "labels per worker": by_size.index,
            "DS label differs from the lone label (share)": [
                f"{v:.3f}" for v in by_size["relabelled"]
            ],
            "of those, lone label right": [f"{v:.2f}" for v in by_size["relabelled_lone_right"]],
            "DS / lone labels, accuracy": [
                f"{a:.3f} / {b:.3f}" for a, b in zip(by_size["ds"], by_size["lone"], strict=True)
            ],
            f"DS's prior of the rarest class (true {min(SIMULATED_PRIOR):g})": [
                f"{v:.4f}" for v in by_size["rarest_prior"]
            ],
        }
    )
    notes.append(
        f"simulated control: {SIMULATED_TASKS} tasks, one label each, no task shared between "
        f"workers; prior {SIMULATED_PRIOR}, workers right {SIMULATED_ACCURACY:.0%} of the "
        f"time; {seeds} seeds per row"
    )
    worst = mean["flipped"].idxmax()
    summary = (
        f"With one label a task, Dawid-Skene's label differs from the lone label on "
        f"{mean.loc[worst, 'flipped']:.1%} of the tasks of {worst} (the most of the "
        f"{len(mean)} crowds), where its accuracy is {mean.loc[worst, 'ds_1']:.3f} against "
        f"the lone labels' {mean.loc[worst, 'vote_1']:.3f}. First round from there, correct "
        "tasks gained: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{arm} {mean.loc[name, f'{arm}_gain']:+.2f}" for arm in arms)
            for name in mean.index
        )
        + "."
    )
    return BenchResult(
        raw=raw,
        table=table,
        notes=notes,
        extra_tables={
            "The first round from one label a task (5 % of the tasks bought)": first,
            "Control: simulated crowds with no task shared between workers": simulated,
        },
        summary=summary,
    )
