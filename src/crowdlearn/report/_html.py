"""Small HTML building blocks (standard library only): escaped tables, inlined images."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 0 1.5em 3em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #4C72B0; padding-bottom: .3em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #eef2f8; cursor: pointer; }
td.text, th.text { text-align: left; }
tr.flag td { background: #fde2e1; }
tr.gap td { text-align: center; font-style: italic; background: #f6f6f6; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: .4em .8em; }
.figures img { max-width: 100%; margin: .5em 1em .5em 0; vertical-align: top; }
.meta { color: #666; }
"""

#: Inline script: click a header to sort its table (numbers numerically); the page is
#: complete without it.
SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.title = "click to sort";
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.filter.call(body.rows, function (r) {
        return !r.classList.contains("gap"); });
      var asc = th.dataset.order !== "asc";
      th.dataset.order = asc ? "asc" : "desc";
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent, y = b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var cmp = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? cmp : -cmp;
      });
      rows.forEach(function (r) { body.appendChild(r); });
      body.querySelectorAll("tr.gap").forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def esc(value: Any) -> str:
    """Text escaped for HTML."""
    return html.escape(str(value), quote=True)


def cell(value: Any) -> str:
    """A value as table text: floats with 3 decimals, NaN as an empty cell."""
    if isinstance(value, float | np.floating):
        return "" if np.isnan(value) else f"{value:.3f}"
    if value is None:
        return ""
    return str(value)


def table(
    frame: pd.DataFrame,
    sortable: bool = True,
    flagged: Any = None,
    gap_after: int | None = None,
    gap_text: str = "",
    table_id: str | None = None,
) -> str:
    """An HTML table of ``frame`` (index not shown; put ids in columns).

    ``flagged``: boolean per row, highlighted; ``gap_after``: insert a row saying
    ``gap_text`` after that many rows (for capped tables).
    """
    text_columns = [
        not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])
        for c in frame.columns
    ]
    head = "".join(
        f'<th class="text">{esc(c)}</th>' if is_text else f"<th>{esc(c)}</th>"
        for c, is_text in zip(frame.columns, text_columns, strict=True)
    )
    flags = np.zeros(len(frame), bool) if flagged is None else np.asarray(flagged, bool)
    rows = []
    for i, values in enumerate(frame.itertuples(index=False)):
        cells = "".join(
            f'<td class="text">{esc(cell(v))}</td>' if is_text else f"<td>{esc(cell(v))}</td>"
            for v, is_text in zip(values, text_columns, strict=True)
        )
        rows.append(f'<tr class="flag">{cells}</tr>' if flags[i] else f"<tr>{cells}</tr>")
        if gap_after is not None and i + 1 == gap_after:
            rows.append(
                f'<tr class="gap"><td colspan="{len(frame.columns)}">{esc(gap_text)}</td></tr>'
            )
    classes = ' class="sortable"' if sortable else ""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    return (
        f"<table{classes}{ident}><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def image(figure: Figure, alt: str, dpi: int = 90) -> str:
    """An ``<img>`` with the figure inlined as a base64 PNG (no file, no request)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{encoded}">'


def page(title: str, body: str) -> str:
    """A complete HTML document: inline style and script, nothing fetched."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{esc(title)}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{SORT_SCRIPT}</script>\n</body>\n</html>\n"
    )
