"""Executable documentation: every fenced code block of README.md and docs/*.md runs.

Each document gets one temporary working directory, one Python namespace and one
environment, shared by its blocks in document order, so a block may use the names and
files of the blocks before it (and nothing else):

* ```` ```python ```` blocks run in-process in the document's namespace;
* ```` ```bash ````, ```` ```sh ```` and ```` ```console ```` blocks run line by line
  (``\\`` continuations joined; for ``console`` only ``$ `` lines), each with
  ``bash -c`` in the working directory, and each must exit with status 0. ``crowdlearn``
  is the executable beside the running interpreter (``Path(sys.executable).parent``
  comes first on ``PATH``) and ``PYTHONPATH`` is inherited, so the commands run the
  code under test (``python -m benchmarks``: the checkout's experiments); each
  ``crowdlearn`` command runs in a process forked from a server that has imported the
  libraries once (tests/_fork_server.py; ``CROWDLEARN_DOCS_FORK=0``: fresh processes
  of the console script instead). ``export
  NAME=VALUE`` lines set NAME for the rest of the document, Python blocks included, as
  they would in the reader's shell;
* any other language (``text``, ``toml``...) is not code and is not run; a fence
  without a language is an error, so no block escapes the test unnoticed.

The documents start without ``CROWDLEARN_DATA`` and with an empty user cache: they must
set the datasets root themselves, the way the README tells users to. The placeholder
``/path/to/datasets`` stands for the real datasets (found as ``tests/conftest.py``
finds them). HTML comments right before a fence mark it:

* ``<!-- needs: datasets -->`` (or ``needs: dask``): skipped when the real datasets
  (the Dask extra) are not on this machine;
* ``<!-- skip-test: REASON -->``: never run (installing, network downloads, runs of
  hours); the reason is required.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import _fork_server
from conftest import SHARED_DATASETS

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell", "console"}
#: Placeholders the documents use for paths of the reader's machine.
PLACEHOLDERS = {"/path/to/datasets": str(SHARED_DATASETS)}
#: One shell command may take this long (CPU training under a loaded machine).
COMMAND_TIMEOUT_S = 900

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
MARKER = re.compile(r"^<!--\s*(?P<body>.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its document, position, language, code and markers."""

    doc: str
    index: int
    line: int
    lang: str
    code: str
    markers: tuple[str, ...] = ()

    @property
    def runs(self) -> bool:
        return self.lang in PYTHON | SHELL

    @property
    def name(self) -> str:
        first = next((s.strip() for s in self.code.splitlines() if s.strip()), "")
        return f"{self.doc}:{self.line} {first[:60]}"


def parse_blocks(text: str, doc: str = "<doc>") -> list[Block]:
    """The fenced blocks of a markdown text, with the markers of the comments before them.

    Markers are the bodies of the HTML comment lines just before the opening fence
    (blank lines may separate them); any other text in between drops them.

    Raises
    ------
    ValueError
        For a fence that is never closed.
    """
    blocks: list[Block] = []
    markers: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        match = FENCE.match(line)
        if match is None:
            comment = MARKER.match(line.strip())
            if comment is not None:
                markers.append(comment["body"])
            elif line.strip():
                markers = []
            i += 1
            continue
        fence, start = match["fence"], i
        body: list[str] = []
        i += 1
        while i < len(lines) and not (
            lines[i].startswith(fence[0] * len(fence)) and not lines[i].strip(fence[0]).strip()
        ):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{doc}:{start + 1}: fence {fence} is never closed")
        blocks.append(
            Block(
                doc, len(blocks), start + 1, match["info"].lower(), "\n".join(body), tuple(markers)
            )
        )
        markers = []
        i += 1
    return blocks


def document_blocks() -> list[Block]:
    return [
        block
        for path in DOCUMENTS
        for block in parse_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]


def shell_commands(block: Block) -> list[str]:
    """The commands of a shell block: continuations joined, comments and output dropped."""
    commands: list[str] = []
    pending = ""
    for raw in block.code.splitlines():
        line = raw.rstrip()
        if block.lang == "console" and not pending:
            if not line.startswith("$ "):
                continue  # program output shown in the document
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    if pending.strip():
        commands.append(pending.strip())
    return commands


def substitute(text: str) -> str:
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    return text


def skip_reason(block: Block) -> str | None:
    """Why ``block`` does not run here, or None."""
    for marker in block.markers:
        if marker.startswith("skip-test"):
            return f"marked {marker!r}"
        if marker == "needs: datasets" and not SHARED_DATASETS.is_dir():
            return f"real datasets not found at {SHARED_DATASETS}"
        if marker == "needs: dask" and importlib.util.find_spec("distributed") is None:
            return "the Dask extra is not installed"
    return None


@dataclass
class DocumentRun:
    """What the blocks of one document share: directory, namespace, environment."""

    cwd: Path
    env: dict[str, str]
    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__doc__"})
    done: int = 0  # blocks before this index have been handled
    failed: str | None = None  # the block that failed, if one did


def fresh_environment(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    # the document must say where the data are: no inherited root, an empty cache
    env.pop("CROWDLEARN_DATA", None)
    env["XDG_CACHE_HOME"] = str(tmp / ".cache")
    if "MPLCONFIGDIR" not in env:  # keep matplotlib's font cache where it is
        import matplotlib

        env["MPLCONFIGDIR"] = matplotlib.get_cachedir()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # the commands run in another directory: a relative PYTHONPATH (PYTHONPATH=src) would
    # miss, and an installed crowdlearn (editable, of another checkout) would answer
    # instead of the code under test; so its source folder comes first, entries absolute.
    # The checkout's root follows, so that `python -m benchmarks` finds the experiments
    # (not installed) as it does for a reader at the root of the checkout.
    import crowdlearn

    paths = [str(Path(crowdlearn.__file__).resolve().parents[1]), str(ROOT)]
    paths += [str(Path(p).resolve()) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def run_shell(block: Block, run: DocumentRun) -> None:
    for command in shell_commands(block):
        command = substitute(command)
        export = re.fullmatch(r"export\s+([A-Za-z_]\w*)=(\S+)(\s+#.*)?", command)
        if export is not None:
            run.env[export[1]] = shlex.split(export[2])[0]
            continue
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=run.cwd,
            env=run.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        assert result.returncode == 0, (
            f"{block.name}: `{command}` exited with {result.returncode}\n"
            f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
        )


def run_python(block: Block, run: DocumentRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(run.cwd)
    for name in ("CROWDLEARN_DATA", "XDG_CACHE_HOME"):
        if name in run.env:
            monkeypatch.setenv(name, run.env[name])
        else:
            monkeypatch.delenv(name, raising=False)
    code = compile(substitute(block.code), f"{block.doc}:{block.line}", "exec")
    exec(code, run.namespace)


def run_block(block: Block, run: DocumentRun, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.lang in PYTHON:
        run_python(block, run, monkeypatch)
    else:
        run_shell(block, run)


BLOCKS = document_blocks()
_RUNS: dict[str, DocumentRun] = {}


@pytest.fixture
def document_run(tmp_path_factory: pytest.TempPathFactory):
    def get(doc: str) -> DocumentRun:
        if doc not in _RUNS:
            tmp = tmp_path_factory.mktemp(Path(doc).stem)
            env = fresh_environment(tmp)
            if _fork_server.enabled():  # the commands as forks of a server (its docstring)
                env = _fork_server.environment(env)
            _RUNS[doc] = DocumentRun(cwd=tmp, env=env)
        return _RUNS[doc]

    return get


#: The README's blocks run in tests/test_docs_readme.py: a test file of their own, so
#: that the test processes (pytest-xdist, whole files to one process) run the README
#: beside the docs/ pages instead of after them.
README_DOC = "README.md"


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.runs and b.doc != README_DOC], ids=lambda b: b.name
)
def test_block_runs(block: Block, document_run, monkeypatch: pytest.MonkeyPatch) -> None:
    """The block runs after the blocks before it in its document, in the same directory."""
    check_block(block, document_run, monkeypatch)


def check_block(block: Block, document_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``block`` after the earlier blocks of its document (caught up when it is
    selected alone), skipping it when one of them failed or its marker says so."""
    run = document_run(block.doc)
    # catch up on earlier blocks when this one is selected alone (pytest -k)
    for earlier in BLOCKS:
        if earlier.doc != block.doc or not earlier.runs:
            continue
        if earlier.index < run.done or earlier.index >= block.index:
            continue
        if run.failed is None and skip_reason(earlier) is None:
            try:
                run_block(earlier, run, monkeypatch)
            except BaseException:
                run.failed = earlier.name
                raise
        run.done = earlier.index + 1
    if run.failed is not None:
        pytest.skip(f"an earlier block failed: {run.failed}")
    run.done = block.index + 1
    reason = skip_reason(block)
    if reason is not None:
        pytest.skip(reason)
    try:
        run_block(block, run, monkeypatch)
    except BaseException:
        run.failed = block.name
        raise


# ---------------------------------------------------------------- the documents' shape


def test_every_fence_has_a_language() -> None:
    """A bare fence would be neither run nor declared as text."""
    bare = [b.name for b in BLOCKS if not b.lang]
    assert not bare, f"tag these fences (python, bash, text...): {bare}"


def test_markers_are_known_and_skips_say_why() -> None:
    for block in BLOCKS:
        for marker in block.markers:
            if marker.startswith("skip-test"):
                assert re.fullmatch(r"skip-test: \S.*", marker), (
                    f"{block.name}: say why, <!-- skip-test: REASON -->"
                )
            else:
                assert marker in ("needs: datasets", "needs: dask"), (
                    f"{block.name}: unknown marker {marker!r}"
                )


def test_readme_keeps_the_two_commands_and_says_how_to_get_the_data() -> None:
    """CI runs the README's set-up lines as written; its first screen tells where the
    real datasets come from, in a block this module runs."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text.splitlines()[:30]
    for command in (
        "    python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e . "
        "&& .venv/bin/crowdlearn demo",
        '    python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e ".[dev]" '
        "&& .venv/bin/python -m pytest",
    ):
        assert command in head
    exports = [
        b
        for b in BLOCKS
        if b.doc == "README.md"
        and b.line <= 30
        and b.lang in SHELL
        and not any(m.startswith("skip-test") for m in b.markers)
        and any(c.startswith("export CROWDLEARN_DATA=") for c in shell_commands(b))
    ]
    assert exports, "the README's first screen must set CROWDLEARN_DATA in a tested block"


# ---------------------------------------------------------------- the harness itself

_code_line = st.text(
    alphabet=st.characters(codec="ascii", exclude_characters="`~\r\n\x0b\x0c\x1c\x1d\x1e\x85"),
    max_size=20,
)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["python", "bash", "text", "console"]),
            st.lists(_code_line, max_size=4),
            st.lists(st.sampled_from(["skip-test: slow", "needs: datasets"]), max_size=2),
            st.sampled_from(["Some prose.", "", "- a list item"]),
        ),
        max_size=5,
    )
)
def test_parse_blocks_finds_every_block_with_its_markers(spec) -> None:
    """Rendering blocks to markdown and parsing them back gives the same blocks."""
    lines: list[str] = []
    for lang, code, markers, prose in spec:
        lines += [prose, ""]
        lines += [f"<!-- {m} -->" for m in markers]
        lines += [f"```{lang}", *code, "```", ""]
    blocks = parse_blocks("\n".join(lines))
    assert [(b.lang, b.code, b.markers) for b in blocks] == [
        (lang, "\n".join(code), tuple(markers)) for lang, code, markers, _ in spec
    ]
    assert [b.index for b in blocks] == list(range(len(spec)))


def test_prose_between_a_marker_and_a_fence_drops_the_marker() -> None:
    text = "<!-- skip-test: slow -->\nSome prose.\n\n```bash\nls\n```\n"
    assert parse_blocks(text)[0].markers == ()


def test_unclosed_fence_is_an_error() -> None:
    with pytest.raises(ValueError, match="never closed"):
        parse_blocks("```python\nx = 1\n")


def test_shell_commands_join_continuations_and_drop_comments_and_output() -> None:
    bash = Block("d", 0, 1, "bash", "# a comment\nls -l \\\n    -a   # all\n\necho hi")
    assert shell_commands(bash) == ["ls -l      -a   # all", "echo hi"]
    console = Block("d", 0, 1, "console", "$ echo hi\nhi\n$ ls \\\n  sim/\nanswers.json")
    assert shell_commands(console) == ["echo hi", "ls    sim/"]


def test_shell_command_failure_names_the_block_and_command(tmp_path: Path) -> None:
    run = DocumentRun(cwd=tmp_path, env=fresh_environment(tmp_path))
    block = Block("README.md", 0, 7, "bash", "true\nexit 3")
    with pytest.raises(AssertionError, match=r"README.md:7 true: `exit 3` exited with 3"):
        run_shell(block, run)


def test_exports_persist_and_placeholders_are_replaced(tmp_path: Path) -> None:
    run = DocumentRun(cwd=tmp_path, env=fresh_environment(tmp_path))
    assert "CROWDLEARN_DATA" not in run.env
    code = (
        "export CROWDLEARN_DATA=/path/to/datasets   # where the data are\n"
        f'test "$CROWDLEARN_DATA" = "{SHARED_DATASETS}"'
    )
    run_shell(Block("d", 0, 1, "bash", code), run)
    assert run.env["CROWDLEARN_DATA"] == str(SHARED_DATASETS)


def test_commands_run_the_code_under_test(tmp_path: Path) -> None:
    """``crowdlearn`` in a document's folder imports the package this test imports."""
    import crowdlearn

    run = DocumentRun(cwd=tmp_path, env=fresh_environment(tmp_path))
    result = subprocess.run(
        ["bash", "-c", 'python -c "import crowdlearn; print(crowdlearn.__file__)"'],
        cwd=run.cwd,
        env=run.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(result.stdout.strip()).resolve() == Path(crowdlearn.__file__).resolve()
