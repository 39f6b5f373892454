"""Generate the two reference reports with the ``crowdlearn report`` command and screenshot
them in headless Chromium (the system binary, through playwright).

Usage (from the repository root)::

    CROWDLEARN_DATA=../shared/datasets .venv/bin/python tests/report/make_screenshots.py bench-out

writes ``report-labelme.html`` / ``.png`` (LabelMe, with its truth) and ``report-1m.html`` /
``.png`` (a simulated hammer-spammer crowd of 2,000 workers x 100,000 tasks x 10 labels =
1,000,000 annotations), and prints what the browser saw (title, images decoded, console
errors, network requests).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _command(*args: str) -> None:
    crowdlearn = Path(sys.executable).with_name("crowdlearn")
    start = time.perf_counter()
    subprocess.run([str(crowdlearn), *args], check=True)
    print(f"  ({time.perf_counter() - start:.1f} s) crowdlearn {' '.join(args)}")


def main(out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from report_browser import open_in_chromium

    out.mkdir(parents=True, exist_ok=True)
    pages = {"labelme": out / "report-labelme.html", "1m": out / "report-1m.html"}
    _command("report", "labelme", "--truth", "--title", "LabelMe", "-o", str(pages["labelme"]))
    with tempfile.TemporaryDirectory() as tmp:
        _command(
            "simulate",
            "hammer-spammer",
            "--n-worker",
            "2000",
            "--n-task",
            "100000",
            "-K",
            "5",
            "--feedback",
            "10",
            "--ratio",
            "0.2",
            "--format",
            "parquet",
            "-o",
            tmp,
        )
        source = next(Path(tmp).glob("*.parquet"))
        _command(
            "report",
            str(source),
            "--truth",
            "--title",
            "Simulated crowd, 1M annotations",
            "-o",
            str(pages["1m"]),
        )
    for key, html in pages.items():
        screenshot = out / f"report-{key}.png"
        check = open_in_chromium(html, screenshot)
        decoded = sum(i["complete"] and i["width"] > 0 for i in check.images)
        print(
            f"{html} ({html.stat().st_size / 1e6:.2f} MB): title={check.title!r}, "
            f"images decoded {decoded}/{len(check.images)}, "
            f"console errors {check.console_errors}, requests {check.requests} -> {screenshot}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out"))
