"""No command run with --overwrite ever removes a file it did not create (issue 32).

Hypothesis draws a folder tree holding the user's inputs and other files of theirs,
sometimes an earlier crowdlearn output, a command and an output path anywhere in
that tree (the working folder, the input's folder, a folder of theirs, the earlier
output, a new path, one of their files), and runs the command with --overwrite.
Whatever happens (written or refused), every file the user had is still there with
the same bytes, unless it is the very file they named as a file output (``convert
crowd.csv -o theirs.csv --overwrite`` replaces that file, as asked). Files that an
earlier crowdlearn run wrote may be replaced.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn.cli import cli

CSV = "task,worker,label\nt1,w1,a\nt1,w2,b\nt2,w1,a\nt2,w2,a\nt3,w1,b\nt3,w2,b\n"

INPUT_PLACES = ["crowd.csv", "d/crowd.csv", "d/e/crowd.csv"]
USER_FILES = ["d/notes.txt", "d/e/table.csv", "out/mine.csv", "out/sub/keep.txt", "x.txt"]
OUTPUTS = [".", "d", "d/e", "out", "new", "new/deeper", "crowd.csv", "d/notes.txt", "x.txt"]
COMMANDS = ["aggregate", "identify", "convert", "simulate"]


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def _args(command: str, data: str, output: str) -> list[str]:
    if command == "aggregate":
        return ["aggregate", data, "-s", "mv", "-o", output, "--quiet"]
    if command == "identify":
        return ["identify", data, "-s", "entropy", "-o", output, "--quiet"]
    if command == "convert":
        target = output if output.endswith((".csv", ".txt")) else f"{output}/c.csv"
        return ["convert", data, "-o", target, "--to", "csv"]
    return ["simulate", "independent-confusion", "--n-task", "5", "-o", output]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data_place=st.sampled_from(INPUT_PLACES),
    user_files=st.sets(st.sampled_from(USER_FILES)),
    earlier=st.sampled_from([None, "out", "d", "new"]),
    command=st.sampled_from(COMMANDS),
    output=st.sampled_from(OUTPUTS),
)
def test_overwrite_never_removes_a_file_crowdlearn_did_not_write(
    tmp_path_factory, monkeypatch, data_place, user_files, earlier, command, output
):
    root = tmp_path_factory.mktemp("tree")
    monkeypatch.chdir(root)
    for name in [data_place, *sorted(user_files)]:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CSV if name == data_place else f"the user's {name}\n")
    ours: set[str] = set()
    if earlier is not None:
        before_earlier = _files(root)
        CliRunner().invoke(cli, _args("aggregate", data_place, earlier))
        ours = set(_files(root)) - set(before_earlier)
    theirs = {name: digest for name, digest in _files(root).items() if name not in ours}

    args = _args(command, data_place, output)
    result = CliRunner().invoke(cli, [*args, "--overwrite"])
    assert result.exit_code in (0, 2), result.output
    named_file = args[args.index("-o") + 1]
    after = _files(root)
    for name, digest in theirs.items():
        if name == named_file and command == "convert" and name != data_place:
            continue  # the file output the user named: replaced as asked
        assert after.get(name) == digest, (
            f"{' '.join(args)} --overwrite removed or changed {name} "
            f"(exit {result.exit_code}: {result.output.strip()})"
        )
