"""Every bad CLI input in the catalogue (cli_cases.py) fails cleanly and changes nothing.

For each case: the expected exit status, exactly one stderr line starting with
``crowdlearn: error:``, no traceback, a pre-existing output target byte-identical
afterwards, and no new file or folder in the working directory (temporary siblings
included).
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cli_cases import CASES, input_files
from click.testing import CliRunner

from crowdlearn.cli import _output as output_module
from crowdlearn.cli import cli
from crowdlearn.cli._output import MARKER

PREFIX = "crowdlearn: error:"
TARGET_BYTES = b"precious: must survive a failed run\n"


def _prepare(root: Path, target: tuple[str, str] | None) -> None:
    for name, content in input_files().items():
        path = root / name
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    if target is None:
        return
    name, kind = target
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.write_bytes(TARGET_BYTES)
    elif kind == "folder":
        path.mkdir()
        (path / "old-result.csv").write_bytes(TARGET_BYTES)
        (path / "sub").mkdir()
        (path / "sub" / "history.csv").write_bytes(TARGET_BYTES)
    elif kind in ("ours", "ours-plus"):  # an earlier run's output folder, with its marker
        path.mkdir()
        (path / "labels.csv").write_bytes(TARGET_BYTES)
        entries = ["labels.csv"]
        (path / MARKER).write_text(json.dumps({"written_by": "crowdlearn", "entries": entries}))
        if kind == "ours-plus":
            (path / "my-notes.txt").write_bytes(TARGET_BYTES)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling":
        path.symlink_to("nowhere")
    elif kind == "zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path.name)


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (hidden ones included) with its type and content hash."""
    state = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            key = str(path.relative_to(root))
            if stat.S_ISREG(mode):
                state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                state[key] = "dir" if stat.S_ISDIR(mode) else oct(stat.S_IFMT(mode))
    return state


# ---------------------------------------------------------------- injected faults


def _fail_writing(exception: BaseException):
    """A _write_table that writes part of its file, then fails like the OS would."""

    def write_table(frame, path, output_format):
        target = path.with_suffix(f".{output_format}")
        target.write_text("partial")
        if isinstance(exception, OSError):
            raise OSError(exception.errno, os.strerror(exception.errno), str(target))
        raise exception

    return write_table


def _fail_io_write(data, dest, format=None, **kwargs):
    Path(dest).write_bytes(b"partial")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dest))


def _inject(fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import crowdlearn.cli.aggregate as aggregate_module
    import crowdlearn.io
    from crowdlearn.aggregation import MajorityVote

    if fault == "read-only":
        monkeypatch.setattr(output_module, "_writable", lambda folder: False)
        monkeypatch.setattr(output_module, "_read_only", lambda path: True)
    elif fault == "read-only-late":

        class ReadOnlyTempfile:
            @staticmethod
            def mkdtemp(prefix="", suffix="", dir=None):
                path = os.path.join(dir, f"{prefix}x{suffix}")
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

        monkeypatch.setattr(output_module, "tempfile", ReadOnlyTempfile)
        # the parent "new" is created before the staging folder fails: it must go too
    elif fault == "disk-full":
        monkeypatch.setattr(
            aggregate_module, "_write_table", _fail_writing(OSError(errno.ENOSPC, "x"))
        )
    elif fault == "disk-full-io":
        monkeypatch.setattr(crowdlearn.io, "write", _fail_io_write)
    elif fault == "interrupt":
        monkeypatch.setattr(aggregate_module, "_write_table", _fail_writing(KeyboardInterrupt()))
    elif fault == "rename":
        real_rename = os.rename
        calls = []

        def rename(src, dst):
            calls.append(src)
            if len(calls) == 2:  # the staged folder onto the target, after the old moved
                raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(src))
            real_rename(src, dst)

        monkeypatch.setattr(output_module.os, "rename", rename)
    elif fault == "memory":

        def fit(self, data, **kwargs):
            raise MemoryError("Unable to allocate 8.00 EiB for an array")

        monkeypatch.setattr(MajorityVote, "fit", fit)
    elif fault == "bug":

        def fit(self, data, **kwargs):
            raise RuntimeError("boom")

        monkeypatch.setattr(MajorityVote, "fit", fit)
    elif fault == "unreadable":

        def read(source, format=None, **kwargs):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(source))

        monkeypatch.setattr(crowdlearn.io, "read", read)
    elif fault == "sigterm":
        # SIGTERM arrives while the outputs are staged: under the CLI's handlers (as
        # `crowdlearn` installs them) it must clean up exactly like Ctrl-C does
        import signal

        from crowdlearn import _progress

        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        _progress.latch_interrupts()
        monkeypatch.setattr(_progress, "_interrupted", 0)

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

        _RESTORE.append(restore)

        def write_table(frame, path, output_format):
            path.with_suffix(f".{output_format}").write_text("partial")
            os.kill(os.getpid(), signal.SIGTERM)

        monkeypatch.setattr(aggregate_module, "_write_table", write_table)
    elif fault == "model-disk-full":
        # the learner's file is written by write_bytes, in learning/_shared.py
        import crowdlearn.learning._shared as shared_module

        class FullDisk:
            def __init__(self, path, mode="r", *args, **kwargs):
                self.path = path

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def write(self, data):
                Path(self.path).write_bytes(b"partial")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(shared_module, "open", FullDisk, raising=False)
    # ---- issue 43: state files
    elif fault == "state-immutable":  # the state cannot be replaced, its folder can
        real_replace = os.replace

        def replace(source, target, *args, **kwargs):
            if os.path.basename(target) == "s.state":
                raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(target))
            return real_replace(source, target, *args, **kwargs)

        monkeypatch.setattr(os, "replace", replace)
    elif fault == "state-folder-read-only":  # nothing can be created beside the state
        real_open = os.open
        here = os.getcwd()

        def read_only_open(path, flags, *args, **kwargs):
            if flags & os.O_CREAT and os.path.dirname(os.path.abspath(path)) == here:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", read_only_open)
    elif fault == "state-locked":  # another update holds the state's lock
        import fcntl

        from crowdlearn._atomic import lock_path_of

        lock = lock_path_of("s.state")
        holder = open(lock, "w")  # closed by the restore below
        fcntl.flock(holder, fcntl.LOCK_EX)
        monkeypatch.setenv("CROWDLEARN_STATE_WAIT", "0")

        def release() -> None:
            lock.unlink()
            holder.close()

        _RESTORE.append(release)
    elif fault == "state-changed":  # a writer ignoring the lock rewrites the state
        real_partial_fit = MajorityVote.partial_fit

        def partial_fit(self, *args, **kwargs):
            Path("s.state").write_bytes(Path("s.state").read_bytes())
            return real_partial_fit(self, *args, **kwargs)

        monkeypatch.setattr(MajorityVote, "partial_fit", partial_fit)
    else:  # pragma: no cover - a typo in the catalogue
        raise AssertionError(fault)


#: Clean-ups of the faults that change process state monkeypatch cannot undo.
_RESTORE: list = []


# ---------------------------------------------------------------- running a case

CHILD = (
    "import resource, sys\n"
    "limit = 3 * 2**30\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "sys.argv[0] = 'crowdlearn'\n"
    "from crowdlearn.cli import main\n"
    "main()\n"
)


def _run_child(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run the CLI in a child under a 3 GiB address-space limit (huge allocations fail
    with MemoryError instead of taking the machine's memory)."""
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src), "CROWDLEARN_DEBUG": ""}
    process = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return process.returncode, process.stderr


def _params() -> list:
    params = []
    for case in CASES:
        marks = []
        if case.xfail:
            marks.append(pytest.mark.xfail(strict=False, reason=case.xfail))
        if case.skip_if and importlib.util.find_spec(case.skip_if) is None:
            marks.append(pytest.mark.skip(reason=f"{case.skip_if} is not installed"))
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def _dev_null_state() -> int:
    return os.stat("/dev/null").st_mode


@pytest.mark.parametrize("case", _params())
def test_bad_input_fails_cleanly(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CROWDLEARN_DEBUG", raising=False)
    monkeypatch.delenv("CROWDLEARN_DATA", raising=False)
    _prepare(tmp_path, case.target)
    before = snapshot(tmp_path)
    dev_null = _dev_null_state()
    if case.child:
        status, stderr = _run_child(case.args, tmp_path)
    else:
        if case.fault:
            _inject(case.fault, monkeypatch)
        result = CliRunner().invoke(cli, case.args)
        status, stderr = result.exit_code, result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError("the exception escaped the boundary") from result.exception
    while _RESTORE:
        _RESTORE.pop()()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert status == case.exit, stderr
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith(PREFIX), stderr
    assert case.expect in lines[0]
    assert snapshot(tmp_path) == before, "files were created, changed or removed"
    assert _dev_null_state() == dev_null


def test_catalogue_is_large_enough():
    assert len(CASES) >= 80


def test_snapshot_sees_hidden_temporaries(tmp_path):
    """The no-new-file check would catch a staging folder left behind."""
    before = snapshot(tmp_path)
    (tmp_path / ".out.abc.tmp").mkdir()
    assert snapshot(tmp_path) != before


def test_the_child_limit_is_an_address_space_limit():
    """The child cases rely on RLIMIT_AS existing on this platform."""
    assert hasattr(resource, "RLIMIT_AS")
