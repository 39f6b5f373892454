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


def test_file_lock_excludes_waits_and_leaves_no_file(tmp_path):
    """One holder at a time (another open of the lock file is refused after the
    timeout); the lock file goes with its holder, and a later holder gets it."""
    import time

    from crowdlearn._atomic import LockTimeout, file_lock, lock_path_of

    state = tmp_path / "s.state"
    with file_lock(state, timeout=1) as held:
        assert held and lock_path_of(state).exists()
        start = time.monotonic()
        with pytest.raises(LockTimeout), file_lock(state, timeout=0.3):
            pass
        assert time.monotonic() - start >= 0.3
    assert not lock_path_of(state).exists()
    with file_lock(state, timeout=0):
        pass
    assert os.listdir(tmp_path) == []


def test_a_waiter_on_a_removed_lock_file_takes_the_new_one(tmp_path):
    """A waiter that opened the lock file before its holder removed it must not hold
    the old (unlinked) file while a third process holds the new one."""
    import fcntl
    import threading
    import time

    from crowdlearn._atomic import file_lock, lock_path_of

    state = tmp_path / "s.state"
    order = []

    def waiter() -> None:
        with file_lock(state, timeout=10):
            order.append("waiter in")
            # the file this waiter holds is the one at the path (not an unlinked one)
            held = os.stat(lock_path_of(state))
            with open(lock_path_of(state)) as probe:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            assert held.st_nlink == 1
            order.append("waiter out")

    with file_lock(state, timeout=1):
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.2)
        order.append("holder out")
    thread.join(10)
    assert order == ["holder out", "waiter in", "waiter out"]
    assert not lock_path_of(state).exists()
