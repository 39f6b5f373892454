"""Benchmark ``iced``: learning from imbalanced crowd labels (ICED, Wang et al. 2021).

Binary tasks with a 10:1 imbalance in the training set and a balanced test set, as in
the paper's Table 1, and the methods of its Table 2: MV+LR, MV+DNN, DS+LR, DS+DNN,
Crowd Layer and ICED (:class:`crowdlearn.learning.iced.ICED`). Class code 0 is the
majority class and 1 the minority class; F1 is the F1-score of the minority class.

Data sets (new images and a new crowd for every seed):

* **USPS-Syn** (the registry's ``usps``, 16 x 16 pixels in [0, 1] as 256 features):
  digit 2 is the majority class and digit 8 the minority class (the paper does not
  say which digits it used). The split sizes allow a majority digit of 0, 1 or 2 (at
  least 668 images in USPS's training group) and minority digits with at least 166
  images in its test group; among ten such pairs tried with logistic regression on
  *clean* 668:66 labels (3 draws, scored on USPS's test group, before any crowd
  method was run on these data), 2 vs 8 was the least separable (balanced accuracy 0.91; the others
  0.92-0.99), so that the crowd's noise and the imbalance matter.
  Training: 668 images of 2 and 66 of 8 drawn from USPS's training group (the paper's
  734); validation (tuning only): 60 + 60 other images of that group; test: 166 + 166
  images of USPS's test group (the paper's 332).
* **Digits-Syn** (scikit-learn's ``load_digits``, 8 x 8 pixels scaled to [0, 1]): the
  same digits and construction at a smaller size, 100 + 10 training images, 25 + 25
  validation and 50 + 50 test images, disjoint.
* **LabelMe-bin** (the registry's ``labelme``, 512-d VGG16 features standardised on
  the training tasks): *forest* (majority) vs *open country* (minority) with
  **LabelMe's real crowd labels**: the annotations of those tasks whose label is one of
  the two classes (other labels dropped; a task left without labels is not used). All
  such forest tasks (130) and a tenth as many open-country tasks (13) drawn per seed,
  about 2.3 labels per task from 59 workers. The real workers are less reliable on the
  minority class here: about 94% of the kept labels of forest tasks are right, 74% of
  those of open-country tasks. Validation (tuning only): LabelMe's validation split
  restricted to the two classes and balanced (66 + 66); test: its test split
  restricted and balanced (124 + 124).

Simulated crowd (USPS-Syn, Digits-Syn; the paper's Appendix B recipe is not available):
9 workers, each labels every training image (the paper's setting). Worker ``u`` has an
accuracy on majority-class images drawn from U(0.70, 0.90) and one on minority-class
images drawn from U(0.45, 0.70), independently per worker and per seed; a wrong label
is the other class. Workers are thus less reliable on the minority class, and some
are worse than chance on it.

Methods: LR is scikit-learn's ``LogisticRegression`` (L2, ``C`` below) on the majority
vote (ties broken at random) or Dawid-Skene labels; DNN is
:class:`~crowdlearn.learning.TwoStage` (hard labels) with the learners' default MLP
(128 hidden units, ReLU, dropout 0.5, Adam lr 1e-3, batches of 64); Crowd Layer is
:class:`~crowdlearn.learning.CrowdLayer` (MW) on the same MLP; ICED uses the same MLP
as its classifier. Every fit keeps the weights of its last epoch (no model selection);
the test split is used once per fit, for the scores.

Ablations: the truth-inference accuracy of ICED's Dawid-Skene on the real training
tasks before any synthesis, after the first synthesis and at the end (the paper's
Fig. 2, with the majority vote for reference), and the warm-up strategies Trad-I,
Trad-II and ICED-w (Table 3): ICED with ``n_rounds=0``, scored on the test set after
the warm-up alone.

The section opens with a verdict table (:func:`verdict_table`): each paper claim
examined, the paper's number, ours (with the table row it comes from) and a verdict
computed from the printed means with the rule of :data:`VERDICT_RULE`.

Mechanism experiments (ICED with USPS-Syn's tuned schedule, :data:`MECHANISM`):

* **USPS-Syn-U** (:func:`usps_syn_u`): USPS-Syn's images with a crowd where the
  paper's Dawid-Skene (:func:`~crowdlearn.learning.iced.paper_dawid_skene`: hard
  counts, no pseudo-counts, uniform class prior) falls below 60% while majority vote
  does not, the setting of the paper's Fig. 2: 7 workers (Gisette-Syn's count), each
  as reliable on both classes, accuracy ~ U(0.6, 0.7) (:data:`FAIL_CROWD`).
* **Fig. 2 with controls**: Dawid-Skene's accuracy and minority recall before
  synthesis, after the first and after the last round on USPS-Syn-U, with ICED's
  synthesis (kNN crowd labels) and two controls that add as many tasks: duplicated
  inferred-minority tasks with their own labels, and the same labellers answering
  at random (``synthetic_labels`` of :class:`~crowdlearn.learning.iced.ICED`).
* **M-step**: the library's Dawid-Skene (smoothed confusions, learned prior) and the
  paper's (uniform prior), each with soft and hard counts (``hard_em``).
* **eq. 2.5**: the formula as printed against the text's reading (``interpolation``).
* **decoder**: ``Q`` fitted on ``G``'s embeddings at the rounds (default) against
  ``Q`` pre-trained with ``G`` as an autoencoder and then frozen
  (``decoder_pretrain``).

Table 3 is run twice: with equal epochs as in the paper (so the strategies make
different numbers of Adam steps) and with equal Adam steps (:data:`EQUAL_STEPS`:
3 stages x 5 epochs x 20 mini-batches = 300 steps for every strategy). LabelMe-bin is
an extension, not in the paper; its DNN baselines use ICED's network.

Hyperparameters (:data:`TUNED`, per data set and method) were chosen on the
validation images only, never the test split, with :func:`validation_search` on seeds
100-102 (other images and crowds than the benchmark's seeds 0, 1, ...), by mean
validation accuracy over the candidates of :func:`search_candidates`; see
:data:`SEARCH_NOTE` for the grid and the outcome. ``--quick`` uses
:data:`QUICK_PARAMS` (few epochs and rounds, not tuned), 2 seeds and MV+LR, DS+DNN and
ICED only, and of the mechanism experiments the Fig. 2 variants on one seed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._learning import SEED_STRIDE, bench_threads, torch_threads
from benchmarks._registry import BenchResult, register
from benchmarks.iced.protocol import (
    DATASETS,
    DEFAULT_SEEDS,
    EQUAL_STEPS,
    EQUAL_STEPS_EXPERIMENT,
    FAIL_CROWD,
    MAJORITY_ACCURACY,
    MECHANISM_BASE,
    MECHANISM_DATASETS,
    MECHANISM_SEEDS,
    METHODS,
    MINORITY_ACCURACY,
    N_WORKERS,
    NAME,
    QUICK_EQUAL_STEPS,
    QUICK_METHODS,
    QUICK_SEEDS,
    SEARCH_NOTE,
    TUNED,
    WARMUPS,
    BinaryTask,
    evaluate,
    mechanism_configs,
    method_params,
    variant_label,
    worker_reliability,
)
from benchmarks.iced.tables import (
    VERDICT_RULE,
    accuracy_figure,
    inference_figure,
    mechanism_table,
    results_table,
    verdict_table,
)
from crowdlearn import datasets

#: Columns of the raw rows (one per data set, seed and method).
RAW_COLUMNS = [
    "dataset",
    "experiment",
    "method",
    "variant",
    "seed",
    "random_state",
    "status",
    "accuracy",
    "f1_minority",
    "train_label_accuracy",
    "train_minority_recall",
    "fit_seconds",
    "epochs_run",
    "warmup_samples",
    "adam_steps",
    "warmup_minority",
    "n_synthetic",
    "synthetic_minority_share",
    "inferred_minority_before",
    "mv_accuracy",
    "ds_before",
    "ds_first",
    "ds_final",
    "recall_before",
    "recall_first",
    "recall_final",
    "error",
]


@register(
    NAME,
    "ICED (Wang et al. 2021) on imbalanced binary crowds: USPS-Syn, Digits-Syn, LabelMe-bin; "
    "Table 2, Fig. 2 and Table 3",
)
def bench_iced(out: Path, quick: bool, seeds: int = DEFAULT_SEEDS) -> BenchResult:
    """Every data set x seed x method (Table 2) and warm-up strategy (Table 3).

    Parameters
    ----------
    out : Path
        Output directory (the registry writes the files).
    quick : bool
        2 seeds, MV+LR, DS+DNN and ICED with :data:`QUICK_PARAMS`.
    seeds : int, default 5
        Seeds ``0 .. seeds - 1``.

    Returns
    -------
    BenchResult
        Raw rows (:data:`RAW_COLUMNS`), the table of :func:`results_table`, notes and
        the ``accuracy`` and ``inference`` figures. A data set whose files are missing
        is skipped with a note.
    """
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    methods = (*(QUICK_METHODS if quick else METHODS), *WARMUPS)
    equal_steps = QUICK_EQUAL_STEPS if quick else EQUAL_STEPS
    rows: list[dict[str, Any]] = []
    rounds: dict[str, list[np.ndarray]] = {}
    data_notes, skipped = [], []
    with torch_threads(bench_threads()):
        for name, build in DATASETS.items():
            try:
                tasks = [build(seed) for seed in range(n_seeds)]
            except datasets.DatasetError as error:
                skipped.append(f"{name} skipped: {error}")
                continue
            data_notes.append(_data_note(tasks))
            for seed, task in enumerate(tasks):
                for method in methods:
                    outcome = evaluate(method, task, method_params(name, method, quick), seed)
                    history = outcome.pop("rounds", None)
                    if history is not None:
                        rounds.setdefault(name, []).append(history)
                    rows.append(
                        {
                            "dataset": name,
                            "experiment": "Table 3" if method in WARMUPS else "Table 2",
                            "method": method,
                            "seed": seed,
                            "random_state": SEED_STRIDE * seed,
                            **outcome,
                        }
                    )
                for method in WARMUPS:  # Table 3 again, every strategy with equal steps
                    params = {**method_params(name, method, quick), **equal_steps}
                    outcome = evaluate(method, task, params, seed)
                    rows.append(
                        {
                            "dataset": name,
                            "experiment": EQUAL_STEPS_EXPERIMENT,
                            "method": method,
                            "seed": seed,
                            "random_state": SEED_STRIDE * seed,
                            **outcome,
                        }
                    )
        # the mechanism fits: at most MECHANISM_SEEDS seeds (--quick: one), for time
        mechanism_seeds = 1 if quick else min(n_seeds, MECHANISM_SEEDS)
        rows.extend(_mechanism_rows(mechanism_seeds, quick, skipped))
    raw = pd.DataFrame(rows).reindex(columns=RAW_COLUMNS)
    wall = time.perf_counter() - start
    notes = [
        *data_notes,
        f"simulated crowds: {N_WORKERS} workers label every training image; per worker "
        f"and seed, accuracy on majority-class images ~ U{MAJORITY_ACCURACY}, on "
        f"minority-class images ~ U{MINORITY_ACCURACY}; a wrong label is the other class",
        f"seeds 0..{n_seeds - 1}: new images, crowd and network weights per seed "
        "(random_state = 1000 x seed)"
        + (
            " (--quick: 2 seeds, MV+LR, DS+DNN and ICED, 5 DNN epochs, ICED 1 x 3 warm-up "
            "epochs and 3 rounds)"
            if quick
            else ""
        )
        + (
            f"; the published table uses {DEFAULT_SEEDS} (`--seeds {DEFAULT_SEEDS}`)"
            if n_seeds != DEFAULT_SEEDS and not quick
            else ""
        ),
        "test accuracy on the balanced test set and F1 of the minority class (positive "
        "class), mean ± std (population) over seeds; train label accuracy / minority "
        "recall: the labels each method trained on (MV or DS; ICED: its final DS labels "
        "of the real tasks) against the truth of the training tasks",
        "Fig. 2 rows: ICED's truth inference on the real training tasks: majority vote, "
        "Dawid-Skene on the real labels alone (DS-orig), after the first synthesis "
        "(DS-first) and after the last round (DS-final)",
        "Table 3 rows: ICED's classifier after the warm-up alone (n_rounds=0), with the "
        "same epochs for every strategy: Trad-I trains on every task, Trad-II on the "
        "three upper certainty groups at once, ICED-w on those groups in turn (third, "
        "+second, +highest); warm-up samples = tasks in those groups; epochs = 3 x "
        "ICED's warmup_epochs of the data set; a classifier that predicts the majority "
        "class only scores 0.500 and F1 0",
        f"{EQUAL_STEPS_EXPERIMENT} rows: the same strategies, each making "
        f"{3 * equal_steps['warmup_epochs'] * equal_steps['warmup_steps']} Adam steps "
        f"(3 stages x {equal_steps['warmup_epochs']} epochs x "
        f"{equal_steps['warmup_steps']} mini-batches of 64, the stage's tasks cycled in a "
        "new random order every epoch)",
        f"mechanism rows: seeds 0..{mechanism_seeds - 1} (at most {MECHANISM_SEEDS}); "
        f"USPS-Syn-U: USPS-Syn's images with {FAIL_CROWD['n_workers']} workers, each with "
        f"accuracy ~ U{FAIL_CROWD['majority_accuracy']} on both classes; 'paper D&S': "
        "hard counts, no pseudo-counts, class prior fixed uniform (the failing D&S of "
        "the paper's Fig. 2); 'library D&S': crowdlearn's DawidSkene (smoothed "
        "confusions, learned prior); controls add as many tasks as ICED's synthesis: "
        "duplicated inferred-minority tasks with their own crowd labels, or the kNN "
        "labellers answering at random; D&S-orig minority share = share of the real "
        "tasks that D&S infers as minority before synthesis (truth: 0.090)",
        "LabelMe-bin is an extension, not in the paper: real LabelMe labels; its MV+DNN "
        "and DS+DNN baselines train the same network as ICED's classifier",
        *_warmup_notes(raw),
        (
            "hyperparameters: --quick settings, not tuned (the full run uses per data set "
            "values chosen on validation images only, never the test split)"
            if quick
            else f"hyperparameters: {_tuned_description()}; {SEARCH_NOTE}"
        ),
        "every fit keeps its last epoch (no model selection); the test split is used "
        "once per fit, for the scores",
        "reference only: the paper's USPS-Syn row (Table 2) reports ICED 0.9036 "
        "accuracy, Crowd-Layer 0.9006, MV+LR 0.8494, MV+DNN 0.8735, D&S+LR 0.8193, "
        "D&S+DNN 0.7530; its crowd recipe (Appendix B) and digit pair are not "
        "available, so our numbers are compared within our own table only",
        f"torch threads: {bench_threads()} ($CROWDLEARN_BENCH_THREADS, default 1)",
        f"wall time of the whole benchmark (data, every fit): {wall:.1f} s",
        *skipped,
        *[
            f"error: {row.dataset} {row.method} seed {row.seed}: {row.error}"
            for row in raw[raw["status"] == "error"].itertuples()
        ],
    ]
    title = f"ICED benchmark: test accuracy, {n_seeds} seed(s)"
    paper_rows = raw[raw["experiment"] != "Mechanism"]
    figures = {"accuracy": accuracy_figure(paper_rows, title)} if len(paper_rows) else {}
    if rounds:
        figures["inference"] = inference_figure(paper_rows, rounds)
    return BenchResult(
        raw=raw,
        table=verdict_table(raw),
        summary=VERDICT_RULE,
        notes=notes,
        figures=figures,
        extra_tables={
            "Table 2, Fig. 2 (our crowds) and Table 3 (equal epochs, as the paper; and "
            "equal Adam steps)": results_table(raw),
            "Mechanism: Fig. 2 where D&S fails (with controls), M-step, eq. 2.5, "
            "decoder (ICED with USPS-Syn's tuned parameters)": mechanism_table(raw),
        },
    )


def _mechanism_rows(n_seeds: int, quick: bool, skipped: list[str]) -> list[dict[str, Any]]:
    """ICED fitted with every distinct configuration of :data:`MECHANISM` per seed."""
    rows = []
    configs = mechanism_configs(quick)
    for dataset in MECHANISM_BASE:
        try:
            tasks = [MECHANISM_DATASETS[dataset](seed) for seed in range(n_seeds)]
        except datasets.DatasetError as error:
            skipped.append(f"{dataset} (mechanism) skipped: {error}")
            continue
        for seed, task in enumerate(tasks):
            for (name, _), config in configs.items():
                if name != dataset:
                    continue
                outcome = evaluate("ICED", task, config, seed)
                outcome.pop("rounds", None)
                rows.append(
                    {
                        "dataset": dataset,
                        "experiment": "Mechanism",
                        "method": "ICED",
                        "variant": variant_label(config),
                        "seed": seed,
                        "random_state": SEED_STRIDE * seed,
                        **outcome,
                    }
                )
    return rows


def _warmup_notes(raw: pd.DataFrame) -> list[str]:
    """Data sets where Trad-II trains on every task, like Trad-I."""
    samples = raw[raw["experiment"] == "Table 3"].groupby(["dataset", "method"])["warmup_samples"]
    means = samples.mean()
    return [
        f"{dataset}: every task is in the three upper certainty groups (few labels per "
        "task give few distinct scores), so Trad-II trains on the same tasks as Trad-I"
        for dataset in raw["dataset"].unique()
        if (dataset, "Trad-I") in means
        and means[(dataset, "Trad-I")] == means.get((dataset, "Trad-II"), np.nan)
    ]


def _data_note(tasks: list[BinaryTask]) -> str:
    first = tasks[0]
    counts = np.bincount(first.train.truth, minlength=2)
    reliability = np.mean([worker_reliability(task.train) for task in tasks], axis=0)
    return (
        f"{first.name}: {first.train.n_tasks} training tasks ({counts[0]} majority, "
        f"{counts[1]} minority), {first.train.n_workers} workers, "
        f"{first.train.n_annotations} labels, {first.train.features.shape[1]} features; "
        f"balanced test set of {len(first.test[1])}; measured share of right labels on "
        f"majority / minority tasks: {reliability[0]:.3f} / {reliability[1]:.3f} "
        "(mean over seeds)"
    )


def _tuned_description() -> str:
    parts = []
    for dataset, methods in TUNED.items():
        chosen = "; ".join(
            f"{method} {', '.join(f'{k}={v}' for k, v in params.items())}"
            for method, params in methods.items()
        )
        parts.append(f"{dataset}: {chosen}")
    return " | ".join(parts)
