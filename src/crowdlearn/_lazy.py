"""Lazy imports, so that ``import crowdlearn`` and ``crowdlearn --help`` start fast.

numpy, pandas, SciPy, scikit-learn and torch take seconds to import together; a package
that only re-exports names should not pay for them until a name is used.
:func:`attach` gives a package ``__getattr__`` and ``__dir__`` functions (PEP 562) that
import the submodule defining a public name on first access, and :func:`lazy_module`
gives a module-level stand-in for a heavy module (``np = lazy_module("numpy")``) that
imports it on first attribute access.

Examples
--------
>>> np = lazy_module("numpy")
>>> np
<lazy module 'numpy'>
>>> int(np.arange(3).sum())
3
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any


def attach(
    package: str,
    exports: Mapping[str, str],
    submodules: Iterable[str] = (),
    factories: Mapping[str, Callable[[], Any]] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module-level ``__getattr__`` and ``__dir__`` for a package with lazy exports.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Public name to the module defining it, absolute (``"crowdlearn.data.errors"``)
        or relative to ``package`` (``".errors"``); ``"module:attribute"`` exports an
        attribute under another name.
    submodules : iterable of str
        Submodule names reachable as attributes (``crowdlearn.io`` after
        ``import crowdlearn``), imported on first access.
    factories : mapping of str to callable, optional
        Names whose value is computed on first access by calling the factory (a table
        built from several modules).

    Returns
    -------
    (__getattr__, __dir__)
        Assign them to the package's module-level ``__getattr__`` and ``__dir__``.
        A resolved name is stored in the package's namespace, so each name is looked
        up through ``__getattr__`` once.
    """
    submodules = frozenset(submodules)
    factories = dict(factories or {})

    def __getattr__(name: str) -> Any:
        if name in exports:
            module_name, _, attribute = exports[name].partition(":")
            value = getattr(importlib.import_module(module_name, package), attribute or name)
        elif name in factories:
            value = factories[name]()
        elif name in submodules:
            # importing a submodule also binds it as an attribute of its package
            return importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        names = set(vars(sys.modules[package])) | set(exports) | set(factories) | submodules
        return sorted(names)

    return __getattr__, __dir__


class _LazyModule:
    """Stands for a module and imports it on the first attribute access."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        # import_module returns the cached module after the first call: a dict lookup.
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> ModuleType:
    """A stand-in for module ``name`` that imports it when an attribute is first used.

    For module-level aliases of heavy libraries in modules that must import fast (the
    command-line interface): ``np = lazy_module("numpy")`` then ``np.zeros(3)`` inside a
    function imports numpy at that call, not at the import of the module. Pair it with
    a real import under ``typing.TYPE_CHECKING`` for type checkers.

    Parameters
    ----------
    name : str
        Absolute module name.

    Returns
    -------
    module-like object
    """
    return _LazyModule(name)  # type: ignore[return-value]
