"""Learning from crowds without any truth for model selection, as a user would run it.

Three benchmarks share this protocol: every learner is built with its **defaults**
(``make_learner(spec, random_state=..., device="cpu")`` and nothing else), fitted with
``valid="crowd"`` (the default of ``fit``: the epoch, and the EM restart, are chosen on
a held-out share of the training tasks by a criterion that reads no truth), on the
features **as loaded** (the learners standardise them themselves). The test split is
used once per fit, after training, for the scores.

* ``labelme-no-truth`` (``python -m benchmarks labelme --protocol no-truth``): LabelMe; its
  validation split is not used by any method, to compare with ``labelme``, which
  selects on it.
* ``music-no-truth`` (``python -m benchmarks music --protocol no-truth``): Music genre
  (no validation split exists); the issue's targets and the published MLP numbers of
  the annot-mix benchmark (Herde et al., ECAI 2024, last epoch) beside ours.
* ``real-learning``: every registered learner with defaults on every registry dataset
  with features (LabelMe, Music) and on simulated crowds on USPS and scikit-learn's
  digits (:func:`~crowdlearn.simulate.crowd_on_features` with experts, inexperts,
  spammers and class-confusers), beside MV+NN, DS+NN and the gold-label network, with
  the accuracy of majority vote and Dawid-Skene on the training tasks (AccTrain).
* ``leaderboard`` (issue 17's name for the same grid): methods x datasets with
  the published benchmark's 50 epochs, LabelMe's validation split used for selection
  and the last epoch elsewhere;
  ``leaderboard --protocol no-truth`` is ``real-learning``'s grid with one held-out
  share (``crowd_folds=1``), so that its 10 seeds fit in an hour. Both quote the
  annot-mix benchmark's published Music numbers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._learning import (
    METHODS,
    Method,
    Recipe,
    Splits,
    accuracy_figure,
    bench_jobs,
    bench_threads,
    methods_by_spec,
    results_table,
    run_grid,
    run_methods,
    skipped_notes,
    summarise,
)
from benchmarks._registry import BenchResult, register
from benchmarks.speed.aggregation import Verdict
from crowdlearn import datasets

#: Every learner with its defaults; EM learners keep their default single restart.
RECIPE = Recipe(max_epochs=None)
#: ``leaderboard`` (with validation): the annot-mix benchmark's 50 epochs (the authors'
#: public configuration, see ``learning_defaults.RECIPES``), the last one kept where the
#: data have no validation split, as in the published column printed beside ours.
VALID_RECIPE = Recipe(max_epochs=50)
#: ``--protocol no-truth-share``: the same with one held-out share and a refit
#: (``crowd_folds=1``, the default before cross-fitting).
SHARE_RECIPE = Recipe(max_epochs=None, crowd_folds=1)
#: --quick: 2 epochs (a smoke test of the protocol, not a result).
QUICK_RECIPE = Recipe(max_epochs=2, n_restarts=1)
QUICK_SEEDS = 2
QUICK_SPECS = ("mv+nn", "ds+nn", "crowdlayer[variant=MW]", "dl-em")

#: Published test accuracy on Music with an MLP, last epoch (Herde et al., annot-mix,
#: ECAI 2024, their benchmark table), keyed by our spec where we have the method.
ANNOT_MIX_MUSIC = {
    "supervised": 0.796,
    "mv+nn": 0.661,
    "crowdlayer[variant=MW]": 0.698,
    "conal": 0.690,
    "annot-mix": 0.738,
    "madl": 0.720,
    "geocrowdnet-f": 0.702,
    "geocrowdnet-w": 0.701,
    "union-net": 0.686,
    "trace-reg": 0.664,
}


def board_published() -> dict[str, float]:
    """:data:`ANNOT_MIX_MUSIC` keyed by the leaderboard's specs: its ``crowdlayer`` row is
    the default variant, MW, the published Crowd Layer."""
    return {**ANNOT_MIX_MUSIC, "crowdlayer": ANNOT_MIX_MUSIC["crowdlayer[variant=MW]"]}


#: Issue targets on Music (no truth used for selection, 10 seeds).
MUSIC_BEST_TARGET = 0.74
MUSIC_CROWD_LAYER_TARGET = 0.70
ECE_TARGET = 0.08
#: LabelMe: every end-to-end learner within this of its with-validation accuracy.
LABELME_GAP_TARGET = 0.01

#: Methods that are not trained end to end from the annotations.
TWO_STAGE = ("supervised", "mv+nn", "naivesoft+nn", "ds+nn", "glad+nn")


def _notes(splits: Splits, recipe: Recipe, n_seeds: int, quick: bool, wall: float) -> list[str]:
    train, (test_x, _) = splits.train, splits.test
    return [
        f"data: {train.n_tasks} training tasks, {train.n_workers} workers, "
        f"{train.n_annotations} annotations, {train.n_classes} classes, "
        f"{train.features.shape[1]} features as loaded (not standardised by the "
        f"benchmark); {len(test_x)} test instances; data root {datasets.data_root()}",
        f"seeds 0..{n_seeds - 1}"
        + (" (--quick: 2 seeds, a few methods, 2 epochs)" if quick else ""),
        f"recipe: {recipe.describe()}",
        _selection_note(recipe),
        "test accuracy, macro-F1 and expected calibration error (15 bins): mean ± std "
        "(population) over seeds; fit s = seconds of one fit (selection and refit, or "
        "every fold)",
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()} "
        "($CROWDLEARN_BENCH_JOBS)",
        f"wall time of the whole benchmark: {wall:.1f} s",
    ]


def _selection_note(recipe: Recipe) -> str:
    if recipe.folds == 1:
        return (
            'no truth is used for any choice: fit(data, valid="crowd") holds out 20% of '
            "the annotated training tasks (stratified by their majority class) and keeps "
            "the epoch with the best agreement of the classifier with Dawid-Skene on them "
            "(crowd_criterion='agreement'), then refits on every task; the temperature of "
            "predict_proba is fitted on the same held-out tasks"
        )
    return (
        f"no truth is used for any choice: crowd_folds={recipe.folds} splits the "
        "annotated training tasks into that many folds (stratified by their majority "
        "class); one classifier per fold trains on the other folds with the epoch of best "
        "Dawid-Skene agreement on its own fold; one temperature is fitted on every "
        "fold's held-out tasks, and predict_proba averages the classifiers' probabilities "
        "at that temperature"
    )


def _run(
    name: str, splits: Splits, quick: bool, seeds: int, recipe: Recipe = RECIPE
) -> tuple[pd.DataFrame, list, float]:
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = _quick_recipe(recipe) if quick else recipe
    methods = methods_by_spec(QUICK_SPECS) if quick else list(METHODS)
    raw = run_methods(name, methods, recipe, n_seeds, splits, jobs=bench_jobs())
    return raw, methods, time.perf_counter() - start


def music_verdicts(summary: pd.DataFrame) -> list[Verdict]:
    """The issue's Music targets, from the summary of a no-truth run."""
    ok = summary[summary["status"] == "ok"]
    crowd = ok.drop(index=[s for s in ("supervised",) if s in ok.index])
    verdicts = []
    if len(crowd):
        best = crowd["accuracy_mean"].idxmax()
        value = crowd.loc[best, "accuracy_mean"]
        verdicts.append(
            Verdict(
                f"best crowd learner >= {MUSIC_BEST_TARGET}",
                bool(value >= MUSIC_BEST_TARGET),
                f"{best} {value:.3f}",
            )
        )
    layer = "crowdlayer[variant=MW]"
    if layer in ok.index:
        value = ok.loc[layer, "accuracy_mean"]
        verdicts.append(
            Verdict(
                f"Crowd Layer >= {MUSIC_CROWD_LAYER_TARGET}",
                bool(value >= MUSIC_CROWD_LAYER_TARGET),
                f"{value:.3f}",
            )
        )
    verdicts.extend(end_to_end_verdicts(summary))
    return verdicts


def end_to_end_verdicts(summary: pd.DataFrame) -> list[Verdict]:
    """Every end-to-end learner >= DS+NN, and every learner's ECE <= the target."""
    ok = summary[summary["status"] == "ok"]
    verdicts = []
    if "ds+nn" in ok.index:
        reference = ok.loc["ds+nn", "accuracy_mean"]
        ends = [s for s in ok.index if s not in TWO_STAGE]
        below = [s for s in ends if ok.loc[s, "accuracy_mean"] < reference]
        verdicts.append(
            Verdict(
                "every end-to-end learner >= DS+NN",
                not below,
                f"DS+NN {reference:.3f}; below: "
                + (", ".join(f"{s} {ok.loc[s, 'accuracy_mean']:.3f}" for s in below) or "none"),
            )
        )
    high = [s for s in ok.index if ok.loc[s, "ece_mean"] > ECE_TARGET]
    verdicts.append(
        Verdict(
            f"ECE <= {ECE_TARGET} for every learner",
            not high,
            "above: " + (", ".join(f"{s} {ok.loc[s, 'ece_mean']:.3f}" for s in high) or "none"),
        )
    )
    return verdicts


#: The issue's targets are decided on this many seeds of the full recipe.
TARGET_SEEDS = 10


def decided(verdicts: Sequence[Verdict], quick: bool, seeds: int) -> list[Verdict]:
    """The verdicts, undetermined unless the run is the full recipe on
    :data:`TARGET_SEEDS` seeds."""
    if not quick and seeds == TARGET_SEEDS:
        return list(verdicts)
    why = "--quick" if quick else f"{seeds} seed(s), the target needs {TARGET_SEEDS}"
    return [Verdict(v.target, None, f"{why}: {v.detail}") for v in verdicts]


def _verdict_lines(verdicts: Sequence[Verdict]) -> list[str]:
    return [f"target: {v.target}: **{v.word}** ({v.detail})" for v in verdicts]


@register("music-no-truth", "Music genre, every learner with defaults, no truth for selection")
def bench_music_no_truth(out: Path, quick: bool, seeds: int) -> BenchResult:
    return _music(out, quick, seeds, "music-no-truth", RECIPE)


@register(
    "music-no-truth-share",
    "Music genre, no truth for selection, one held-out share and a refit (crowd_folds=1)",
)
def bench_music_no_truth_share(out: Path, quick: bool, seeds: int) -> BenchResult:
    return _music(out, quick, seeds, "music-no-truth-share", SHARE_RECIPE)


def _quick_recipe(recipe: Recipe) -> Recipe:
    return Recipe(max_epochs=2, n_restarts=1, crowd_folds=recipe.crowd_folds)


def _fit_all(
    dataset_name: str, name: str, quick: bool, seeds: int, recipe: Recipe
) -> tuple[pd.DataFrame, list, pd.DataFrame, list[str]]:
    """Every learner on the registry dataset, no truth: raw rows, methods, summary and
    the notes every no-truth section starts with."""
    dataset = datasets.load(dataset_name, root=datasets.data_root())
    splits = Splits(dataset.train, "crowd", dataset.test)
    raw, methods, wall = _run(name, splits, quick, seeds, recipe)
    used = _quick_recipe(recipe) if quick else recipe
    notes = _notes(splits, used, QUICK_SEEDS if quick else seeds, quick, wall)
    return raw, methods, summarise(raw, methods), notes


def _music(out: Path, quick: bool, seeds: int, name: str, recipe: Recipe) -> BenchResult:
    raw, methods, summary, head = _fit_all("music", name, quick, seeds, recipe)
    notes = [
        *head,
        "reference accuracy: the annot-mix benchmark's Music MLP column (Herde et al., "
        "ECAI 2024; last epoch, their own features preprocessing and MLP); quoted, not run",
        *_verdict_lines(decided(music_verdicts(summary), quick, seeds)),
        *skipped_notes(raw),
    ]
    title = "Music genre, no truth for selection: test accuracy"
    return BenchResult(
        raw=raw,
        table=results_table(raw, methods, ANNOT_MIX_MUSIC),
        notes=notes,
        figures={"accuracy": accuracy_figure(raw, methods, title, ANNOT_MIX_MUSIC)},
    )


@register("labelme-no-truth", "LabelMe, every learner with defaults, validation split unused")
def bench_labelme_no_truth(out: Path, quick: bool, seeds: int) -> BenchResult:
    return _labelme(out, quick, seeds, "labelme-no-truth", RECIPE)


@register(
    "labelme-no-truth-share",
    "LabelMe, validation split unused, one held-out share and a refit (crowd_folds=1)",
)
def bench_labelme_no_truth_share(out: Path, quick: bool, seeds: int) -> BenchResult:
    return _labelme(out, quick, seeds, "labelme-no-truth-share", SHARE_RECIPE)


def _labelme(out: Path, quick: bool, seeds: int, name: str, recipe: Recipe) -> BenchResult:
    raw, methods, summary, head = _fit_all("labelme", name, quick, seeds, recipe)
    notes = [
        *head,
        "LabelMe's validation split (500 labelled images) is not given to any method; "
        "compare with the `labelme` section, which selects on it",
        *_verdict_lines(
            decided(
                labelme_gap_verdicts(summary, Path(out) / "labelme.csv")
                + end_to_end_verdicts(summary),
                quick,
                seeds,
            )
        ),
        *skipped_notes(raw),
    ]
    title = "LabelMe, no truth for selection: test accuracy"
    return BenchResult(
        raw=raw,
        table=results_table(raw, methods),
        notes=notes,
        figures={"accuracy": accuracy_figure(raw, methods, title)},
    )


def labelme_gap_verdicts(summary: pd.DataFrame, with_valid_csv: Path) -> list[Verdict]:
    """Every end-to-end learner within :data:`LABELME_GAP_TARGET` of its accuracy in the
    ``labelme`` run whose raw rows are in ``with_valid_csv`` (same --out folder)."""
    text = (
        f"every end-to-end learner within {LABELME_GAP_TARGET:.2f} of its with-validation accuracy"
    )
    if not with_valid_csv.exists():
        return [Verdict(text, None, f"no {with_valid_csv.name} in --out: run `labelme` first")]
    other = pd.read_csv(with_valid_csv)
    other = other[other["status"] == "ok"].groupby("spec")["accuracy"].mean()
    ok = summary[summary["status"] == "ok"]
    gaps = {
        spec: ok.loc[spec, "accuracy_mean"] - other[spec]
        for spec in ok.index
        if spec not in TWO_STAGE and spec in other.index
    }
    worse = {spec: gap for spec, gap in gaps.items() if gap < -LABELME_GAP_TARGET}
    detail = ", ".join(f"{spec} {gap:+.3f}" for spec, gap in gaps.items())
    return [
        Verdict(text, not worse if gaps else None, f"no truth minus with validation: {detail}")
    ]


# ---------------------------------------------------------------------- real-learning

#: The simulated crowd put on USPS and digits: 50 workers, 3 labels per task.
SIMULATED_GROUPS = {"expert": 0.2, "inexpert": 0.4, "spammer": 0.3, "class_confuser": 0.1}
#: Learners left out of ``real-learning`` by default and why.
REAL_LEARNING_SKIP = {
    "twostage": "generic two-stage spec (covered by mv+nn, ds+nn...)",
    "geocrowdnet": "the same learner as geocrowdnet-f (penalty F is its default)",
    "ensemble": "the mean of other rows' learners (its fit is theirs summed); "
    "`python -m benchmarks ensemble` measures it",
}
#: Scheduling only: the learners with the longest fits in ``real-learning``'s fit-seconds
#: table, submitted first so that the grid does not end on one long fit.
LONGEST_FIRST = (
    "crowding",
    "doctornet-w",
    "doctornet",
    "iced",
    "annot-mix",
    "self-crowd",
    "trace-reg",
    "madl",
)
#: USPS pool instances used as training tasks (the rest of the pool is unused).
USPS_TASKS = 2000


def simulated(name: str, X: np.ndarray, y: np.ndarray, test: tuple) -> Splits:
    """A simulated crowd (fixed seed 0) on ``(X, y)``, with the given test pair."""
    from crowdlearn.simulate import crowd_on_features

    crowd = crowd_on_features(
        X, y, n_workers=50, labels_per_task=3, groups=SIMULATED_GROUPS, seed=0
    )
    return Splits(crowd, "crowd", test)


def real_learning_splits() -> dict[str, Splits]:
    """LabelMe, Music (registry), USPS and digits with simulated crowds."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    root = datasets.data_root()
    out: dict[str, Splits] = {}
    for name in ("labelme", "music"):
        dataset = datasets.load(name, root=root)
        out[name] = Splits(dataset.train, "crowd", dataset.test)
    usps = datasets.load("usps", root=root)
    pool_x, pool_y = usps.pool
    rows = np.random.default_rng(0).permutation(len(pool_y))[:USPS_TASKS]
    out["usps-sim"] = simulated("usps-sim", pool_x[rows], pool_y[rows], usps.test)
    digits = load_digits()
    train_x, test_x, train_y, test_y = train_test_split(
        digits.data, digits.target, test_size=0.3, random_state=0, stratify=digits.target
    )
    out["digits-sim"] = simulated("digits-sim", train_x, train_y, (test_x, test_y))
    return out


def real_learning_methods() -> list[Method]:
    """Gold labels, then every registered learner (defaults) except those skipped."""
    from crowdlearn.learning import LEARNERS

    anonymous_specs = {"cmm[setting=global]"}
    methods = [Method("gold labels (supervised)", "supervised", crowd=False)]
    for name in sorted(LEARNERS):
        if name in REAL_LEARNING_SKIP or name == "supervised":
            continue
        methods.append(Method(name, name, em=name in ("dl-em", "cmm")))
    methods.append(Method("cmm global", "cmm[setting=global]", anonymous=True))
    return [m for m in methods if m.spec not in anonymous_specs or m.anonymous]


def acc_train(data: Any) -> dict[str, float]:
    """Accuracy of majority vote and Dawid-Skene on the training tasks (AccTrain)."""
    from crowdlearn.aggregation import DawidSkene, MajorityVote

    known = data.truth >= 0
    return {
        name: float(np.mean(model.fit(data).predict()[known] == data.truth[known]))
        for name, model in (
            ("mv", MajorityVote(tie_break="random", random_state=0)),
            ("ds", DawidSkene()),
        )
    }


#: Issue 17: the whole leaderboard (every method, 4 datasets, 10 seeds) within an hour.
BUDGET_SECONDS = 3600.0


def budget_verdict(n_methods: int, n_datasets: int, wall: float) -> Verdict:
    """Whether the whole grid ran within :data:`BUDGET_SECONDS` of wall time."""
    return Verdict(
        f"the whole leaderboard ({n_methods} methods x {n_datasets} datasets x "
        f"{TARGET_SEEDS} seeds) under {BUDGET_SECONDS / 60:.0f} minutes",
        bool(wall < BUDGET_SECONDS),
        f"{wall / 60:.1f} min wall with {bench_jobs()} fit(s) at once",
    )


def real_learning_splits_for(protocol: str) -> dict[str, Splits]:
    """The datasets, validated as the protocol says: ``"no-truth"``: ``valid="crowd"``
    everywhere; ``"valid"``: LabelMe's validation split, the last epoch elsewhere."""
    splits = real_learning_splits()
    if protocol == "no-truth":
        return splits
    labelme = datasets.load("labelme", root=datasets.data_root())
    out = {name: Splits(s.train, None, s.test) for name, s in splits.items()}
    out["labelme"] = Splits(labelme.train, labelme.valid, labelme.test)
    return out


def _board(
    protocol: str, quick: bool, seeds: int, no_truth_recipe: Recipe = RECIPE
) -> BenchResult:
    """Every learner x every dataset with features, under ``protocol``."""
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = (
        QUICK_RECIPE if quick else (no_truth_recipe if protocol == "no-truth" else VALID_RECIPE)
    )
    methods = real_learning_methods()
    if quick:
        methods = [m for m in methods if m.spec in ("supervised", *QUICK_SPECS)]
    all_splits = real_learning_splits_for(protocol)
    if quick:
        all_splits = {"digits-sim": all_splits["digits-sim"], "music": all_splits["music"]}
    raws, verdicts, facts = [], [], []
    board = pd.DataFrame({"method": [m.label for m in methods]}, index=[m.spec for m in methods])
    details = []
    raw_by_dataset = run_grid(
        all_splits, methods, recipe, n_seeds, jobs=bench_jobs(), first=LONGEST_FIRST
    )
    for name, splits in all_splits.items():
        raw = raw_by_dataset[name]
        raws.append(raw)
        summary = summarise(raw, methods)
        accs = acc_train(splits.train)
        facts.append(f"{name}: AccTrain MV {accs['mv']:.3f}, DS {accs['ds']:.3f}")
        ok = summary[summary["status"] == "ok"]
        crowd = ok.drop(index=[s for s in ("supervised",) if s in ok.index])
        best = crowd["accuracy_mean"].idxmax() if len(crowd) else None
        cells = {}
        for method in methods:
            if method.spec not in ok.index:
                cells[method.spec] = str(summary.loc[method.spec, "status"])
                continue
            row = ok.loc[method.spec]
            mark = " **best**" if method.spec == best else ""
            cells[method.spec] = f"{row['accuracy_mean']:.3f} ± {row['accuracy_std']:.3f}{mark}"
            details.append(
                {
                    "dataset": name,
                    "method": method.label,
                    "macro-F1": f"{row['macro_f1_mean']:.3f}",
                    "ECE": f"{row['ece_mean']:.3f}",
                    "fit s": f"{row['fit_seconds']:.1f}",
                }
            )
        board[name] = pd.Series(cells)
        if best is not None and {"ds+nn", "mv+nn"} <= set(ok.index):
            value = ok.loc[best, "accuracy_mean"]
            ds, mv = ok.loc["ds+nn", "accuracy_mean"], ok.loc["mv+nn", "accuracy_mean"]
            margin = 0.01 if abs(accs["ds"] - accs["mv"]) > 0.02 else 0.0
            verdicts.append(
                Verdict(
                    f"{name}: best learner >= DS+NN and >= MV+NN + {margin:.2f}",
                    bool(value >= ds and value >= mv + margin),
                    f"best {best} {value:.3f}, DS+NN {ds:.3f}, MV+NN {mv:.3f}",
                )
            )
    board["published Music (annot-mix benchmark)"] = (
        pd.Series({spec: f"{value:.3f}" for spec, value in board_published().items()})
        .reindex(board.index)
        .fillna("")
    )
    board.insert(1, "spec", [f"`{spec}`" for spec in board.index])
    raw = pd.concat(raws, ignore_index=True)
    wall = time.perf_counter() - start
    selection = (
        'no truth for selection: fit(data, valid="crowd") on every dataset'
        if protocol == "no-truth"
        else f"the published benchmark's protocol, {VALID_RECIPE.max_epochs} epochs: LabelMe "
        "selects the epoch on its validation split; the other datasets have none, so every "
        "learner keeps its last epoch (valid=None), as the published benchmark does"
    )
    notes = [
        "datasets: LabelMe and Music as loaded (test splits); usps-sim: "
        f"{USPS_TASKS} USPS pool digits (seeded draw) and digits-sim: 70% of scikit-learn's "
        "digits (stratified, seed 0), each labelled by a simulated crowd of 50 workers, 3 "
        f"labels per task, groups {SIMULATED_GROUPS} (seed 0), tested on USPS's test split "
        "/ the other 30% of digits",
        f"protocol {protocol}: {selection}",
        f"seeds 0..{n_seeds - 1}; recipe: {recipe.describe()}",
        "cells: mean test accuracy ± std (population) over seeds; **best** marks the crowd "
        "learner with the highest mean on each dataset (the gold-label network is a "
        "reference, not a candidate); macro-F1, ECE and fit seconds are in the second table",
        "published Music: the annot-mix benchmark's MLP column (Herde et al., ECAI 2024; "
        "last epoch; their MLP has 256/128 hidden units with batch norm, RAdam lr 1e-2 and "
        "a cosine schedule), quoted, not run",
        *facts,
        "skipped: " + "; ".join(f"{k}: {v}" for k, v in REAL_LEARNING_SKIP.items()),
        # the issue names no seed count here: decided from 2 or more seeds of the recipe
        *_verdict_lines(verdicts if not quick and seeds >= 2 else decided(verdicts, True, 0)),
        *_verdict_lines(
            decided([budget_verdict(len(methods), len(all_splits), wall)], quick, n_seeds)
        ),
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {wall:.1f} s",
        *skipped_notes(raw),
    ]
    return BenchResult(
        raw=raw,
        table=board.reset_index(drop=True),
        notes=notes,
        extra_tables={"macro-F1, ECE and fit seconds": pd.DataFrame(details)},
    )


@register("real-learning", "Every learner with defaults on every dataset with features")
def bench_real_learning(out: Path, quick: bool, seeds: int) -> BenchResult:
    return _board("no-truth", quick, seeds)


@register("leaderboard", "Every learner x LabelMe, Music, USPS and digits crowds (valid split)")
def bench_leaderboard(out: Path, quick: bool, seeds: int) -> BenchResult:
    return _board("valid", quick, seeds)


@register(
    "leaderboard-no-truth",
    "The leaderboard with no truth for selection, one held-out share (crowd_folds=1)",
)
def bench_leaderboard_no_truth(out: Path, quick: bool, seeds: int) -> BenchResult:
    """``real-learning``'s grid on 10 seeds with one held-out share and a refit
    (``crowd_folds=1``): issue 17's one-hour budget holds with it (53 min), not with the
    5-fold default, which makes the grid about three times longer (``real-learning``,
    2 seeds: 32.6 min; this grid with one share, 10 seeds: 53.2 min)."""
    return _board("no-truth", quick, seeds, SHARE_RECIPE)


# ---------------------------------------------------------------------- crowdlayer-init

#: The Crowd Layer with the paper's identity start and with Dawid-Skene's confusions.
INIT_METHODS = (
    Method("Crowd Layer MW, identity start (paper)", "crowdlayer"),
    Method("Crowd Layer MW, Dawid-Skene start", "crowdlayer[init=dawid-skene]"),
)


@register("crowdlayer-init", "The Crowd Layer's start: the paper's identity vs Dawid-Skene")
def bench_crowdlayer_init(out: Path, quick: bool, seeds: int) -> BenchResult:
    """Music and LabelMe, no truth for selection (every learner default otherwise)."""
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = QUICK_RECIPE if quick else RECIPE
    splits = {
        name: s for name, s in real_learning_splits().items() if name in ("music", "labelme")
    }
    raws = run_grid(splits, INIT_METHODS, recipe, n_seeds, jobs=bench_jobs())
    rows, facts = [], []
    for name, raw in raws.items():
        summary = summarise(raw, INIT_METHODS)
        accs = acc_train(splits[name].train)
        facts.append(f"{name}: AccTrain MV {accs['mv']:.3f}, DS {accs['ds']:.3f}")
        for method in INIT_METHODS:
            row = summary.loc[method.spec]
            rows.append(
                {
                    "dataset": name,
                    "learner": method.label,
                    "spec": f"`{method.spec}`",
                    "test accuracy": f"{row['accuracy_mean']:.3f} ± {row['accuracy_std']:.3f}",
                    "ECE": f"{row['ece_mean']:.3f}",
                    "fit s": f"{row['fit_seconds']:.1f}",
                }
            )
    notes = [
        "datasets as loaded (test splits); no truth for selection: fit(data, "
        'valid="crowd"), LabelMe\'s validation split unused',
        f"seeds 0..{n_seeds - 1}; recipe: {recipe.describe()}",
        *facts,
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {time.perf_counter() - start:.1f} s",
    ]
    return BenchResult(
        raw=pd.concat(raws.values(), ignore_index=True), table=pd.DataFrame(rows), notes=notes
    )
