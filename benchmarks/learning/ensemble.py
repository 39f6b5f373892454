"""``python -m benchmarks ensemble``: the ensemble learner against its members, no truth used.

Music and LabelMe as loaded, every learner with its defaults and ``valid="crowd"`` (the
no-truth protocol of ``leaderboard-no-truth``), beside:

* each member alone (same seeds: an ensemble's members are these very fits);
* the ensemble of the four best learners **on Music** in ``leaderboard-no-truth``
  (:data:`MUSIC_PICKED`). Those members were chosen by Music's test accuracy, so its
  Music number is in-sample; the default members were chosen on all four datasets of
  that leaderboard, Music included. The pair shows how much of an ensemble's Music
  score comes from choosing its members on Music itself;
* the control ``ensemble[members=dl-em,n_seeds=4]``: four DL-EM fits with other seeds,
  as many fits as an ensemble of four, with no second method. It separates what the
  average gains from reducing one method's seed variance from what it gains by mixing
  noise models.

Two more benchmarks ask whether the crowd could make those choices itself, using the
truth-free selection score (the held-out tasks' Dawid-Skene agreement):
``member-selection`` ranks 14 learners by it and averages the top k, and
``recipe-selection`` keeps, per learner and seed, whichever of our MLP and the
published one scores higher.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from benchmarks._learning import (
    Method,
    Recipe,
    bench_jobs,
    bench_threads,
    fit_method,
    map_jobs,
    run_grid,
    summarise,
)
from benchmarks._registry import BenchResult, register
from benchmarks._strategies import mean_std
from benchmarks.learning.no_truth import (
    ECE_TARGET,
    MUSIC_BEST_TARGET,
    QUICK_SEEDS,
    RECIPE,
    _verdict_lines,
    acc_train,
    decided,
    real_learning_splits,
)
from benchmarks.speed.aggregation import Verdict
from crowdlearn.learning.ensemble import DEFAULT_MEMBERS
from crowdlearn.metrics import accuracy

#: The four learners with the best mean Music accuracy in ``leaderboard-no-truth``
#: (chosen on Music's test split: an in-sample choice for Music, see the module doc).
MUSIC_PICKED = ("dl-em", "max-mig", "madl", "annot-mix")
MUSIC_PICKED_SPEC = f"ensemble[members={'/'.join(MUSIC_PICKED)}]"
#: DS+NN, every member alone, both ensembles and the seeds-only control.
ENSEMBLE_METHODS = (
    Method("DS+NN", "ds+nn"),
    *(
        Method(spec, spec, em=spec == "dl-em")
        for spec in dict.fromkeys((*DEFAULT_MEMBERS, *MUSIC_PICKED))
    ),
    Method("ensemble, default members", "ensemble"),
    Method("ensemble, the four best on Music (picked on Music)", MUSIC_PICKED_SPEC),
    Method("control: DL-EM x 4 seeds", "ensemble[members=dl-em,n_seeds=4]"),
)
#: The ensembles the verdicts judge, with their members and what their Music target
#: line must say about how the members were chosen.
JUDGED = (
    ("ensemble", DEFAULT_MEMBERS, "members chosen on four datasets, Music one of them"),
    (MUSIC_PICKED_SPEC, MUSIC_PICKED, "in-sample: members chosen on Music's test split"),
)
#: --quick: two members, 2 epochs (a smoke test of the protocol, not a result).
QUICK_MEMBERS = ("dl-em", "ds+nn")
QUICK_METHODS = (
    Method("DS+NN", "ds+nn"),
    Method("dl-em", "dl-em", em=True),
    Method("ensemble", f"ensemble[members={'/'.join(QUICK_MEMBERS)}]"),
)
QUICK_RECIPE = Recipe(max_epochs=2)
DATASETS = ("music", "labelme")


def ensemble_verdicts(
    summaries: dict[str, pd.DataFrame],
    spec: str = "ensemble",
    members: Sequence[str] = DEFAULT_MEMBERS,
    caveat: str = "",
) -> list[Verdict]:
    """Issue 15's Music best-learner target, and whether the ensemble ``spec`` beats
    its best member (of ``members``) and stays calibrated, from each dataset's
    summary. ``caveat`` is appended to the Music target's line (how the members were
    chosen, so that an in-sample pass is not read as the issue's)."""
    verdicts = []
    music = summaries.get("music")
    if music is not None and spec in music.index:
        acc = float(music.loc[spec, "accuracy_mean"])
        verdicts.append(
            Verdict(
                f"music: `{spec}` >= {MUSIC_BEST_TARGET} (issue 15's best learner"
                + (f"; {caveat})" if caveat else ")"),
                bool(acc >= MUSIC_BEST_TARGET),
                f"{acc:.3f}",
            )
        )
    for name, summary in summaries.items():
        present = [member for member in members if member in summary.index]
        if spec not in summary.index or not present:
            continue
        best = max(present, key=lambda member: float(summary.loc[member, "accuracy_mean"]))
        acc = float(summary.loc[spec, "accuracy_mean"])
        best_acc = float(summary.loc[best, "accuracy_mean"])
        verdicts.append(
            Verdict(
                f"{name}: `{spec}` >= its best member",
                bool(acc >= best_acc),
                f"{acc:.3f} against {best} {best_acc:.3f}",
            )
        )
        ece = float(summary.loc[spec, "ece_mean"])
        verdicts.append(
            Verdict(
                f"{name}: `{spec}`'s ECE <= {ECE_TARGET}",
                bool(ece <= ECE_TARGET),
                f"{ece:.3f}",
            )
        )
    return verdicts


@register("ensemble", "The ensemble learner against its members, no truth (Music, LabelMe)")
def bench_ensemble(out: Path, quick: bool, seeds: int) -> BenchResult:
    """Music and LabelMe, no truth for selection, every learner at its defaults."""
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = QUICK_RECIPE if quick else RECIPE
    methods = QUICK_METHODS if quick else ENSEMBLE_METHODS
    splits = {name: s for name, s in real_learning_splits().items() if name in DATASETS}
    raws = run_grid(
        splits,
        methods,
        recipe,
        n_seeds,
        jobs=bench_jobs(),
        first=("ensemble", MUSIC_PICKED_SPEC, "doctornet-w", "annot-mix"),
        desc="fits",
    )
    rows, facts, summaries = [], [], {}
    for name, raw in raws.items():
        summary = summarise(raw, methods)
        summaries[name] = summary
        accs = acc_train(splits[name].train)
        facts.append(f"{name}: AccTrain MV {accs['mv']:.3f}, DS {accs['ds']:.3f}")
        for method in methods:
            row = summary.loc[method.spec]
            ok = str(row["status"]) == "ok"
            rows.append(
                {
                    "dataset": name,
                    "learner": method.label,
                    "spec": f"`{method.spec}`",
                    "test accuracy": (
                        f"{row['accuracy_mean']:.3f} ± {row['accuracy_std']:.3f}"
                        if ok
                        else str(row["status"])
                    ),
                    "macro-F1": f"{row['macro_f1_mean']:.3f}" if ok else "",
                    "ECE": f"{row['ece_mean']:.3f}" if ok else "",
                    "fit s": f"{row['fit_seconds']:.1f}" if ok else "",
                }
            )
    verdicts = (
        ensemble_verdicts(summaries, QUICK_METHODS[-1].spec, QUICK_MEMBERS)
        if quick
        else [v for judged in JUDGED for v in ensemble_verdicts(summaries, *judged)]
    )
    notes = [
        "Music and LabelMe as loaded (test splits); no truth for selection: every fit is "
        'fit(data, valid="crowd"), LabelMe\'s validation split unused',
        f"seeds 0..{n_seeds - 1}"
        + (" (--quick: 2 seeds, two members, 2 epochs)" if quick else "")
        + f"; recipe: {recipe.describe()}",
        f"the default ensemble: members {', '.join(DEFAULT_MEMBERS)} (the best mean rank "
        "over the four datasets of leaderboard-no-truth); the Music-picked one: "
        f"{', '.join(MUSIC_PICKED)} (the best four on Music's test split, so its Music "
        "score is in-sample); each member has the ensemble's seed and selects, refits "
        "and calibrates on its own; an ensemble predicts their mean probabilities; its "
        "fit s is the sum of its members'",
        *facts,
        *_verdict_lines(decided(verdicts, quick, n_seeds)),
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {time.perf_counter() - start:.1f} s",
    ]
    return BenchResult(
        raw=pd.concat(raws.values(), ignore_index=True), table=pd.DataFrame(rows), notes=notes
    )


# ---------------------------------------------------------------------- member-selection

#: Learners whose truth-free selection scores are compared (the same criterion for all:
#: the held-out tasks' Dawid-Skene agreement, ``crowd_criterion="agreement"``).
CANDIDATES = (
    "dl-em",
    "max-mig",
    "madl",
    "annot-mix",
    "ds+nn",
    "glad+nn",
    "mv+nn",
    "conal",
    "doctornet-w",
    "crowdlayer",
    "crowdlayer[init=dawid-skene]",
    "geocrowdnet-w",
    "trace-reg",
    "union-net",
)
QUICK_CANDIDATES = ("dl-em", "ds+nn", "mv+nn")
#: Ensembles of the k candidates with the best selection scores.
TOP_K = (1, 2, 4, 6)


def fit_scored(spec: str, recipe: Recipe, seed: int, splits: Any) -> dict[str, Any]:
    """One candidate's fit: its truth-free selection score, test accuracy and test
    probabilities (the test split's only use is after the fit)."""
    method = Method(spec, spec, em=spec == "dl-em")
    learner, seconds = fit_method(method, recipe, seed, splits.train, splits.valid)
    X, y = splits.test
    proba = learner.predict_proba(X)
    return {
        "spec": spec,
        "seed": seed,
        "score": float(learner.selection_score_),
        "accuracy": float(accuracy(y, proba)),
        "fit_seconds": seconds,
        "proba": proba,
    }


def scored_fits(
    specs: Sequence[str], recipe: Recipe, n_seeds: int, splits: dict[str, Any]
) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """:func:`fit_scored` for every (dataset, seed, spec) in one pool, the longest
    learners first; returns each dataset's fits and the raw rows (without the
    probabilities)."""
    ordered = sorted(specs, key=lambda s: s.split("[")[0] not in ("annot-mix", "doctornet-w"))
    keys = [(name, seed, spec) for name in splits for seed in range(n_seeds) for spec in ordered]
    calls = [(spec, recipe, seed, splits[name]) for name, seed, spec in keys]
    results = map_jobs(fit_scored, calls, bench_jobs(), desc="fits")
    fits: dict[str, list[dict[str, Any]]] = {name: [] for name in splits}
    for (name, _, _), result in zip(keys, results, strict=True):
        fits[name].append(result)
    raw = [
        {"dataset": name, **{k: v for k, v in fit.items() if k != "proba"}}
        for name in splits
        for fit in fits[name]
    ]
    return fits, raw


def selection_rows(fits: list[dict[str, Any]], y: np.ndarray) -> dict[str, list[float]]:
    """Per seed, what choosing learners by their selection score gives: the rank
    correlation of score and accuracy, the accuracy of the top-k ensembles, where the
    most accurate candidate ranks, and the default ensemble from the same fits."""
    out: dict[str, list[float]] = {}
    for seed in sorted({fit["seed"] for fit in fits}):
        runs = sorted((f for f in fits if f["seed"] == seed), key=lambda f: -f["score"])
        scores = [f["score"] for f in runs]
        accs = [f["accuracy"] for f in runs]
        rho = spearmanr(scores, accs).statistic if len(runs) > 2 else float("nan")
        out.setdefault("Spearman(selection score, test accuracy)", []).append(float(rho))
        best = int(np.argmax(accs))
        out.setdefault("score rank of the most accurate candidate", []).append(best + 1.0)
        for k in TOP_K:
            if k <= len(runs):
                mean = np.mean([f["proba"] for f in runs[:k]], axis=0)
                key = f"ensemble of the top {k} by score: accuracy"
                out.setdefault(key, []).append(float(np.mean(mean.argmax(axis=1) == y)))
        by_spec = {f["spec"]: f for f in runs}
        if all(spec in by_spec for spec in DEFAULT_MEMBERS):
            mean = np.mean([by_spec[spec]["proba"] for spec in DEFAULT_MEMBERS], axis=0)
            key = "default ensemble (same fits): accuracy"
            out.setdefault(key, []).append(float(np.mean(mean.argmax(axis=1) == y)))
        out.setdefault("most accurate candidate (chosen on test; reference)", []).append(max(accs))
    return out


@register(
    "member-selection",
    "Can the truth-free selection score choose an ensemble's members? (Music, LabelMe)",
)
def bench_member_selection(out: Path, quick: bool, seeds: int) -> BenchResult:
    """Every candidate fitted with crowd validation; its selection score against its
    test accuracy, and ensembles of the best-scored candidates."""
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = QUICK_RECIPE if quick else RECIPE
    candidates = QUICK_CANDIDATES if quick else CANDIDATES
    splits = {name: s for name, s in real_learning_splits().items() if name in DATASETS}
    fits, raw = scored_fits(candidates, recipe, n_seeds, splits)
    rows = [
        {"dataset": name, "measure": what, "mean over seeds": mean_std(values)}
        for name in splits
        for what, values in selection_rows(fits[name], splits[name].test[1]).items()
    ]
    notes = [
        "Music and LabelMe as loaded; every candidate at its defaults with "
        'fit(data, valid="crowd"): the selection score is its held-out tasks\' Dawid-Skene '
        "agreement (the same criterion for every learner, on the same held-out tasks for a "
        "seed)",
        f"candidates: {', '.join(candidates)}",
        f"seeds 0..{n_seeds - 1}"
        + (" (--quick: 2 seeds, three candidates, 2 epochs)" if quick else "")
        + f"; recipe: {recipe.describe()}",
        f"default ensemble: {', '.join(DEFAULT_MEMBERS)}, averaged from the same fits",
        "score rank 1 = the best selection score; the last row reads the test split to "
        "choose and is a reference, not a method",
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {time.perf_counter() - start:.1f} s",
    ]
    return BenchResult(raw=pd.DataFrame(raw), table=pd.DataFrame(rows), notes=notes)


# ---------------------------------------------------------------------- recipe-selection

#: The annot-mix benchmark's MLP recipe (``learning_defaults.RECIPES``, without its fixed
#: 50 epochs: here the epoch is chosen on the crowd like any default fit), as spec text.
PUBLISHED_MLP = "hidden=256/128,batch_norm=true,optimizer=radam,lr=0.01,lr_schedule=cosine"
RECIPE_LEARNERS = ("dl-em", "crowdlayer", "conal", "ds+nn", "max-mig")
QUICK_RECIPE_LEARNERS = ("dl-em", "ds+nn")


def published_spec(spec: str) -> str:
    """``spec`` with the published MLP recipe in its brackets."""
    return f"{spec}[{PUBLISHED_MLP}]"


def recipe_rows(fits: list[dict[str, Any]], learners: Sequence[str]) -> list[dict[str, Any]]:
    """Per learner: test accuracy with our MLP, with the published one, and with the
    one whose truth-free selection score is higher (seed by seed), and how often the
    score chose the published MLP."""
    rows = []
    for spec in learners:
        ours = {f["seed"]: f for f in fits if f["spec"] == spec}
        theirs = {f["seed"]: f for f in fits if f["spec"] == published_spec(spec)}
        seeds = sorted(set(ours) & set(theirs))
        if not seeds:
            continue
        picked = [theirs[s] if theirs[s]["score"] > ours[s]["score"] else ours[s] for s in seeds]
        better = [max(ours[s]["accuracy"], theirs[s]["accuracy"]) for s in seeds]
        n_published = sum(f is theirs[s] for f, s in zip(picked, seeds, strict=True))
        rows.append(
            {
                "learner": f"`{spec}`",
                "our MLP": mean_std([ours[s]["accuracy"] for s in seeds]),
                "published MLP": mean_std([theirs[s]["accuracy"] for s in seeds]),
                "chosen by the score": mean_std([f["accuracy"] for f in picked]),
                "published chosen": f"{n_published}/{len(seeds)}",
                "better of the two (test; reference)": mean_std(better),
            }
        )
    return rows


@register(
    "recipe-selection",
    "Can the truth-free selection score choose the MLP recipe per crowd? (Music, LabelMe)",
)
def bench_recipe_selection(out: Path, quick: bool, seeds: int) -> BenchResult:
    """Each learner with our MLP and with the published one, both with crowd
    validation; the recipe with the higher selection score is what ``search`` over the
    two would keep."""
    start = time.perf_counter()
    n_seeds = QUICK_SEEDS if quick else seeds
    recipe = QUICK_RECIPE if quick else RECIPE
    learners = QUICK_RECIPE_LEARNERS if quick else RECIPE_LEARNERS
    specs = [s for spec in learners for s in (spec, published_spec(spec))]
    splits = {name: s for name, s in real_learning_splits().items() if name in DATASETS}
    fits, raw = scored_fits(specs, recipe, n_seeds, splits)
    rows = [
        {"dataset": name, **row} for name in splits for row in recipe_rows(fits[name], learners)
    ]
    notes = [
        "Music and LabelMe as loaded; every fit with crowd validation "
        '(fit(data, valid="crowd"), selection score: the held-out tasks\' Dawid-Skene '
        "agreement, the same held-out tasks for both recipes of a seed)",
        f"our MLP: the defaults ({recipe.describe()}); published MLP: the same with "
        f"{PUBLISHED_MLP} (the annot-mix benchmark's Music recipe, epoch chosen on the "
        "crowd instead of its fixed 50)",
        f"seeds 0..{n_seeds - 1}"
        + (" (--quick: 2 seeds, two learners, 2 epochs)" if quick else ""),
        "chosen by the score: per seed, the recipe with the higher selection score, as "
        "`search` over the two would keep; the last column reads the test split to choose "
        "and is a reference, not a method",
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {time.perf_counter() - start:.1f} s",
    ]
    return BenchResult(raw=pd.DataFrame(raw), table=pd.DataFrame(rows), notes=notes)
