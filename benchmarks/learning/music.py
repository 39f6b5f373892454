"""Benchmark ``music``: learning from crowds on Music genre, every method on one backbone.

The registry's Music genre data (Rodrigues, Pereira & Ribeiro, Pattern Recognition
Letters 2013): 700 training songs labelled by 44 Amazon Mechanical Turk workers (2945
labels, 10 genres), 300 test songs with ground truth only, 124 Marsyas features. The
features are standardised with the mean and standard deviation of the *training*
features (a constant feature is only centred); the test features get the same
transform. The methods, seeds and test metrics are those of the ``labelme``
benchmark.

There is no validation split, so there is no model selection: every method trains for
a fixed number of epochs and keeps its last weights (:data:`RECIPE`), and the test
split serves only the final scores. The recipe is the LabelMe recipe unchanged
(default MLP with 128 hidden units and dropout 0.5, Adam, learning rate 1e-3, batches
of 64 tasks, 50 epochs; EM learners: at most 50 iterations, tolerance 1e-4, 5
restarts). The number of epochs was checked once without any truth or test label,
on the training crowd alone: with 20% of the training tasks held out (3 random
splits), the agreement of MV+NN, NaiveSoft+NN, DS+NN, Crowd Layer MW, DL-EM and CMM
global with the held-out tasks' Dawid-Skene labels (aggregated from the crowd, not the
truth) averaged 0.556 at epoch 10, 0.607 at 30, 0.610 at 50 and 0.616 at 100: Music
needs many more epochs than LabelMe's best validation epochs (3-13) suggest, and 50
is on the plateau.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks._learning import (
    METHODS,
    Splits,
    accuracy_figure,
    bench_threads,
    methods_by_spec,
    results_table,
    run_methods,
    skipped_notes,
)
from benchmarks._registry import BenchResult, register
from benchmarks.learning import labelme as learning_labelme
from crowdlearn import datasets

NAME = "music"
#: The LabelMe recipe, unchanged (see the module docstring for the epochs).
RECIPE = learning_labelme.RECIPE
#: --quick: 2 seeds, 3 epochs, one restart, a few methods (as for LabelMe).
QUICK_RECIPE = learning_labelme.QUICK_RECIPE
QUICK_SEEDS = learning_labelme.QUICK_SEEDS
QUICK_SPECS = ("supervised", "mv+nn", "ds+nn", "dl-em", "cmm[setting=global]")


def standardise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """``train`` and ``others`` standardised with the mean and standard deviation of
    ``train`` only (columns with zero deviation are centred, not scaled); float32."""
    train = np.asarray(train, dtype=np.float64)
    mean = train.mean(axis=0)
    scale = train.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return [
        ((np.asarray(x, dtype=np.float64) - mean) / scale).astype(np.float32)
        for x in (train, *others)
    ]


def load_splits() -> Splits:
    """Music from the data root, with features standardised on the training features."""
    dataset = datasets.load("music", root=datasets.data_root())
    test_x, test_y = dataset.test
    train_x, test_x = standardise(dataset.train.features, test_x)
    return Splits(dataset.train.with_features(train_x), None, (test_x, test_y))


@register(NAME, "Learning from crowds on Music genre: every method, test accuracy/F1/ECE")
def bench_music(out: Path, quick: bool, seeds: int) -> BenchResult:
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = QUICK_RECIPE if quick else RECIPE
    methods = methods_by_spec(QUICK_SPECS) if quick else list(METHODS)
    splits = load_splits()
    raw = run_methods(NAME, methods, recipe, n_seeds, splits)
    wall = time.perf_counter() - start
    train, (test_x, _) = splits.train, splits.test
    notes = [
        f"data: {train.n_tasks} training tasks, {train.n_workers} workers, "
        f"{train.n_annotations} annotations, {train.n_classes} classes, "
        f"{train.features.shape[1]} Marsyas features standardised with the training "
        f"features' mean and std; {len(test_x)} test instances, no validation split; "
        f"data root {datasets.data_root()} ($CROWDLEARN_DATA)",
        f"seeds 0..{n_seeds - 1}"
        + (" (--quick: 2 seeds, a few methods, 3 epochs, 1 restart)" if quick else "")
        + "; the issue asks for 10 seeds (`--seeds 10`)",
        f"recipe, identical for every method: {recipe.describe()}",
        "no model selection (no validation split): every fit keeps the weights of its last "
        "epoch, or of the last EM iteration; the test split is used once per fit, after "
        "training, for the scores",
        "the recipe is LabelMe's; its 50 epochs were checked on the training crowd alone "
        "(no truth, no test): agreement with held-out tasks' Dawid-Skene labels plateaus "
        "from about 30 epochs (see the module docstring of benchmarks.learning.music)",
        "test accuracy, macro-F1 (all classes) and expected calibration error (15 "
        "equal-width bins of the top-class probability): mean ± std (population) over "
        "seeds; fit s = seconds of one fit (all restarts), mean over seeds",
        "CMM global is fitted on the crowd without annotator ids (CrowdData.anonymous)",
        f"torch threads per process: {bench_threads()} ($CROWDLEARN_BENCH_THREADS, default 1)",
        f"wall time of the whole benchmark (loading and every fit): {wall:.1f} s",
        *skipped_notes(raw),
    ]
    title = f"Music genre: test accuracy, {n_seeds} seed(s)"
    return BenchResult(
        raw=raw,
        table=results_table(raw, methods),
        notes=notes,
        figures={"accuracy": accuracy_figure(raw, methods, title)},
    )
