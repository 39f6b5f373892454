"""The documentation and API reference build without a warning (Sphinx with ``-W``).

CI runs the README's test command only, so the reference is built here, the way the README
tells users to build it (``docs/conf.py``), but with Sphinx's ``dummy`` builder: it reads
every page, runs autodoc, numpydoc, MyST and sphinx-click, and resolves every
cross-reference (where the warnings come from), without writing HTML (a third of the
time). A warning fails the build and the test, and the test prints the warnings.
"""

from __future__ import annotations

import os
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


def test_reference_lists_every_public_package() -> None:
    """Every public package of crowdlearn has an API page that documents it."""
    pages = "\n".join(p.read_text() for p in (ROOT / "docs" / "api").glob("*.rst"))
    packages = [
        "crowdlearn.data",
        "crowdlearn.io",
        "crowdlearn.aggregation",
        "crowdlearn.aggregation.label_sets",
        "crowdlearn.aggregation.ratings",
        "crowdlearn.aggregation.comparisons",
        "crowdlearn.aggregation.texts",
        "crowdlearn.aggregation.boxes",
        "crowdlearn.aggregation.masks",
        "crowdlearn.learning",
        "crowdlearn.identify",
        "crowdlearn.metrics",
        "crowdlearn.simulate",
        "crowdlearn.campaign",
        "crowdlearn.datasets",
        "crowdlearn.distributed",
        "crowdlearn.report",
        "crowdlearn.plots",
    ]
    missing = [p for p in packages if f".. automodule:: {p}\n" not in pages]
    assert not missing
    assert ".. click:: crowdlearn.cli._app:cli" in pages


def test_docstring_examples_run_as_doctests() -> None:
    """The default run collects the docstrings' examples of every module under src/.

    The reference shows them, and the docs say they run: this keeps pyproject's
    ``--doctest-modules`` and the ``src`` test path from being dropped unnoticed.
    """
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert "src" in options["testpaths"]
