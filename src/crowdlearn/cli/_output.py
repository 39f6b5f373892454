"""Where every CLI command writes: all-or-nothing outputs and no surprise overwrites.

The policy lives here once, and every command that writes goes through :class:`Outputs`:

- a command declares its targets (``-o`` folder or file, ``--pruned-output``...)
  *before* it reads or computes anything, so a refused target costs no time;
- a target that exists is refused with one line naming ``--overwrite``, except an
  empty folder (it holds nothing that could be lost: ``mkdir out`` before a run is
  common); with ``--overwrite`` the old target is replaced as a whole, so no file of
  an earlier run survives beside the new ones;
- targets that are not regular files or folders (``/dev/null``, FIFOs, sockets,
  devices, a symbolic link to a missing path) are always refused, and a file output
  onto an existing folder is refused even with ``--overwrite`` (replacing a whole
  folder by a file is never what a user meant); a symbolic link to an existing file
  or folder is followed: what it names is replaced, the link is kept;
- a command declares what it reads (:meth:`Outputs.reads`): an input must be a regular
  file or a folder (a FIFO would block, ``/dev/zero`` never ends), and no target may
  be an input or a folder holding one, with or without ``--overwrite``; a folder or
  glob read as batches (:meth:`Outputs.reads_batches`) may hold no target;
- every output folder gets a marker, ``.crowdlearn-output.json``, listing what the run
  wrote there; ``--overwrite`` replaces an existing non-empty folder only when it holds
  that marker and nothing the marker does not list, so it never removes a file that
  crowdlearn did not write (a file output named with ``-o`` is replaced: the user named
  that very file);
- everything is written into a hidden temporary sibling of each target
  (``.NAME.XXXX.tmp``) and renamed into place only once *all* targets are complete;
  an error, a full disk or Ctrl-C before that leaves no target changed and no
  temporary behind (nor the parent folders the run created).

The module imports only the standard library: ``crowdlearn --help`` imports it.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

#: The flag every writing command offers to replace an existing target.
OVERWRITE_FLAG = "--overwrite"

#: The file in every output folder that lists what crowdlearn wrote there.
MARKER = ".crowdlearn-output.json"


#: Names that say "one file": refused as output folders (see :meth:`Outputs.folder`).
_FILE_SUFFIXES = frozenset(
    (".csv", ".tsv", ".parquet", ".json", ".jsonl", ".txt", ".npy", ".npz", ".html", ".pt")
)


class OutputError(OSError):
    """An OSError met while writing an output, carrying the target the user named.

    The CLI's error boundary prints ``cannot write TARGET: reason``.
    """

    def __init__(self, target: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), target)
        self.target = target
        self.cause = cause


def require_input(path: str, option: str | None = None) -> None:
    """Refuse an input that is missing (``no such file or directory: PATH``), a symbolic
    link loop, or neither a regular file nor a folder (a FIFO would block the command,
    a device such as ``/dev/zero`` would be read without end)."""
    where = f"{option} {path}" if option else str(path)
    if path == "-" and option is None:  # standard input, read by crowdlearn.io
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise ValueError(
                f"{where}: a symbolic link to a missing path ({os.readlink(path)})"
            ) from None
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ValueError(f"{where}: a loop of symbolic links") from None
        raise
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ValueError(
            f"{where}: {_kind_of(mode)}; crowdlearn reads only regular files and folders "
            "(copy the data into a file first)"
        )


def _kind_of(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class _Target:
    """One declared output: a file or a folder, with its staging place."""

    def __init__(self, path: str, kind: str, option: str, optional: bool = False) -> None:
        self.name = path
        #: where the output is written: a symbolic link to an existing file or folder
        #: is followed (its target is replaced, the link kept), never replaced itself
        self.path = _followed(Path(path))
        self.kind = kind
        self.option = option
        self.optional = optional
        self.staging_dir: Path | None = None
        self.created_parents: list[Path] = []
        self.old: Path | None = None

    @property
    def staged(self) -> Path:
        """Where the command writes this output (valid inside ``with outputs:``)."""
        if self.staging_dir is None:
            raise RuntimeError("outputs are staged only inside `with outputs:`")
        return self.staging_dir if self.kind == "folder" else self.staging_dir / self.path.name


class Outputs:
    """The outputs of one command, checked up front and written all-or-nothing.

    Parameters
    ----------
    overwrite : bool
        The command's ``--overwrite`` flag: replace existing targets as a whole.

    Notes
    -----
    A command declares its targets first, then computes, then writes::

        outputs = Outputs(overwrite)
        out = outputs.folder(output)        # refused now if it exists
        ...                                 # read, fit: nothing written yet
        with outputs:                       # all targets renamed into place at the end
            write_labels(out.staged / "labels.csv")
    """

    def __init__(self, overwrite: bool = False, reads: Iterable[str | None] = ()) -> None:
        self.overwrite = overwrite
        self.targets: list[_Target] = []
        #: (the path as given, its real path) of every input the command reads
        self.inputs: list[tuple[str, Path]] = []
        #: (the source as given, its real folder, the glob pattern or None) of every
        #: folder or glob of batches read as a whole (see :meth:`reads_batches`)
        self.batch_sources: list[tuple[str, Path, str | None]] = []
        #: called once every target is in place, before the old ones are deleted;
        #: if it raises, every target is put back as it was (see :meth:`then`)
        self._then: Callable[[], None] | None = None
        self.reads(*reads)

    def then(self, action: Callable[[], None]) -> None:
        """Run ``action`` at the end of the commit, with the outputs in place and the
        old ones still kept aside: if it raises, the outputs are rolled back and the
        error goes on. For a second file that must change together with the outputs
        (``aggregate --state``: the state is replaced there, or nothing is)."""
        self._then = action

    def reads_batches(self, source: str) -> None:
        """Declare a folder or glob of batches the command reads as one dataset: no
        output may lie in that folder (or match that glob), where the next run of the
        command would read it as one more batch."""
        import glob as globbing

        if os.path.isdir(source):
            self.batch_sources.append((source, Path(os.path.realpath(source)), None))
        elif globbing.has_magic(source):
            folder = os.path.realpath(os.path.dirname(source) or ".")
            self.batch_sources.append((source, Path(folder), os.path.basename(source)))
        else:
            return
        for target in self.targets:
            self._check_not_input(target)

    def reads(self, *paths: str | None) -> None:
        """Declare inputs of the command (``None`` entries are skipped).

        Each must exist and be a regular file or a folder (:func:`require_input`); no
        target, declared before or after, may be one of them or a folder holding one.
        """
        for path in paths:
            if path is None:
                continue
            require_input(str(path))
            self.inputs.append((str(path), Path(os.path.realpath(path))))
            for target in self.targets:
                self._check_not_input(target)

    def _check_not_input(self, target: _Target) -> None:
        real = Path(os.path.realpath(target.path))
        for given, source in self.inputs:
            if target.kind == "folder" and inside(source, real):
                raise ValueError(
                    f"{target.option} {target.name}: holds the input {given}, which this "
                    "output folder would replace; give a folder that holds no input"
                )
            if real == source:
                raise ValueError(
                    f"{target.option} {target.name}: is the input {given}; give another path"
                )
        for given, folder, pattern in self.batch_sources:
            inside_source = (
                inside(real, folder)
                if pattern is None
                else real.parent == folder and fnmatch.fnmatch(real.name, pattern)
            )
            if inside_source:
                where = "lies in the folder" if pattern is None else "matches"
                raise ValueError(
                    f"{target.option} {target.name}: {where} {given}, which this command "
                    "reads as batches (the next run would read this output as one); give "
                    "a path outside it"
                )

    # ------------------------------------------------------------------ declaring

    def folder(self, path: str, option: str = "-o") -> _Target:
        """Declare an output folder; refuse it now if it may not be written, or if its
        name says it is one file (``labels.csv``) and no such folder exists yet: the
        user expects a file there and would get a folder of several."""
        suffix = Path(path).suffix.lower()
        if suffix in _FILE_SUFFIXES and not os.path.isdir(path):
            raise ValueError(
                f"{option} {path}: this output is a folder of several files, not one "
                f"{suffix} file; give a folder name such as {Path(path).with_suffix('')}"
            )
        return self._declare(path, "folder", option)

    def file(self, path: str, option: str = "-o", optional: bool = False) -> _Target:
        """Declare an output file; refuse it now if it may not be written.

        An ``optional`` file is one the run may not produce (the features file beside a
        Parquet file, for data without features): when it is not written, the commit
        removes an older file at its path (with ``--overwrite``), so no stale companion
        is left beside the new output.
        """
        return self._declare(path, "file", option, optional)

    def _declare(self, path: str, kind: str, option: str, optional: bool = False) -> _Target:
        target = _Target(str(path), kind, option, optional)
        for other in self.targets:
            if _same_place(other.path, target.path):
                raise ValueError(
                    f"{option} {path}: the same path as {other.option} {other.name}; "
                    "give each output its own path"
                )
        self._check_not_input(target)
        self._check(target)
        self.targets.append(target)
        return target

    def _check(self, target: _Target) -> None:
        """Refuse a target that exists (without --overwrite), is not a regular file or
        folder, or lies where nothing can be written."""
        where = f"{target.option} {target.name}"
        try:
            mode = os.stat(target.path).st_mode
        except FileNotFoundError:
            mode = None
            if os.path.islink(target.path):
                raise ValueError(
                    f"{where}: a symbolic link to a missing path "
                    f"({os.readlink(target.path)}); remove the link or give another path"
                ) from None
        except OSError as error:  # e.g. a path through a regular file (ENOTDIR)
            raise OutputError(target.name, error) from None
        if mode is not None:
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise ValueError(
                    f"{where}: {_kind_of(mode)}; crowdlearn writes only regular files and "
                    "folders, give another path"
                )
            if target.kind == "file" and stat.S_ISDIR(mode):
                raise ValueError(
                    f"{where}: is a folder, and this output is a file; give a file path"
                )
            here = Path.cwd().resolve()
            if stat.S_ISDIR(mode) and target.path.resolve() in (here, *here.parents):
                raise ValueError(
                    f"{where}: the current folder or one holding it cannot be an output "
                    "(it would be replaced as a whole); give a new folder"
                )
            empty_folder = stat.S_ISDIR(mode) and _is_empty(target.path)
            if not empty_folder and not self.overwrite:
                raise ValueError(
                    f"{where}: already exists; pass {OVERWRITE_FLAG} to replace it "
                    "(as a whole), or give another path"
                )
            if stat.S_ISDIR(mode) and not empty_folder:
                _check_ours(target.path, where)
        # Fail before the run, not after it, where nothing can be created (read-only
        # file system, no permission): the nearest existing ancestor must be writable.
        ancestor = target.path.absolute().parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise OutputError(
                target.name, NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            )
        if not _writable(ancestor):
            code = errno.EROFS if _read_only(ancestor) else errno.EACCES
            raise OutputError(target.name, OSError(code, os.strerror(code)))

    # ------------------------------------------------------------------ writing

    def __enter__(self) -> Outputs:
        try:
            for target in self.targets:
                target.created_parents = _make_parents(target.path.parent)
                target.staging_dir = Path(
                    tempfile.mkdtemp(
                        prefix=f".{target.path.name}.", suffix=".tmp", dir=target.path.parent
                    )
                )
                # mkdtemp makes an owner-only folder; a folder output gets mkdir's mode.
                os.chmod(target.staging_dir, 0o777 & ~_umask())
        except BaseException as error:
            self._discard()
            if isinstance(error, OSError) and not isinstance(error, OutputError):
                raise OutputError(target.name, error) from error
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            written = None
            if isinstance(exc, OSError) and not isinstance(exc, OutputError):
                written = self._target_of(exc)  # before the staging places are deleted
            self._discard()
            if written is not None:
                raise OutputError(written.name, exc) from exc
            return
        try:
            self._commit()
        except BaseException:
            self._discard()
            raise

    def _target_of(self, error: OSError) -> _Target | None:
        """The target whose staging place an OSError's path lies in, if any."""
        for name in (error.filename, error.filename2):
            if name is None:
                continue
            for target in self.targets:
                if target.staging_dir is not None and inside(Path(name), target.staging_dir):
                    return target
        # Errors without a path (a full disk in a C writer): the only target, if one.
        if error.filename is None and len(self.targets) == 1:
            return self.targets[0]
        return None

    def _commit(self) -> None:
        """Move every staged output into place; on any failure put back what was there."""
        for target in self.targets:
            # Re-check: something may have appeared at the target during the run.
            self._check_not_input(target)
            self._check(target)
        for target in self.targets:
            if target.kind == "folder":
                self._write_marker(target)
        done: list[_Target] = []
        current = self.targets[0]
        try:
            for current in self.targets:
                if os.path.lexists(current.path):
                    current.old = Path(
                        tempfile.mkdtemp(
                            prefix=f".{current.path.name}.", suffix=".old", dir=current.path.parent
                        )
                    )
                    os.rename(current.path, current.old / "previous")
                done.append(current)
                if current.optional and not os.path.lexists(current.staged):
                    continue
                os.rename(current.staged, current.path)
        except OSError as error:
            self._undo(done)
            raise OutputError(current.name, error) from error
        if self._then is not None:
            try:
                self._then()
            except BaseException:
                self._undo(done)
                raise
        for target in self.targets:
            if target.old is not None:
                shutil.rmtree(target.old, ignore_errors=True)
            if target.kind == "file" and target.staging_dir is not None:
                shutil.rmtree(target.staging_dir, ignore_errors=True)
            target.staging_dir = None

    @staticmethod
    def _undo(done: list[_Target]) -> None:
        """Undo a commit in reverse order: remove what was moved into place, put back
        the old."""
        for target in reversed(done):
            if _staged_moved(target):
                _remove(target.path)
            if target.old is not None:
                os.rename(target.old / "previous", target.path)
                shutil.rmtree(target.old, ignore_errors=True)
                target.old = None

    def _write_marker(self, folder: _Target) -> None:
        """List in ``folder``'s marker what this run writes there: its staged entries and
        the other targets that lie inside it (``--pruned-output out/kept.csv``)."""
        entries = set(_entries(folder.staged))
        for other in self.targets:
            if other is folder or not inside(other.path, folder.path):
                continue
            relative = other.path.absolute().relative_to(folder.path.absolute())
            parts = relative.parts
            entries.update(Path(*parts[: i + 1]).as_posix() for i in range(len(parts)))
            if other.kind == "folder":
                entries.update(f"{relative.as_posix()}/{e}" for e in _entries(other.staged))
                entries.add(f"{relative.as_posix()}/{MARKER}")
        document = {"written_by": "crowdlearn", "entries": sorted(entries)}
        (folder.staged / MARKER).write_text(json.dumps(document, indent=1) + "\n")

    def _discard(self) -> None:
        """Delete staging places and the parent folders this run created."""
        for target in self.targets:
            if target.staging_dir is not None and target.staging_dir.exists():
                shutil.rmtree(target.staging_dir, ignore_errors=True)
            target.staging_dir = None
            for parent in reversed(target.created_parents):
                try:
                    parent.rmdir()  # only if empty: never delete what someone else put there
                except OSError:
                    break
            target.created_parents = []


def _followed(path: Path) -> Path:
    """``path``, or the real path of what it names when it is a symbolic link to an
    existing file or folder (a dangling link stays as it is: it is refused)."""
    if os.path.islink(path) and os.path.exists(path):
        return Path(os.path.realpath(path))
    return path


def _is_empty(folder: Path) -> bool:
    """Whether ``folder`` holds nothing (the directory iterator closed at once)."""
    with os.scandir(folder) as entries:
        return next(entries, None) is None


def _entries(folder: Path) -> list[str]:
    """Every file and folder below ``folder``, as relative POSIX paths (not the marker)."""
    found = []
    for parent, dirs, files in os.walk(folder):
        base = Path(parent).relative_to(folder)
        found.extend((base / name).as_posix() for name in dirs + files)
    return [entry for entry in found if entry != MARKER]


def _check_ours(folder: Path, where: str) -> None:
    """Refuse to replace ``folder`` unless its marker lists everything in it."""
    try:
        listed = set(json.loads((folder / MARKER).read_text())["entries"])
    except (OSError, ValueError, KeyError, TypeError):
        listed = None
    foreign = [entry for entry in _entries(folder) if listed is None or entry not in listed]
    if not foreign:
        return
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    why = (
        f"and no {MARKER}: crowdlearn did not write this folder"
        if listed is None
        else f"which its {MARKER} does not list: crowdlearn did not write that there"
    )
    raise ValueError(
        f"{where}: holds {foreign[0]}{more}, {why}; {OVERWRITE_FLAG} replaces only a "
        "folder of crowdlearn's own outputs: move your files out or give another path"
    )


def _staged_moved(target: _Target) -> bool:
    """Whether the staged output of ``target`` was renamed onto the target path."""
    return target.staging_dir is not None and not os.path.lexists(target.staged)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _make_parents(folder: Path) -> list[Path]:
    """``mkdir -p folder``, returning the folders it created, outermost first."""
    missing = []
    current = folder.absolute()
    while not current.exists():
        missing.append(current)
        current = current.parent
    created = []
    for path in reversed(missing):
        path.mkdir()
        created.append(path)
    return created


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies below it."""
    try:
        path.absolute().relative_to(folder.absolute())
    except ValueError:
        return False
    return True


def _same_place(a: Path, b: Path) -> bool:
    return os.path.normpath(a.absolute()) == os.path.normpath(b.absolute())


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_table(frame: Any, path: Path, output_format: str | None = None) -> None:
    """A DataFrame to ``path`` as CSV or Parquet (``output_format``, else by the ending),
    atomically."""
    from crowdlearn._atomic import atomic_open, atomic_path

    fmt = output_format or ("parquet" if Path(path).suffix.lower() == ".parquet" else "csv")
    if fmt == "csv":
        with atomic_open(path) as handle:
            frame.to_csv(handle, index=False)
    else:
        with atomic_path(path) as tmp:
            frame.to_parquet(tmp, index=False)
