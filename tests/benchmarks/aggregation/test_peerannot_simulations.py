"""The peerannot-simulations benchmark, quick version."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.aggregation.peerannot_simulations import (
    PAPER_ACCTRAIN,
    QUICK_STRATEGIES,
    SETTINGS,
    all_specs,
    setting_specs,
)
from crowdlearn.aggregation import STRATEGIES


def test_dswc_runs_only_at_the_papers_numbers_of_clusters():
    specs = ["mv", "ds", "DSWC[L=2]", "DSWC[L=5]", "DSWC[L=10]"]
    assert setting_specs(SETTINGS["independent-confusion"], specs) == [
        "mv",
        "ds",
        "DSWC[L=5]",
        "DSWC[L=10]",
    ]
    assert setting_specs(SETTINGS["discrete-difficulty"], specs) == [
        "mv",
        "ds",
        "DSWC[L=2]",
        "DSWC[L=5]",
    ]


def test_every_registered_strategy_is_benchmarked():
    specs = all_specs(quick=False)
    assert [s for s in specs if not s.startswith("DSWC")] == [
        name for name in STRATEGIES if name != "dswc"
    ]
    assert specs[-3:] == ["DSWC[L=2]", "DSWC[L=5]", "DSWC[L=10]"]


def test_paper_values_cover_the_six_strategies_of_each_table():
    assert set(PAPER_ACCTRAIN) == set(SETTINGS)
    for name, values in PAPER_ACCTRAIN.items():
        assert len(values) == 6
        assert {"mv", "naivesoft", "ds", "glad"} <= set(values)
        assert set(values) - {"mv", "naivesoft", "ds", "glad"} == {
            spec.lower() for spec in SETTINGS[name].dswc
        }


def test_quick_run_writes_table_raw_rows_and_figure(tmp_path):
    report = run("peerannot-simulations", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| strategy | independent-confusion: ours | independent-confusion: paper |" in text
    assert "`--seeds 6`" in text and "500 tasks" in text
    assert (tmp_path / "peerannot-simulations-acctrain.png").stat().st_size > 0
    raw = pd.read_csv(tmp_path / "peerannot-simulations.csv")
    assert sorted(raw["seed"].unique()) == [0, 1]
    ran = [s for s in QUICK_STRATEGIES if s in STRATEGIES]
    for name, setting in SETTINGS.items():
        rows = raw[raw["setting"] == name]
        assert set(rows["strategy"]) == set(ran) | set(setting.dswc)
        assert len(rows) == 2 * (len(ran) + len(setting.dswc))
    ok = raw[raw["status"] == "ok"]
    assert ok["accuracy"].between(0, 1).all() and (ok["n_tasks"] == 200).all()
    assert (raw.loc[raw["strategy"] == "mv", "paper_acctrain"].unique()).tolist() == [
        0.755,
        0.745,
        0.79,
    ]
