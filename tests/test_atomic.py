"""Atomic writes: all or nothing, with the usual file permissions."""

from __future__ import annotations

import os
import stat

import pytest

from crowdlearn._atomic import atomic_open


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as handle:
        handle.write("new, half written")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_new_files_follow_the_umask_and_replacements_keep_the_mode(tmp_path):
    previous = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.txt"
        with atomic_open(fresh) as handle:
            handle.write("x")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        kept = tmp_path / "kept.txt"
        kept.write_text("old")
        kept.chmod(0o600)
        with atomic_open(kept) as handle:
            handle.write("new")
        assert kept.read_text() == "new"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    finally:
        os.umask(previous)
