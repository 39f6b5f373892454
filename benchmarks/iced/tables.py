"""The tables, verdicts and figures of benchmark ``iced`` (:mod:`benchmarks.iced.benchmark`),
computed from its raw rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from benchmarks._strategies import mean_std
from benchmarks.iced.protocol import (
    EQUAL_STEPS_EXPERIMENT,
    FIG2,
    MECHANISM,
    MECHANISM_BASE,
    METHODS,
    PAPER_USPS_SYN,
    WARMUPS,
    variant_label,
)

#: The Fig. 2 rows: label, column of truth-inference accuracy, column of minority recall.
INFERENCE_STAGES = (
    ("MV", "mv_accuracy", None),
    ("DS-orig", "ds_before", "recall_before"),
    ("DS-first", "ds_first", "recall_first"),
    ("DS-final", "ds_final", "recall_final"),
)


def _summary_cell(values: pd.Series) -> str:
    values = values.dropna().astype(float)
    return "" if values.empty else mean_std(values.to_list())


def _count_cell(values: pd.Series) -> str:
    values = values.dropna().astype(float)
    if values.empty:
        return ""
    return f"{values.mean():.0f}" + (f" ± {values.std(ddof=0):.0f}" if len(values) > 1 else "")


def results_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Table 2, Fig. 2 and Table 3 rows per data set: mean ± std over seeds."""
    rows = []
    for dataset in raw["dataset"].unique():
        runs = raw[raw["dataset"] == dataset]
        for experiment, names in (
            ("Table 2", METHODS),
            ("Table 3", tuple(WARMUPS)),
            (EQUAL_STEPS_EXPERIMENT, tuple(WARMUPS)),
        ):
            for method in names:
                mine = runs[runs["experiment"] == experiment]
                done = mine[(mine["method"] == method) & (mine["status"] == "ok")]
                if method not in set(mine["method"]):
                    continue
                paper = PAPER_USPS_SYN.get(method) if dataset == "USPS-Syn" else None
                rows.append(
                    {
                        "experiment": experiment,
                        "dataset": _shown(dataset),
                        "method": method,
                        "runs": len(done),
                        "test accuracy": _summary_cell(done["accuracy"]),
                        "test F1 (minority)": _summary_cell(done["f1_minority"]),
                        "train label accuracy": _summary_cell(done["train_label_accuracy"]),
                        "train minority recall": _summary_cell(done["train_minority_recall"]),
                        "warm-up samples": _count_cell(done["warmup_samples"])
                        if experiment != "Table 2"
                        else "",
                        "warm-up MV minority": _count_cell(done["warmup_minority"])
                        if experiment != "Table 2"
                        else "",
                        "Adam steps": _count_cell(done["adam_steps"])
                        if experiment != "Table 2"
                        else "",
                        "fit s": f"{done['fit_seconds'].mean():.2f}" if len(done) else "",
                        "paper acc / F1 (USPS-Syn)": ""
                        if paper is None
                        else f"{paper[0]:.4f} / {paper[1]:.4f}",
                    }
                )
            if experiment == "Table 2":
                rows.extend(_inference_rows(dataset, runs))
    return pd.DataFrame(rows)


#: LabelMe-bin is not in the paper: its name in the tables says so.
EXTENSIONS = ("LabelMe-bin",)


def _shown(dataset: str) -> str:
    return f"{dataset} (extension, not in the paper)" if dataset in EXTENSIONS else dataset


def mechanism_table(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per :data:`MECHANISM` variant: truth inference on the real training tasks
    (MV; D&S before synthesis, after the first and after the last), the share of the
    synthetic samples inferred as minority, and the classifier's test scores."""
    runs = raw[(raw["experiment"] == "Mechanism") & (raw["status"] == "ok")]
    rows = []
    for experiment, dataset, variant, changes in MECHANISM:
        config = {**MECHANISM_BASE[dataset], **changes}
        done = runs[(runs["dataset"] == dataset) & (runs["variant"] == variant_label(config))]
        if done.empty:
            continue
        rows.append(
            {
                "experiment": experiment,
                "dataset": dataset,
                "variant": variant,
                "runs": len(done),
                "MV acc": _summary_cell(done["mv_accuracy"]),
                "D&S-orig acc": _summary_cell(done["ds_before"]),
                "D&S-first acc": _summary_cell(done["ds_first"]),
                "D&S-final acc": _summary_cell(done["ds_final"]),
                "D&S-orig min. recall": _summary_cell(done["recall_before"]),
                "D&S-final min. recall": _summary_cell(done["recall_final"]),
                "D&S-orig minority share": _summary_cell(done["inferred_minority_before"]),
                "synthetic samples": _count_cell(done["n_synthetic"]),
                "synthetic inferred minority": _summary_cell(done["synthetic_minority_share"]),
                "test accuracy": _summary_cell(done["accuracy"]),
                "test F1 (minority)": _summary_cell(done["f1_minority"]),
            }
        )
    return pd.DataFrame(rows)


#: Two means closer than this count as equal in the verdicts.
TOLERANCE = 0.01


def _mean(raw: pd.DataFrame, column: str, **where: Any) -> float:
    rows = raw[raw["status"] == "ok"]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    values = rows[column].dropna().astype(float)
    return float(values.mean()) if len(values) else np.nan


def verdict_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Each paper claim examined, the paper's number, ours (mean over seeds, with the
    table row it comes from) and a verdict computed from the numbers (rule in
    :data:`VERDICT_RULE`)."""
    base_u = variant_label({**MECHANISM_BASE["USPS-Syn-U"]})
    fig2 = {"experiment": "Mechanism", "dataset": "USPS-Syn-U"}
    knn = {**fig2, "variant": base_u}
    dup = {
        **fig2,
        "variant": variant_label(
            {**MECHANISM_BASE["USPS-Syn-U"], "synthetic_labels": "duplicate"}
        ),
    }
    rnd = {
        **fig2,
        "variant": variant_label({**MECHANISM_BASE["USPS-Syn-U"], "synthetic_labels": "random"}),
    }
    rows: list[dict[str, str]] = []

    def add(claim: str, paper: str, ours: str, source: str, verdict: str) -> None:
        rows.append(
            {
                "paper claim": claim,
                "paper": paper,
                "ours": ours,
                "from": source,
                "verdict": verdict,
            }
        )

    mv, orig = _mean(raw, "mv_accuracy", **knn), _mean(raw, "ds_before", **knn)
    if np.isfinite(orig):
        add(
            "Fig. 2: D&S-orig below 60 %, much worse than MV",
            "< 0.60 (Gisette-Syn)",
            f"D&S-orig {orig:.3f}, MV {mv:.3f}",
            f"{FIG2}, USPS-Syn-U (paper D&S, uniform prior, hard)",
            "reproduced" if orig < 0.60 and orig < mv - TOLERANCE else "not reproduced",
        )
        first = _mean(raw, "ds_first", **knn)
        gains = {
            name: _mean(raw, "ds_first", **where) - orig
            for name, where in (("duplicated", dup), ("random labels", rnd))
        }
        control = max(gains, key=lambda name: gains[name])
        gain = first - orig
        share = _mean(raw, "inferred_minority_before", **knn)
        n_synthetic = _mean(raw, "n_synthetic", **knn)
        if first > 0.80 and gain > gains[control] + TOLERANCE:
            verdict = "reproduced"
        elif gain > TOLERANCE and gains[control] >= gain - TOLERANCE:
            verdict = (
                f"protocol difference, shown by control '{control}' (D&S-first gain "
                f"{gains[control]:+.3f} against {gain:+.3f}): the gain needs no synthesis"
            )
        elif gain <= TOLERANCE:
            verdict = (
                "claim does not follow from eq. 2.1-2.2: with Phi fixed uniform the "
                f"failing D&S already infers {share:.0%} of the real tasks as minority, "
                f"so balancing its inferred classes adds only {n_synthetic:.0f} samples, "
                "and no added task can move a fixed Phi (controls' D&S-first gains: "
                + ", ".join(f"'{k}' {v:+.3f}" for k, v in gains.items())
                + ")"
            )
        else:
            verdict = "not reproduced"
        add(
            "Fig. 2: one synthesis lifts D&S above 80 %",
            "> 0.80",
            f"D&S-first {first:.3f} (gain {gain:+.3f})",
            f"{FIG2}, ICED synthesis row",
            verdict,
        )
        final = _mean(raw, "ds_final", **knn)
        add(
            "Fig. 2: after training D&S above 90 %",
            "> 0.90",
            f"D&S-final {final:.3f}",
            f"{FIG2}, ICED synthesis row",
            "reproduced"
            if final > 0.90
            else "claim does not follow from eq. 2.1-2.2 (row above)"
            if final - orig <= TOLERANCE
            else "not reproduced",
        )
    usps = {"experiment": "Table 2", "dataset": "USPS-Syn", "method": "ICED"}
    orig_usps = _mean(raw, "ds_before", **usps)
    if np.isfinite(orig_usps):
        final_usps = _mean(raw, "ds_final", **usps)
        add(
            "Fig. 2 on our earlier crowd (library D&S)",
            "D&S-orig < 0.60",
            f"D&S-orig {orig_usps:.3f}, D&S-final {final_usps:.3f}",
            "Fig. 2 rows, USPS-Syn",
            "protocol difference, shown by control 'USPS-Syn-U' (row above): with a "
            "smoothed, learned-prior D&S there is nothing to repair",
        )
    iced_acc = _mean(raw, "accuracy", **usps)
    if np.isfinite(iced_acc):
        others = {
            m: _mean(raw, "accuracy", experiment="Table 2", dataset="USPS-Syn", method=m)
            for m in METHODS
            if m != "ICED"
        }
        best = max(others, key=lambda m: -np.inf if np.isnan(others[m]) else others[m])
        add(
            "Table 2: ICED best on USPS-Syn",
            f"{PAPER_USPS_SYN['ICED'][0]:.4f} (next: Crowd-Layer "
            f"{PAPER_USPS_SYN['Crowd Layer'][0]:.4f})",
            f"ICED {iced_acc:.3f}, best other {best} {others[best]:.3f}",
            "Table 2, USPS-Syn",
            "reproduced" if iced_acc > others[best] + TOLERANCE else "not reproduced",
        )
    for experiment in ("Table 3", EQUAL_STEPS_EXPERIMENT):
        for dataset in ("USPS-Syn", "Digits-Syn"):
            scores = {
                m: _mean(raw, "accuracy", experiment=experiment, dataset=dataset, method=m)
                for m in WARMUPS
            }
            if not np.isfinite(scores["ICED-w"]):
                continue
            steps = {
                m: _mean(raw, "adam_steps", experiment=experiment, dataset=dataset, method=m)
                for m in WARMUPS
            }
            best_other = max(scores["Trad-I"], scores["Trad-II"])
            add(
                "Table 3: ICED-w best warm-up ("
                + ("equal epochs" if experiment == "Table 3" else "equal Adam steps")
                + ")",
                "USPS-Syn: Trad-I 0.7500, Trad-II 0.7922, ICED-w 0.8373",
                ", ".join(f"{m} {scores[m]:.3f}" for m in WARMUPS)
                + " (steps "
                + "/".join(f"{steps[m]:.0f}" for m in WARMUPS)
                + ")",
                f"{experiment}, {dataset}",
                "reproduced"
                if scores["ICED-w"] > best_other + TOLERANCE
                else "not reproduced (equal Adam steps are the control of the epochs)",
            )
    readings = []
    for dataset in MECHANISM_BASE:
        accuracy = {
            reading: _mean(
                raw,
                "accuracy",
                experiment="Mechanism",
                dataset=dataset,
                variant=variant_label({**MECHANISM_BASE[dataset], "interpolation": reading}),
            )
            for reading in ("towards-certain", "as-printed")
        }
        if np.isfinite(accuracy["as-printed"]):
            readings.append(
                f"{dataset} test acc. text {accuracy['towards-certain']:.3f}, "
                f"printed {accuracy['as-printed']:.3f}"
            )
    add(
        "eq. 2.5 puts z' near the more certain task",
        "delta = S(x) / (S(x) + S(x^r)) + eta",
        "; ".join(readings) or "(not run)",
        "eq. 2.5 rows; hand-computed test in tests/learning/test_iced.py",
        "claim does not follow from eq. 2.5: as printed, delta grows with S(x), so "
        "z' = z + delta (z^r - z) moves away from the more certain x (the text needs "
        "S(x^r) in the numerator)",
    )
    return pd.DataFrame(rows)


VERDICT_RULE = (
    "verdicts computed from the printed means: 'reproduced' when our mean is on the "
    f"paper's side of its threshold / ordering with a margin of {TOLERANCE} where two "
    "of our means are compared; a Fig. 2 gain counts as synthesis's own only when it "
    f"beats the best control's gain by more than {TOLERANCE}"
)


def _inference_rows(dataset: str, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Fig. 2: truth inference on the real training tasks in ICED's runs."""
    iced = runs[
        (runs["method"] == "ICED") & (runs["status"] == "ok") & (runs["experiment"] == "Table 2")
    ]
    if iced.empty:
        return []
    rows = []
    for label, accuracy_column, recall_column in INFERENCE_STAGES:
        rows.append(
            {
                "experiment": "Fig. 2",
                "dataset": _shown(dataset),
                "method": label,
                "runs": len(iced),
                "test accuracy": "",
                "test F1 (minority)": "",
                "train label accuracy": _summary_cell(iced[accuracy_column]),
                "train minority recall": ""
                if recall_column is None
                else _summary_cell(iced[recall_column]),
                "warm-up samples": "",
                "warm-up MV minority": "",
                "Adam steps": "",
                "fit s": "",
                "paper acc / F1 (USPS-Syn)": "",
            }
        )
    return rows


def accuracy_figure(raw: pd.DataFrame, title: str) -> Figure:
    """Test accuracy per method (mean, std over seeds) for each data set; the paper's
    USPS-Syn values as black markers."""
    names = list(raw["dataset"].unique())
    figure = Figure(figsize=(4.2 * len(names), 3.6))
    for axes, dataset in zip(np.atleast_1d(figure.subplots(1, len(names))), names, strict=True):
        runs = raw[(raw["dataset"] == dataset) & (raw["status"] == "ok")]
        methods = [m for m in (*METHODS, *WARMUPS) if m in set(runs["method"])]
        stats = runs.groupby("method")["accuracy"].agg(["mean", "std"]).reindex(methods)
        positions = np.arange(len(methods))[::-1]
        colours = [_colour(method) for method in methods]
        axes.barh(positions, stats["mean"], xerr=stats["std"].fillna(0.0), color=colours)
        if dataset == "USPS-Syn":
            paper = [PAPER_USPS_SYN.get(m, (np.nan,))[0] for m in methods]
            axes.scatter(paper, positions, marker="|", s=160, color="black", label="paper")
            axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(0.0, -0.18))
        axes.set_yticks(positions, methods)
        axes.set_xlim(0.4, 1.0)
        axes.set_xlabel("test accuracy (balanced test set)")
        axes.set_title(dataset)
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def _colour(method: str) -> str:
    if method == "ICED":
        return "tab:red"
    return "tab:gray" if method in WARMUPS else "tab:blue"


def inference_figure(raw: pd.DataFrame, rounds: dict[str, list[np.ndarray]]) -> Figure:
    """Fig. 2: truth-inference accuracy and minority recall on the real training tasks
    (MV, DS before synthesis, after the first, at the end), and their course over
    ICED's rounds."""
    names = [name for name in raw["dataset"].unique() if rounds.get(name)]
    figure = Figure(figsize=(4.2 * max(len(names), 1), 6.4))
    grid = figure.subplots(2, max(len(names), 1), squeeze=False)
    for column, dataset in enumerate(names):
        iced = raw[(raw["dataset"] == dataset) & (raw["method"] == "ICED")]
        top = grid[0, column]
        labels = [label for label, _, _ in INFERENCE_STAGES]
        means = [iced[acc].mean() for _, acc, _ in INFERENCE_STAGES]
        recalls = [np.nan if rec is None else iced[rec].mean() for _, _, rec in INFERENCE_STAGES]
        x = np.arange(len(labels))
        top.bar(x - 0.2, means, width=0.4, label="accuracy")
        top.bar(x + 0.2, recalls, width=0.4, label="minority recall")
        top.set_xticks(x, labels)
        top.set_ylim(0.0, 1.0)
        top.set_title(f"{dataset}: truth inference (train)")
        top.legend(fontsize="small", loc="lower right")
        bottom = grid[1, column]
        course = np.nanmean(np.stack(rounds[dataset]), axis=0)
        dots = len(course) <= 31  # markers only while they stay readable
        bottom.plot(course[:, 0], marker="o" if dots else None, label="DS accuracy")
        bottom.plot(course[:, 1], marker="s" if dots else None, label="DS minority recall")
        bottom.set_xlabel("round (0 = real labels only)")
        bottom.xaxis.get_major_locator().set_params(integer=True)
        bottom.set_ylim(0.0, 1.0)
        bottom.legend(fontsize="small", loc="lower right")
    figure.tight_layout()
    return figure
