"""Pairwise comparisons: accuracy on crowds simulated on real ages, and speed at scale.

``comparisons``: which comparison model recovers the true order best when the crowd
holds noisy, spamming and reversed workers? The items are the 9150 people of
IMDB-WIKI-SbS with their true ages (``load_imdb_wiki_sbs_scores`` of
:mod:`crowdlearn.datasets.comparisons`; the dataset's own crowd file is not in the
shared copy), the crowds are simulated by :func:`crowdlearn.simulate.simulate_comparisons`
("who is older?") under the parameters in :data:`SIMULATION` and the worker mixes in
:data:`SCENARIOS`. Every crowdlearn strategy and crowd-kit 1.4.2's BradleyTerry and
NoisyBradleyTerry fit the same crowd (in this process); the rows give Spearman's and
Kendall's (tau-b) correlations of the scores with the true ages, the accuracy on
held-out pairs (pairs drawn afresh, not used for fitting, of two people of different
ages: the share the scores order like the ages, equal scores counting 1/2) and the fit
seconds.

``comparisons-speed``: 1M comparisons written to one Parquet file, fitted by crowdlearn's
BT and NoisyBT and crowd-kit's BradleyTerry and NoisyBradleyTerry, each in a fresh
process (:mod:`benchmarks.answer_kinds._comparisons_child`) under a time limit: fit seconds, peak
memory of the fit, Spearman with the true scores and the time ratio; then crowdlearn's
BT on 10M comparisons over 100k items simulated in memory (target: under 60 s).
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, spearmanr

from benchmarks._child import checkout_environment, run_child, thread_environment
from benchmarks._registry import BenchResult, register

NAME = "comparisons"
SPEED = "comparisons-speed"

#: Worker mixes: shares of reliable, noisy, spamming and reversed workers.
SCENARIOS = {
    "clean": (1.0, 0.0, 0.0, 0.0),
    "mixed": (0.6, 0.2, 0.1, 0.1),
    "adversarial": (0.4, 0.2, 0.2, 0.2),
}
#: The simulator's other parameters (``n_comparisons`` = per_item x number of items).
SIMULATION = {
    "per_item": 5,
    "n_workers": 200,
    "reliable_noise": 0.1,
    "noisy_noise": 1.0,
    "near_share": 0.5,
    "window": 50,
}
#: Held-out pairs per crowd (uniform pairs of people of different ages).
HELD_OUT = 20_000
QUICK_ITEMS = 300
CROWDLEARN = ("bt", "noisy-bt", "crowd-bt", "thurstone")
#: crowd-kit's models as a user would call them (BradleyTerry needs ``n_iter``).
CROWDKIT = {
    "crowd-kit BradleyTerry(n_iter=100)": ("BradleyTerry", {"n_iter": 100}),
    "crowd-kit NoisyBradleyTerry()": ("NoisyBradleyTerry", {}),
}

#: The speed runs: comparisons and items of the file, per-fit time limit (seconds).
SPEED_FULL = {"n_comparisons": 1_000_000, "n_items": 10_000, "timeout": 600.0}
SPEED_QUICK = {"n_comparisons": 4_000, "n_items": 400, "timeout": 120.0}
BIG_FULL = (10_000_000, 100_000)
BIG_QUICK = (100_000, 10_000)
SPEED_METHODS = (
    ("crowdlearn", "bt", "crowdlearn BradleyTerry (bt)"),
    ("crowd-kit", "bt", "crowd-kit BradleyTerry(n_iter=100)"),
    ("crowd-kit", "bt-tol0", "crowd-kit BradleyTerry(n_iter=100, tol=0)"),
    ("crowdlearn", "noisy-bt", "crowdlearn NoisyBT (noisy-bt)"),
    ("crowd-kit", "noisy-bt", "crowd-kit NoisyBradleyTerry()"),
)
CHILD_MODULE = "benchmarks.answer_kinds._comparisons_child"


# ------------------------------------------------------------------ accuracy


def held_out_accuracy(
    scores: np.ndarray, truth: np.ndarray, left: np.ndarray, right: np.ndarray
) -> float:
    """Share of the pairs that ``scores`` order like ``truth`` (equal scores: 1/2)."""
    predicted = np.sign(scores[left] - scores[right])
    actual = np.sign(truth[left] - truth[right])
    return float(np.mean(np.where(predicted == 0, 0.5, predicted == actual)))


def held_out_pairs(
    truth: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uniform pairs of items whose true scores differ."""
    left = rng.integers(0, len(truth), 3 * n)
    right = rng.integers(0, len(truth), 3 * n)
    keep = np.flatnonzero(truth[left] != truth[right])[:n]
    return left[keep], right[keep]


def fit_crowdkit(label: str, data: Any) -> tuple[np.ndarray, float]:
    import crowdkit.aggregation

    name, params = CROWDKIT[label]
    model = getattr(crowdkit.aggregation, name)(**params)
    frame = data.to_frame()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = model.fit_predict(frame)
    seconds = time.perf_counter() - start
    # crowd-kit returns scores in (0, 1) by item id; items it never saw are absent
    values = scores.reindex(pd.Index(data.item_ids)).to_numpy(dtype=float)
    return np.nan_to_num(values, nan=np.nanmin(values)), seconds


def accuracy_rows(ages: pd.Series, scenario: str, seed: int) -> list[dict[str, Any]]:
    from crowdlearn.aggregation.comparisons import make_aggregator
    from crowdlearn.simulate import simulate_comparisons

    params = {k: v for k, v in SIMULATION.items() if k != "per_item"}
    data = simulate_comparisons(
        ages,
        SIMULATION["per_item"] * len(ages),
        worker_mix=SCENARIOS[scenario],
        random_state=seed,
        **params,
    )
    truth = np.asarray(data.truth)
    left, right = held_out_pairs(truth, HELD_OUT, np.random.default_rng(10_000 + seed))
    fits: list[tuple[str, np.ndarray, float]] = []
    for name in CROWDLEARN:
        model = make_aggregator(name)
        start = time.perf_counter()
        model.fit(data)
        fits.append((f"crowdlearn {name}", model.scores_, time.perf_counter() - start))
    for label in CROWDKIT:
        scores, seconds = fit_crowdkit(label, data)
        fits.append((label, scores, seconds))
    return [
        {
            "scenario": scenario,
            "seed": seed,
            "method": method,
            "n_items": data.n_items,
            "n_comparisons": data.n_annotations,
            "spearman": float(spearmanr(scores, truth)[0]),
            "kendall": float(kendalltau(scores, truth)[0]),
            "held_out_accuracy": held_out_accuracy(scores, truth, left, right),
            "fit_seconds": seconds,
        }
        for method, scores, seconds in fits
    ]


@register(NAME, "comparison models on crowds simulated on the IMDB-WIKI-SbS true ages")
def comparisons_benchmark(out_dir: Path, quick: bool, seeds: int) -> BenchResult:
    from crowdlearn.datasets.comparisons import load_imdb_wiki_sbs_scores

    ages = load_imdb_wiki_sbs_scores()
    if quick:
        ages = ages.iloc[np.random.default_rng(0).choice(len(ages), QUICK_ITEMS, replace=False)]
    rows = [
        row
        for scenario in SCENARIOS
        for seed in range(seeds)
        for row in accuracy_rows(ages, scenario, seed)
    ]
    raw = pd.DataFrame(rows)
    metrics = ["spearman", "kendall", "held_out_accuracy", "fit_seconds"]
    table = raw.groupby(["scenario", "method"], sort=False)[metrics].mean().reset_index()
    table.columns = [
        "scenario",
        "method",
        "Spearman",
        "Kendall",
        "held-out pair accuracy",
        "fit s",
    ]
    best = table.loc[table.groupby("scenario", sort=False)["Spearman"].idxmax()]
    summary = (
        "Highest Spearman per scenario: "
        + "; ".join(f"{r.scenario}: {r.method} ({r.Spearman:.3f})" for r in best.itertuples())
        + "."
    )
    sim = ", ".join(f"{k}={v}" for k, v in SIMULATION.items())
    notes = [
        f"items: the {len(ages)} people of IMDB-WIKI-SbS (data/gt.csv; true ages 10-70 years, "
        "61 distinct values, so ties in the truth cap the correlations below 1)"
        + (f", a random {QUICK_ITEMS} of them (quick run)" if quick else ""),
        f"crowds: simulate_comparisons(ages, n_comparisons=per_item x items, {sim}, "
        "worker_mix=SCENARIOS[scenario], random_state=seed); noises are logistic scales in "
        "standard deviations of the ages (17.6 years); near_share of the pairs are within "
        "`window` ranks in true age, the rest uniform",
        "worker mixes (reliable, noisy, spamming, reversed): "
        + "; ".join(f"{k} {v}" for k, v in SCENARIOS.items()),
        f"held-out: {HELD_OUT} fresh uniform pairs of people of different ages per crowd; "
        f"values are means over seeds 0..{seeds - 1}",
        "crowd-kit 1.4.2 in this process on the same crowd (data.to_frame()); its "
        "BradleyTerry stops after its second iteration whatever n_iter (its tolerance "
        "check compares p with an alias of itself), so its numbers are those of two MM "
        "steps from equal strengths; its NoisyBradleyTerry starts from random parameters "
        "(random_state=0) and computes its gradient in a Python loop over comparisons",
        "crowdlearn strategies at their defaults (crowd-bt is DEFAULT_STRATEGY)",
    ]
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary)


# ------------------------------------------------------------------ speed


def write_speed_file(path: Path, n_comparisons: int, n_items: int) -> None:
    """Simulated comparisons (standard normal true scores, default worker mix, 1000
    workers, seed 0) in crowd-kit's layout with integer ids, and the true scores beside
    it (``PATH.truth.npy``, indexed by item id)."""
    from crowdlearn.simulate import simulate_comparisons

    scores = np.random.default_rng(0).normal(size=n_items)
    data = simulate_comparisons(scores, n_comparisons, 1000, random_state=0)
    frame = pd.DataFrame(
        {
            "worker": np.asarray(data.worker, dtype=np.int64),
            "left": np.asarray(data.left, dtype=np.int64),
            "right": np.asarray(data.right, dtype=np.int64),
            "label": np.asarray(data.winner, dtype=np.int64),
        }
    )
    frame.to_parquet(path)
    np.save(str(path) + ".truth.npy", scores)


#: Files (hence Dask partitions) the big file is split into for the Dask engine.
DASK_PARTITIONS = 8


def split_parquet(path: Path, n_parts: int) -> Path:
    """The rows of ``path`` as a folder of ``n_parts`` Parquet files (one Dask
    partition each), with the true scores beside it (``FOLDER.truth.npy``)."""
    frame = pd.read_parquet(path)
    folder = path.with_name(path.stem + "-parts")
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
        frame.iloc[rows].to_parquet(folder / f"part-{i:02d}.parquet", index=False)
    np.save(str(folder) + ".truth.npy", np.load(str(path) + ".truth.npy"))
    return folder


def dask_rows(big: tuple[int, int], timeout: float) -> list[dict[str, Any]]:
    """Bradley-Terry on the same Parquet file in memory and on Dask, with the largest
    difference between their scores."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.parquet"
        write_speed_file(path, big[0], big[1])
        parts = split_parquet(path, DASK_PARTITIONS)
        scores = {}
        for library, run, source in (
            ("crowdlearn", "file, memory", path),
            ("crowdlearn-dask", "file, dask", parts),
        ):
            target = Path(folder) / f"{library}.npy"
            report = child(
                ["--library", library, "--method", "bt", "--parquet", str(source),
                 "--save-scores", str(target)],
                timeout,
            )  # fmt: skip
            if report.get("status") == "ok":
                scores[library] = np.load(target)
            rows.append(
                {"run": run, "library": library, "method": f"crowdlearn BradleyTerry ({run})",
                 "timeout_s": timeout, **report}
            )  # fmt: skip
        if len(scores) == 2:
            gap = float(np.nanmax(np.abs(scores["crowdlearn"] - scores["crowdlearn-dask"])))
            for row in rows:
                row["max_score_diff"] = gap
    return rows


DASK = "comparisons-dask"


@register(DASK, "Bradley-Terry on 10M comparisons in memory and on Dask, same file")
def comparisons_dask(out_dir: Path, quick: bool, seeds: int) -> BenchResult:
    big = BIG_QUICK if quick else BIG_FULL
    timeout = (SPEED_QUICK if quick else SPEED_FULL)["timeout"]
    raw = pd.DataFrame(dask_rows(big, timeout))
    table = speed_table(raw).drop(columns=["crowd-kit / crowdlearn time"])
    notes = [
        f"{big[0]:,} comparisons over {big[1]:,} items (standard normal true scores, "
        "simulate_comparisons with the default worker mix, 1000 workers, seed 0) in one "
        "Parquet file with integer ids",
        "memory: a fresh process reads the file into Comparisons (not timed) and fits "
        "crowdlearn's BT; dask: a fresh process starts a LocalCluster of 2 single-thread "
        "worker processes (8 GB limit each) and fits crowdlearn.distributed.comparisons."
        f"BradleyTerry on the same rows split into {DASK_PARTITIONS} Parquet files (one "
        "partition each), read on the workers (timed: reading, coding, fit)",
        "max |score diff|: the largest difference between the two engines' scores; peak "
        "memory is measured for the in-memory fit only",
    ]
    return BenchResult(raw=raw, table=table, notes=notes)


def quick_methods() -> tuple[tuple[str, str, str], ...]:
    """The quick run's fits: all but crowd-kit's tol=0 variant (a child costs a second
    of imports)."""
    return tuple(m for m in SPEED_METHODS if m[1] != "bt-tol0")


def child(arguments: list[str], timeout: float) -> dict[str, Any]:
    env = checkout_environment(thread_environment())
    return run_child([sys.executable, "-m", CHILD_MODULE, *arguments], timeout, env=env)


@register(SPEED, "BT and NoisyBT at 1M comparisons against crowd-kit; BT at 10M")
def comparisons_speed(out_dir: Path, quick: bool, seeds: int) -> BenchResult:
    setting = SPEED_QUICK if quick else SPEED_FULL
    big = BIG_QUICK if quick else BIG_FULL
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "comparisons.parquet"
        write_speed_file(path, setting["n_comparisons"], setting["n_items"])
        for library, method, label in quick_methods() if quick else SPEED_METHODS:
            report = child(
                ["--library", library, "--method", method, "--parquet", str(path)],
                setting["timeout"],
            )
            rows.append(
                {
                    "run": "file",
                    "library": library,
                    "method": label,
                    "timeout_s": setting["timeout"],
                    **report,
                }
            )
    report = child(
        ["--library", "crowdlearn", "--method", "bt", "--simulate", f"{big[0]},{big[1]}"],
        setting["timeout"],
    )
    rows.append(
        {
            "run": "in memory",
            "library": "crowdlearn",
            "method": "crowdlearn BradleyTerry (bt)",
            "timeout_s": setting["timeout"],
            **report,
        }
    )
    raw = pd.DataFrame(rows)
    table = speed_table(raw)
    n_file = f"{setting['n_comparisons']:,} comparisons over {setting['n_items']:,} items"
    notes = [
        f"file: {n_file} (standard normal true scores, simulate_comparisons with the "
        "default worker mix (0.6, 0.2, 0.1, 0.1), 1000 workers, seed 0) in one Parquet "
        "file; each fit in a fresh process reading it (crowd-kit: the DataFrame; "
        "crowdlearn: Comparisons.from_frame, outside the timed fit), one BLAS thread",
        f"in memory: {big[0]:,} comparisons over {big[1]:,} items simulated in the child "
        "the same way, then crowdlearn's BT fitted (target: under 60 s on this machine)",
        "peak = VmHWM after the fit minus VmRSS before it; ratio = crowd-kit seconds / "
        "crowdlearn seconds for the same model; a run past its time limit is reported as "
        "such, and nothing is extrapolated from it",
        "crowd-kit's BradleyTerry(n_iter=100) stops after two iterations (an aliasing bug "
        "in its tolerance check), so it is also run with tol=0, which makes it run its 100 "
        "MM iterations; its MM works on a dense items x items matrix",
        "crowd-kit's NoisyBradleyTerry computes its gradient in a Python loop over the "
        "comparisons",
    ]
    ours = raw[(raw["library"] == "crowdlearn") & (raw["run"] == "file")]
    summary = ""
    if "fit_seconds" in raw and ours["status"].eq("ok").all():
        summary = (
            "crowdlearn at "
            + n_file
            + ": "
            + ", ".join(f"{r.method} {r.fit_seconds:.2f} s" for r in ours.itertuples())
            + "."
        )
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary)


def speed_table(raw: pd.DataFrame) -> pd.DataFrame:
    """One line per run: seconds (or why none), peak MiB, Spearman, time ratio."""
    ours = {
        "bt": _seconds(raw, "crowdlearn BradleyTerry (bt)", "file"),
        "noisy-bt": _seconds(raw, "crowdlearn NoisyBT (noisy-bt)", "file"),
    }
    lines = []
    for row in raw.to_dict("records"):
        ok = row.get("status") == "ok"
        family = "noisy-bt" if "Noisy" in row["method"] else "bt"
        ratio = ""
        if row["library"] == "crowd-kit" and ours[family]:
            if ok:
                ratio = f"{row['fit_seconds'] / ours[family]:.1f}"
            elif row.get("status") == "timeout":
                ratio = f"> {row['timeout_s'] / ours[family]:.0f}"
        lines.append(
            {
                "run": row["run"],
                "method": row["method"],
                "comparisons": f"{int(row['n_comparisons']):,}" if ok else "",
                "fit s": f"{row['fit_seconds']:.2f}"
                if ok
                else f"{row.get('status')} ({row['timeout_s']:g} s limit)"
                if row.get("status") == "timeout"
                else str(row.get("status")),
                "peak MiB": f"{row['peak_fit_bytes'] / 2**20:.0f}"
                if ok and pd.notna(row.get("peak_fit_bytes"))
                else "",
                "Spearman": f"{row['spearman']:.4f}" if ok else "",
                "crowd-kit / crowdlearn time": ratio,
                "max |score diff|": f"{row['max_score_diff']:.1e}"
                if pd.notna(row.get("max_score_diff", np.nan))
                else "",
            }
        )
    return pd.DataFrame(lines)


def _seconds(raw: pd.DataFrame, method: str, run: str) -> float | None:
    match = raw[(raw["method"] == method) & (raw["run"] == run)]
    if match.empty or match.iloc[0].get("status") != "ok":
        return None
    return float(match.iloc[0]["fit_seconds"])


def _failure(row: dict[str, Any]) -> str:
    status = str(row.get("status"))
    if status == "timeout":
        return f"timeout ({row['timeout_s']:g} s limit)"
    return status
