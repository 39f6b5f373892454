"""crowd-kit's own aggregation tests, run against crowdlearn.compat.crowdkit.

Usage::

    python -m benchmarks.compat.crowdkit_oracle /path/to/crowd-kit-checkout [--keep DIR]

The checkout is a clone of https://github.com/Toloka/crowd-kit (its ``tests/aggregation``
is not in the PyPI sdist); this script fetches nothing. It runs those tests twice with
the installed crowd-kit: once as they are (the reference: which cases crowd-kit itself
passes here), once with :mod:`benchmarks.compat._crowdkit_shim` loaded, which makes the
names of ``crowdkit.aggregation`` resolve to the compatibility layer's classes while
crowd-kit's fixtures and helpers stay its own. It prints the two counts, the cases
crowd-kit passes and the layer fails (to be empty except the documented departures of
docs/migration-from-crowd-kit.md), and the cases the layer passes that crowd-kit fails.
Nothing of crowd-kit is copied into the project.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent.parent / "src"


def run_tests(checkout: Path, shim: bool, report: Path) -> dict[str, str]:
    """Run ``tests/aggregation`` of ``checkout``; outcome ("passed", "failed",
    "skipped") by test id."""
    env = dict(os.environ)
    paths = [str(SRC), str(HERE)] if shim else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).strip(os.pathsep)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/aggregation",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        f"--junitxml={report}",
    ]
    if shim:
        command[4:4] = ["-p", "_crowdkit_shim"]
    subprocess.run(command, cwd=checkout, env=env, stdout=subprocess.DEVNULL, check=False)
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcomes[name] = "failed"
        elif case.find("skipped") is not None:
            outcomes[name] = "skipped"
        else:
            outcomes[name] = "passed"
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Run both passes and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a crowd-kit git checkout")
    args = parser.parse_args(argv)
    if not (args.checkout / "tests" / "aggregation").is_dir():
        parser.error(f"{args.checkout} has no tests/aggregation")
    with tempfile.TemporaryDirectory() as tmp:
        reference = run_tests(args.checkout, False, Path(tmp) / "crowdkit.xml")
        layer = run_tests(args.checkout, True, Path(tmp) / "compat.xml")
    passed_ck = {k for k, v in reference.items() if v == "passed"}
    passed_cl = {k for k, v in layer.items() if v == "passed"}
    print(f"cases: {len(reference)}")
    print(f"crowd-kit passes: {len(passed_ck)}")
    print(f"compat layer passes: {len(passed_cl)}")
    print(f"crowd-kit passes and the layer does not ({len(passed_ck - passed_cl)}):")
    for name in sorted(passed_ck - passed_cl):
        print(f"  {name}")
    print(f"the layer passes and crowd-kit does not ({len(passed_cl - passed_ck)}):")
    for name in sorted(passed_cl - passed_ck):
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
