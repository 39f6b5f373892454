"""The read-parquet benchmark, quick version: same logic as the 10M-row run."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.speed.read_parquet import measure_read, write_synthetic_parquet
from crowdlearn.io import read_parquet


def test_synthetic_file_has_distinct_pairs_and_reads_back(tmp_path):
    path = tmp_path / "a.parquet"
    write_synthetic_parquet(path, 20_000)
    data = read_parquet(path)  # duplicates="error" by default: pairs must be distinct
    assert (data.n_annotations, data.n_tasks, data.n_classes) == (20_000, 2_000, 10)
    assert (data.feedback_effort == 10).all()


def test_string_ids_read_back_with_the_same_structure(tmp_path):
    write_synthetic_parquet(tmp_path / "i.parquet", 5_000)
    write_synthetic_parquet(tmp_path / "s.parquet", 5_000, string_ids=True)
    numbers, names = read_parquet(tmp_path / "i.parquet"), read_parquet(tmp_path / "s.parquet")
    assert names.task_ids[42] == "t0000042" and names.classes[3] == "c3"
    # zero-padded names sort like the numbers, so the codes are identical
    for field in ("task", "worker", "label"):
        assert (getattr(numbers, field) == getattr(names, field)).all()


def test_child_process_reports_time_and_memory(tmp_path):
    path = tmp_path / "a.parquet"
    write_synthetic_parquet(path, 50_000)
    report = measure_read(path)
    assert report["n_annotations"] == 50_000
    assert report["code_array_bytes"] == 3 * 4 * 50_000
    # int64 ids, 8 bytes each
    n_ids = report["n_tasks"] + report["n_workers"] + report["n_classes"]
    assert report["n_tasks"] == 5_000 and report["id_array_bytes"] == 8 * n_ids
    assert report["seconds"] > 0
    assert report["peak_extra_bytes"] >= 0


def test_quick_benchmark_writes_csv_and_markdown(tmp_path):
    report = run("read-parquet", tmp_path, quick=True, seeds=2)
    text = report.read_text()
    assert "python -m benchmarks read-parquet --quick --seeds 2" in text
    assert "| ids | rows |" in text and "200,000" in text
    raw = pd.read_csv(tmp_path / "read-parquet.csv")
    assert len(raw) == 4 and (raw["n_annotations"] == 200_000).all()
    assert sorted(set(raw["ids"])) == ["int64", "string"]


def test_benchmarks_md_section_is_written_and_replaced(tmp_path):
    from benchmarks._registry import update_section

    target = tmp_path / "BENCHMARKS.md"
    target.write_text("# Benchmarks\n\nintro\n")
    update_section(target, "x", "## x\nfirst\n")
    update_section(target, "y", "## y\nother\n")
    update_section(target, "x", "## x\nsecond\n")
    text = target.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n")
    assert "second" in text and "first" not in text and "other" in text
    assert text.count("<!-- bench:x -->") == 1
