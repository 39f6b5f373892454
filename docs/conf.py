"""Sphinx configuration of crowdlearn's documentation and API reference.

Build it from the root of a checkout with (``-W``: warnings are errors):

    python -m sphinx -W --keep-going -b html -c docs . docs/_build/html

The source directory is the checkout's root, not ``docs/``: the Markdown pages (README.md,
BENCHMARKS.md, docs/*.md, benchmarks/pages/*.md) are read where they are, so their
relative links to one another resolve as they do on a code host, and the tests that read
those files keep finding them. ``include_patterns`` keeps every other file out.
``tests/test_api_reference.py`` runs the same build with ``-W`` in the default test run.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the checkout's own sources first, as the tests import them
sys.path.insert(0, str(ROOT / "src"))
# matplotlib without a display; no progress bars while modules import
os.environ.setdefault("MPLBACKEND", "Agg")

project = "crowdlearn"
author = "crowdlearn developers"
copyright = "crowdlearn developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
    "sphinx_click",
]

root_doc = "docs/index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# only these files are pages; everything else in the checkout is not read
include_patterns = [
    "README.md",
    "BENCHMARKS.md",
    "docs/*.md",
    "docs/*.rst",
    "docs/api/*.rst",
    "benchmarks/pages/*.md",
]
# Folders that hold no page are not walked at all (Sphinx prunes excluded folders): every
# top-level folder but docs/ and benchmarks/ (a .venv, .git, src, tests, shared...), and
# in benchmarks/ every folder but pages/.
exclude_patterns = [
    "docs/_build",
    *sorted(p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in {"docs", "benchmarks"}),
    *sorted(
        f"benchmarks/{p.name}"
        for p in (ROOT / "benchmarks").iterdir()
        if p.is_dir() and p.name != "pages"
    ),
]

# API pages of packages that another branch of the same issue adds (crowdlearn.compat):
# each page is built, and listed in docs/api/index.rst by ``_optional_pages``, once its
# package is in the checkout, so that the build passes before and after the merge.
OPTIONAL_PAGES = {"docs/api/compat": ROOT / "src" / "crowdlearn" / "compat"}
exclude_patterns += [
    f"{page}.rst" for page, package in OPTIONAL_PAGES.items() if not package.is_dir()
]

# ---- autodoc
autodoc_default_options = {
    "members": True,
    "member-order": "bysource",
    # fit, predict... are defined on the base classes: show them on every estimator,
    # but not what every Python object, exception or scikit-learn estimator has
    "inherited-members": "object,BaseException,BaseEstimator,_MetadataRequester,Module",
}
# signatures carry the hints; the numpydoc sections carry the prose
autodoc_typehints = "signature"
# the hints name many types from numpy, pandas, torch and private modules: unresolved
# references are not errors (nitpicky is off), and the hints stay as written
autodoc_type_aliases: dict[str, str] = {}
nitpicky = False

# ---- numpydoc
numpydoc_show_class_members = False  # autodoc's :members: lists them already
numpydoc_class_members_toctree = False
# parameter types are written as prose ("int, default 100", "{'a', 'b'}"): not links
numpydoc_xref_param_type = False
# numpydoc's own docstring checks are not run here (ruff and review cover the style)
numpydoc_validation_checks: set[str] = set()

# ---- MyST (the Markdown pages)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# quotes and ellipses only: "--" stays two hyphens (the command line's --options are
# written in plain text in the click help and the docstrings)
smartquotes_action = "qe"

html_theme = "alabaster"
html_title = "crowdlearn"
# no copies of the page sources next to the pages
html_copy_source = False


# ---- hooks


def _skip_member(
    app: Any, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """Leave out scikit-learn's generated ``set_{method}_request`` methods.

    scikit-learn adds them to every estimator class for its metadata routing; they are
    not crowdlearn's API, and their docstrings refer to scikit-learn's own glossary and
    labels, which do not exist here.
    """
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _folder_links_as_text(app: Any, doctree: Any) -> None:
    """Turn Markdown links to folders of the checkout (``[benchmarks/](benchmarks/)``)
    into plain text.

    On a code host such a link opens the folder; the HTML pages have no page for it, and
    MyST would warn that the target is missing. Only links whose target is an existing
    folder are changed: a link to a missing page still fails the build.
    """
    from docutils import nodes
    from sphinx import addnodes

    docdir = (Path(app.srcdir) / app.env.docname).parent
    for node in list(doctree.findall(addnodes.pending_xref)):
        target = node.get("reftarget", "")
        if node.get("reftype") != "myst" or not target.endswith("/"):
            continue
        if (docdir / target).is_dir():
            node.replace_self(nodes.inline("", "", *node.children))


def _numpydoc_warnings_to_sphinx(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Report numpydoc's Python warnings as Sphinx warnings, so that ``-W`` fails on them.

    numpydoc warns with :func:`warnings.warn` (not through Sphinx) when it drops a
    docstring section it does not know ("Unknown section ...") or finds a wrong
    underline: the section's text would silently vanish from the page.
    """
    if "numpydoc" in str(filename):
        from sphinx.util import logging as sphinx_logging

        sphinx_logging.getLogger("numpydoc").warning("numpydoc: %s", message)
        return
    _show_warning(message, category, filename, lineno, file, line)


_show_warning = warnings.showwarning


def _root_redirect(app: Any, exception: Exception | None) -> None:
    """Write ``index.html`` at the top of an HTML build, pointing at ``docs/index.html``
    (the pages keep the checkout's layout, so the index is one folder down)."""
    if exception is not None or app.builder.format != "html":
        return
    target = "docs/index.html"
    (Path(app.outdir) / "index.html").write_text(
        f'<!DOCTYPE html><meta charset="utf-8"><title>crowdlearn</title>'
        f'<meta http-equiv="refresh" content="0; url={target}">'
        f'<a href="{target}">crowdlearn documentation</a>\n',
        encoding="utf-8",
    )


def _optional_pages(app: Any, docname: str, source: list[str]) -> None:
    """Append the present ``OPTIONAL_PAGES`` to the toctree that ends docs/api/index.rst."""
    if docname != "docs/api/index":
        return
    for page, package in OPTIONAL_PAGES.items():
        if package.is_dir():
            source[0] = source[0].rstrip("\n") + f"\n   {page.rsplit('/', 1)[1]}\n"


def setup(app: Any) -> None:
    """Connect the hooks above."""
    warnings.showwarning = _numpydoc_warnings_to_sphinx
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("doctree-read", _folder_links_as_text)
    app.connect("build-finished", _root_redirect)
    app.connect("source-read", _optional_pages)
