"""The documentation and API reference build without a warning (Sphinx with ``-W``).

CI runs the README's test command only, so the reference is built here, the way the README
tells users to build it (``docs/conf.py``), but with Sphinx's ``dummy`` builder: it reads
every page, runs autodoc, numpydoc, MyST and sphinx-click, and resolves every
cross-reference (where the warnings come from), without writing HTML (a third of the
time). A warning fails the build and the test, and the test prints the warnings.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sphinx", reason="the docs extra (pip install -e '.[docs]')")
pytest.importorskip("myst_parser", reason="the docs extra (pip install -e '.[docs]')")
pytest.importorskip("numpydoc", reason="the docs extra (pip install -e '.[docs]')")
pytest.importorskip("sphinx_click", reason="the docs extra (pip install -e '.[docs]')")

#: The whole build takes about 25 s on 2 busy cores; far more means something is wrong.
BUILD_TIMEOUT_S = 600


def sphinx_build(out: Path, builder: str = "dummy") -> subprocess.CompletedProcess[str]:
    """Run the documented build command with ``builder`` into ``out``, from the root."""
    env = dict(os.environ)
    # the checkout's sources, as docs/conf.py also puts first on sys.path
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])]
    )
    env["MPLBACKEND"] = "Agg"
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-E",
        "-b",
        builder,
        "-c",
        "docs",
        "-d",
        str(out / "doctrees"),
        ".",
        str(out / builder),
    ]
    return subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )


def test_reference_builds_without_warnings(tmp_path: Path) -> None:
    """The Sphinx build of docs/ exits 0 with ``-W`` and prints no warning."""
    result = sphinx_build(tmp_path)
    warnings = [
        line for line in result.stderr.splitlines() if "WARNING" in line or "ERROR" in line
    ]
    assert result.returncode == 0 and not warnings, (
        f"sphinx exited {result.returncode}:\n{result.stderr[-20000:]}"
    )


def _public_all() -> dict[str, set[str] | None]:
    """Each public module under src/crowdlearn that sets ``__all__``, with its names
    (None where ``__all__`` is not a literal), read from the source without importing."""
    src = ROOT / "src"
    found: dict[str, set[str] | None] = {}
    for path in sorted((src / "crowdlearn").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(p.startswith("_") for p in parts):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                try:
                    found[".".join(parts)] = set(ast.literal_eval(node.value))
                except ValueError:
                    found[".".join(parts)] = None
    return found


def test_reference_documents_every_public_module() -> None:
    """Every public module that declares ``__all__`` is on an API page.

    A module is covered by its own ``automodule``, or when all of its names are
    re-exported by a documented package above it (``crowdlearn.data.crowddata`` by
    ``crowdlearn.data``). The command line is documented from its click group. A new
    public package fails here until it has a page in docs/api/ (and docs/api/index.rst).
    """
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs/api").glob("*.rst"))
    documented = set(re.findall(r"^\.\. automodule:: (\S+)$", pages, re.MULTILINE))
    assert ".. click:: crowdlearn.cli._app:cli" in pages
    public = _public_all()
    assert "crowdlearn.aggregation" in public and "crowdlearn.data" in public
    missing = []
    for name, names in public.items():
        if name in documented or name == "crowdlearn.cli":
            continue
        above = [public.get(d) or set() for d in documented if name.startswith(d + ".")]
        if names is None or not names <= set().union(*above):
            missing.append(name)
    assert not missing, f"public modules without an API page in docs/api/: {missing}"


def test_docstring_examples_run_as_doctests() -> None:
    """The default run collects the docstrings' examples of every module under src/.

    The reference shows them, and the docs say they run: this keeps pyproject's
    ``--doctest-modules`` and the ``src`` test path from being dropped unnoticed.
    """
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert "src" in options["testpaths"]
