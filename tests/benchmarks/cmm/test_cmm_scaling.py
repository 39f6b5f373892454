"""Benchmark cmm-scaling: a tiny run of its logic, the run plan, the crowd facts and the
verdict rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import run
from benchmarks._learning import Recipe
from benchmarks.cmm.scaling import (
    BASELINES,
    CMM,
    IDEAL,
    NEAR_TIE_RECIPE,
    PAPER_RECIPE,
    QUICK_ANNOTATORS,
    RAW_COLUMNS,
    STRESS_RECIPE,
    crowd_facts,
    crowd_parameters,
    margin_control,
    plan,
    run_scaling,
    run_seed,
    scaling_table,
    verdict_table,
)
from crowdlearn.simulate import cmm_gaussians

torch.set_num_threads(1)


def test_tiny_run_of_the_bench_logic():
    raw = run_scaling(
        (20, 40),
        n_per_class=30,
        recipe=Recipe(max_epochs=2),
        seeds=3,
        baseline_runs=1,
        stress_runs=2,
    )
    assert list(raw.columns) == RAW_COLUMNS
    # diag-dominant: 3 seeds x 2 T of CMM, plus the 4 baselines and Ideal on seed 0;
    # stress: 2 seeds x 2 T of CMM
    dd = raw[raw["recipe"] == PAPER_RECIPE]
    assert len(dd) == 3 * 2 + (len(BASELINES) + 1) * 2
    assert set(dd.loc[dd["seed"] > 0, "spec"]) == {CMM.spec}
    stress = raw[raw["recipe"] == STRESS_RECIPE]
    assert len(stress) == 2 * 2 and set(stress["spec"]) == {CMM.spec}
    assert (raw["status"] == "ok").all(), raw[["spec", "error"]]
    assert raw["accuracy"].between(0, 1).all() and raw["hard_mv_accuracy"].between(0, 1).all()
    # every run has its own crowd; the methods of one run share it
    cmm = raw[raw["spec"] == CMM.spec]
    assert cmm["crowd_seed"].is_unique
    assert (dd.groupby("crowd_seed")["hard_mv_accuracy"].nunique() == 1).all()
    # the recipe's rule, seen from the bench's own measurement
    assert (dd["pooled_margin"] >= 0.1).all()
    table = scaling_table(raw, (20, 40), PAPER_RECIPE).set_index("quantity")
    assert table.loc["CMM (global): test accuracy, ours [runs] (paper)", "T=20"].endswith("[3]")


def test_quick_bench_writes_its_section(tmp_path):
    report = run("cmm-scaling", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert text.index("| claim (paper Table 2, Setup 1) |") < text.index("**diag-dominant crowds")
    assert "**stress crowds: accuracy vs T**" in text and "**control A:" in text
    assert "diag-dominant, T=100, seeds 0..1: hard MV [" in text
    for key in ("accuracy", "margin"):
        assert (tmp_path / f"cmm-scaling-{key}.png").stat().st_size > 0
    raw = pd.read_csv(tmp_path / "cmm-scaling.csv")
    assert set(raw["n_annotators"]) == set(QUICK_ANNOTATORS)


def test_plan_counts():
    runs = plan((100, 500, 1500), seeds=20, baseline_runs=3, stress_runs=5)
    dd = [r for r in runs if r[0] == PAPER_RECIPE]
    assert len(dd) == 60 and len([r for r in runs if r[0] == STRESS_RECIPE]) == 15
    assert sum(len(r[3]) for r in dd) == 60 + 3 * 3 * (len(BASELINES) + 1)
    assert all(r[3] == (CMM,) for r in runs if r[0] == STRESS_RECIPE)
    assert plan((100,), seeds=2, baseline_runs=3, stress_runs=5)[-1][:2] == (STRESS_RECIPE, 1)


@given(
    a=st.tuples(
        st.sampled_from([PAPER_RECIPE, STRESS_RECIPE, NEAR_TIE_RECIPE]),
        st.integers(0, 99),
        st.integers(0, 9),
    ),
    b=st.tuples(
        st.sampled_from([PAPER_RECIPE, STRESS_RECIPE, NEAR_TIE_RECIPE]),
        st.integers(0, 99),
        st.integers(0, 9),
    ),
)
def test_run_seeds_never_collide(a, b):
    if a != b:
        assert run_seed(*a) != run_seed(*b)
    assert run_seed(*a) > 10_000 + 99  # above the test sets' seeds


def test_crowd_facts_by_hand():
    crowd, info = cmm_gaussians(
        **crowd_parameters(PAPER_RECIPE, 30, 40, crowd_seed=7), return_info=True
    )
    facts = crowd_facts(crowd, info)
    counts = crowd.vote_counts.toarray()
    clear = counts.max(axis=1) > np.sort(counts, axis=1)[:, -2]  # no tie: MV is the argmax
    majority_right = counts.argmax(axis=1) == crowd.truth
    assert facts["hard_mv_accuracy"] >= majority_right[clear].sum() / crowd.n_tasks
    assert (
        facts["hard_mv_accuracy"] <= (majority_right[clear].sum() + (~clear).sum()) / crowd.n_tasks
    )
    matrices = np.asarray(info.params["group_confusions"])
    pooled = 0.25 * matrices[0] + 0.55 * matrices[1] + 0.20 * matrices[2]
    margins = [pooled[k, k] - np.delete(pooled[k], k).max() for k in range(3)]
    assert facts["pooled_margin"] == pytest.approx(min(margins))
    assert facts["inexpert_diagonal"] == pytest.approx(np.diag(matrices[1]).mean())


def _fake_raw(cmm_accuracy: dict[int, list[float]], stress: list[float]) -> pd.DataFrame:
    rows = []
    for t, values in cmm_accuracy.items():
        for seed, acc in enumerate(values):
            rows.append(
                {
                    "recipe": PAPER_RECIPE,
                    "spec": CMM.spec,
                    "n_annotators": t,
                    "seed": seed,
                    "status": "ok",
                    "accuracy": acc,
                    "pooled_margin": 0.3,
                    "hard_mv_accuracy": 0.9,
                    "labels_per_annotator": 5.0,
                    "fit_seconds": 1.0,
                }
            )
    for seed, acc in enumerate(stress):
        rows.append(
            {
                "recipe": STRESS_RECIPE,
                "spec": CMM.spec,
                "n_annotators": 100,
                "seed": seed,
                "status": "ok",
                "accuracy": acc,
                "pooled_margin": -0.2,
                "hard_mv_accuracy": 0.6,
                "labels_per_annotator": 5.0,
                "fit_seconds": 1.0,
            }
        )
    return pd.DataFrame(rows)


def test_verdicts_follow_the_tolerance_rule():
    # paper: 0.9053 at T=100, 0.9107 at T=500
    raw = _fake_raw({100: [0.92, 0.93], 500: [0.95, 0.96]}, stress=[0.6, 0.7])
    table = verdict_table(raw, (100, 500)).set_index("claim (paper Table 2, Setup 1)")
    assert table.loc["CMM global accuracy at T=100", "verdict"] == "reproduced"  # 0.925
    assert table.loc["CMM global accuracy at T=100", "ours"] == "0.925 (2 runs)"
    assert table.loc["CMM global accuracy at T=500", "verdict"].startswith(  # 0.955
        "protocol difference, shown by control A"
    )
    spread = table.loc["CMM accuracy does not depend on T (max - min of the means over T)"]
    assert spread["ours"] == "0.030" and spread["verdict"] == "reproduced"
    stress = table.loc["CMM global accuracy, stress crowds (all T)"]
    assert stress["ours"] == "0.650 (2 runs)" and stress["verdict"].startswith("protocol")
    control = margin_control(raw).set_index("runs (all T)")
    assert control.loc["pooled margin < 0", "count"] == 2
    assert control.loc["pooled margin < 0", "CMM test accuracy"] == "0.650 ± 0.050"
    assert control.loc["pooled margin >= 0.1", "of which stress / diag-dominant"] == "0 / 4"


def test_ideal_and_baselines_are_the_papers_methods():
    assert [m.spec for m in BASELINES] == ["naivesoft+nn", "mv+nn", "ds+nn", "dl-em"]
    assert IDEAL.spec == "supervised" and not IDEAL.crowd
    assert CMM.anonymous and "task_weights=labels" in CMM.spec


def test_near_tie_quick_bench_runs_only_near_tie_crowds(tmp_path):
    report = run("cmm-near-tie", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert text.index("| claim (paper Table 2, Setup 1) |") < text.index("**near-tie crowds")
    assert "near-tie table, CMM row" in text and "stress" not in text.split("**near-tie")[0]
    raw = pd.read_csv(tmp_path / "cmm-near-tie.csv")
    assert set(raw["recipe"]) == {NEAR_TIE_RECIPE}
    # the recipe's band, seen from the bench's own measurement of each crowd
    assert raw["pooled_margin"].between(0.0, 0.1, inclusive="left").all()
    assert set(raw["spec"]) == {CMM.spec, IDEAL.spec, *(m.spec for m in BASELINES)}
