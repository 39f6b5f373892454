"""Fast start: what ``import crowdlearn`` and the CLI's help load, and the lazy names.

Not a timing test: each check runs a fresh interpreter and looks at ``sys.modules``,
which is what makes start-up slow (``python -m benchmarks startup`` measures the times).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import crowdlearn
from crowdlearn._lazy import attach, lazy_module
from crowdlearn.cli import cli
from crowdlearn.data.errors import plain, show

#: Libraries that take from a tenth of a second to seconds to import; none may load at
#: ``import crowdlearn`` or for the CLI's help and version.
HEAVY = frozenset(
    {"numpy", "sklearn", "torch", "pandas", "scipy", "matplotlib", "pyarrow", "dask"}
)

#: The source tree that holds the ``crowdlearn`` under test, for the child interpreters.
SOURCE = str(Path(crowdlearn.__file__).resolve().parents[1])

#: Prefix of the line on which a child prints its modules (the CLI prints before it).
MARKER = "MODULES:"

#: Every package whose ``__all__`` must resolve.
PACKAGES = [
    "crowdlearn",
    "crowdlearn.aggregation",
    "crowdlearn.data",
    "crowdlearn.datasets",
    "crowdlearn.distributed",
    "crowdlearn.identify",
    "crowdlearn.io",
    "crowdlearn.learning",
    "crowdlearn.metrics",
    "crowdlearn.simulate",
    "crowdlearn.stream",
]


def child(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this source tree."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": SOURCE + (os.pathsep + path if path else "")}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def loaded_modules(code: str) -> set[str]:
    """Top-level names of the modules loaded after ``code`` ran in a fresh interpreter."""
    script = (
        f"{code}\nimport json, sys\n"
        f"print({MARKER!r} + json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    )
    result = child(script)
    assert result.returncode == 0, result.stderr
    line = [row for row in result.stdout.splitlines() if row.startswith(MARKER)][-1]
    return set(json.loads(line[len(MARKER) :]))


def cli_modules(*args: str) -> set[str]:
    """Modules loaded by the ``crowdlearn`` entry point run with ``args``; it must exit 0."""
    code = (
        "import sys\n"
        f"sys.argv = ['crowdlearn', *{list(args)!r}]\n"
        "from crowdlearn.cli import main\n"
        "try:\n    main()\nexcept SystemExit as stop:\n"
        "    assert stop.code in (0, None), stop.code\n"
    )
    return loaded_modules(code)


def test_the_check_sees_a_heavy_import():
    # the test below would pass vacuously if the child's modules were not read right
    assert "numpy" in loaded_modules("import crowdlearn.data.crowddata")


def test_import_crowdlearn_loads_no_heavy_library():
    assert loaded_modules("import crowdlearn") & HEAVY == set()


def test_the_data_error_imports_without_numpy():
    # the CLI imports CrowdDataError at start-up
    code = "from crowdlearn.data import CrowdDataError\nfrom crowdlearn.data.errors import show"
    assert loaded_modules(code) & HEAVY == set()


#: Libraries that only estimators, learners, figures or the Dask engine need.
ESTIMATOR_LIBRARIES = frozenset({"sklearn", "torch", "matplotlib", "dask"})


@pytest.mark.parametrize(
    "code",
    [
        "from crowdlearn import CrowdData",
        "from crowdlearn.io import read, write",
        "from crowdlearn.metrics import accuracy, acc_train",
        "from crowdlearn.simulate import STRATEGIES, hammer_spammer",
        "from crowdlearn import datasets; datasets.list()",
    ],
)
def test_data_io_metrics_and_simulators_load_no_estimator_library(code):
    assert loaded_modules(code) & ESTIMATOR_LIBRARIES == set()


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"]]
    + [[name, "--help"] for name in sorted(cli.commands)]
    + [["datasets", "fetch", "--help"]],
    ids=" ".join,
)
def test_cli_help_and_version_load_no_heavy_library(args):
    assert cli_modules(*args) & HEAVY == set()


def test_python_m_crowdlearn_prints_the_version():
    result = child(
        "import runpy, sys\nsys.argv = ['crowdlearn', '--version']\n"
        "runpy.run_module('crowdlearn', run_name='__main__')"
    )
    assert result.returncode == 0, result.stderr
    assert crowdlearn.__version__ in result.stdout


def test_top_level_names_resolve():
    from crowdlearn import CrowdData, CrowdDataError, MajorityVote, NaiveSoft

    assert CrowdData.__name__ == "CrowdData"
    assert issubclass(CrowdDataError, ValueError)
    assert MajorityVote.__module__ == "crowdlearn.aggregation.majority_vote"
    assert NaiveSoft.__module__ == "crowdlearn.aggregation.majority_vote"
    assert isinstance(crowdlearn.__version__, str) and crowdlearn.__version__


def test_subpackages_are_attributes_of_the_package():
    for name in ("io", "datasets", "metrics", "simulate", "aggregation"):
        assert getattr(crowdlearn, name) is importlib.import_module(f"crowdlearn.{name}")


@pytest.mark.parametrize(
    ("package", "name"),
    [(package, name) for package in PACKAGES for name in importlib.import_module(package).__all__],
)
def test_every_public_name_resolves_and_is_listed(package, name):
    module = importlib.import_module(package)
    value = getattr(module, name)
    assert name in dir(module)
    # a resolved name is stored in the package: the next lookup is a plain attribute
    assert vars(module)[name] is value


@pytest.mark.parametrize("package", PACKAGES)
def test_unknown_names_raise_attribute_error(package):
    module = importlib.import_module(package)
    assert not hasattr(module, "no_such_name")
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_datasets_list_is_list_datasets():
    from crowdlearn import datasets

    assert datasets.list is datasets.list_datasets
    assert datasets.list() == datasets.list_datasets()


def test_lazy_tables_hold_the_simulators_and_engines():
    from crowdlearn import distributed, simulate

    assert simulate.STRATEGIES["hammer-spammer"] is simulate.hammer_spammer
    assert simulate.STRATEGIES is simulate.STRATEGIES
    assert distributed.STRATEGIES["ds"] is distributed.DawidSkene


def test_attach_exports_renames_and_factories():
    import types

    package = types.ModuleType("fake_pkg")
    sys.modules["fake_pkg"] = package
    calls = []
    try:
        package.__getattr__, package.__dir__ = attach(
            "fake_pkg",
            {"dumps": "json", "encode": "json:dumps"},
            submodules=["decoder"],
            factories={"TABLE": lambda: calls.append(1) or {"a": 1}},
        )
        assert package.dumps is json.dumps
        assert package.encode is json.dumps
        assert package.TABLE == {"a": 1} and package.TABLE is package.TABLE
        assert calls == [1]
        assert {"dumps", "encode", "TABLE", "decoder"} <= set(dir(package))
        with pytest.raises(AttributeError, match="missing"):
            package.missing  # noqa: B018
    finally:
        del sys.modules["fake_pkg"]


def test_lazy_module_imports_on_first_attribute():
    assert "crowdlearn_no_such_module" not in sys.modules
    stand_in = lazy_module("crowdlearn_no_such_module")  # creating it imports nothing
    with pytest.raises(ModuleNotFoundError):
        stand_in.anything  # noqa: B018
    assert lazy_module("json").dumps is json.dumps


@given(st.lists(st.integers(-(2**62), 2**62), max_size=12), st.integers(1, 8))
def test_show_reads_numpy_arrays_like_lists(values, limit):
    # the error helpers detect numpy values without importing numpy
    assert show(np.array(values, dtype=np.int64), limit) == show(values, limit)
    assert [plain(v) for v in np.array(values, dtype=np.int64)] == [repr(v) for v in values]


def test_a_campaign_round_and_identify_load_no_torch(tmp_path):
    """``crowdlearn next`` runs once per round of a campaign: it ranks with Dawid-Skene
    and routes with identify's worker decisions, neither of which needs torch (1-2 s of
    import, more than the ranking itself on a small crowd)."""
    answers = tmp_path / "answers.csv"
    rows = [f"t{t},w{w},{(t + (w == 2)) % 2}" for t in range(12) for w in range(3)]
    answers.write_text("task,worker,label\n" + "\n".join(rows) + "\n")
    ranked = cli_modules(
        "next", str(answers), "--budget", "3", "--route", "1", "-o", str(tmp_path / "n.csv")
    )
    assert "torch" not in ranked and "pandas" in ranked  # pandas: the command did run
    assert (tmp_path / "n.csv").is_file()
    scored = cli_modules("identify", str(answers), "-o", str(tmp_path / "scores"))
    assert "torch" not in scored and (tmp_path / "scores").is_dir()
