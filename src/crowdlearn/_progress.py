"""The one progress-bar policy of crowdlearn.

Every learner, aggregator and long command takes ``progress``:

* ``True``: always show a tqdm bar on stderr;
* ``False``: never;
* ``"auto"`` (the default everywhere): show it when stderr is a terminal (or a Jupyter
  kernel), so that scripts on a terminal see progress while tests, pipes, log files
  and CI stay silent. Inside a fit or command that has already decided (see
  :func:`progress_scope`), ``"auto"`` follows that decision: ``progress=False`` on a
  learner also silences the aggregator it fits inside, ``True`` shows it.

Bars opened while another is open (a round's epochs, a stage's passes) are nested:
they do not stay on screen when they finish (``leave=False``), so the outer bar keeps
its line and the output is not garbled. ``tqdm`` is imported only when a bar is shown.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias, TypeVar

Progress: TypeAlias = bool | Literal["auto"]

F = TypeVar("F", bound=Callable[..., Any])

#: The decision of the innermost :func:`progress_scope`; None outside any.
_SCOPE: ContextVar[bool | None] = ContextVar("crowdlearn_progress_scope", default=None)
#: Bars shown and not closed yet (to nest the next ones).
_open_bars = 0


def check_progress(progress: Any) -> Progress:
    """``progress`` itself when it is True, False or "auto"; a ValueError otherwise."""
    if isinstance(progress, bool) or (isinstance(progress, str) and progress == "auto"):
        return progress
    if type(progress).__module__ == "numpy" and type(progress).__name__ in ("bool", "bool_"):
        return bool(progress)  # numpy booleans behave as bools
    raise ValueError(f"progress must be True, False or 'auto', got {progress!r}")


def stderr_is_terminal() -> bool:
    """Whether stderr is an interactive terminal or a Jupyter kernel's stream."""
    stream = sys.stderr
    try:
        if stream is not None and stream.isatty():
            return True
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False
    shell = sys.modules.get("IPython")
    if shell is not None and "ipykernel" in sys.modules:
        try:
            ip = shell.get_ipython()  # type: ignore[attr-defined]
        except AttributeError:
            return False
        return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"
    return False


def progress_enabled(progress: Any) -> bool:
    """Resolve ``progress`` (True, False or "auto") to whether bars are shown.

    ``"auto"`` follows the innermost :func:`progress_scope`, else
    :func:`stderr_is_terminal`.
    """
    progress = check_progress(progress)
    if progress != "auto":
        return bool(progress)
    scoped = _SCOPE.get()
    if scoped is not None:
        return scoped
    return stderr_is_terminal()


@contextmanager
def progress_scope(progress: Any) -> Iterator[bool]:
    """Resolve ``progress`` once for a fit or a command and make ``"auto"`` inside follow it.

    Yields
    ------
    bool
        Whether this fit or command shows its bars.
    """
    enabled = progress_enabled(progress)
    token = _SCOPE.set(enabled)
    try:
        yield enabled
    finally:
        _SCOPE.reset(token)


def scoped(function: F) -> F:
    """Decorator: run ``function`` inside :func:`progress_scope` of its ``progress``
    argument, so that what it fits with ``progress="auto"`` follows its decision."""
    import inspect

    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        with progress_scope(bound.arguments["progress"]):
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def set_progress_default(enabled: bool | None) -> None:
    """Make ``"auto"`` resolve to ``enabled`` in the current thread from now on (None:
    back to the terminal test). For worker processes that share their parent's
    terminal, where several bars at once would garble it."""
    _SCOPE.set(enabled)


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    progress: Any,
    desc: str | None = None,
    total: float | None = None,
    unit: str = "it",
    leave: bool | None = None,
    **options: Any,
) -> Any:
    """A tqdm bar on stderr when ``progress`` resolves to True, else a silent stand-in.

    Parameters
    ----------
    iterable : iterable, optional
        What the bar wraps (iterate over the returned object), or None and call
        ``update``.
    progress : True, False or "auto"
        See :func:`progress_enabled`.
    desc, total, unit
        As for tqdm.
    leave : bool, optional
        Keep the finished bar on screen; default: yes for an outermost bar, no for a
        bar opened inside another (nested).
    **options
        Other tqdm options.

    Returns
    -------
    tqdm or _SilentBar
        Both support iteration, ``update``, ``set_postfix``, ``set_description`` and
        ``close`` (and ``with``).
    """
    if not progress_enabled(progress):
        return _SilentBar(iterable, total)
    from tqdm.auto import tqdm

    global _open_bars
    nested = _open_bars > 0
    # counted before it is built: a bar interrupted while it draws itself still leaves
    # a half-drawn line, which the CLI's error message must not be glued to
    _open_bars += 1
    return _counted(tqdm)(
        iterable,
        desc=desc,
        total=total,
        unit=unit,
        leave=not nested if leave is None else leave,
        file=sys.stderr,
        dynamic_ncols=True,
        **options,
    )


def open_bars() -> int:
    """How many bars were started and not closed (half-drawn ones included)."""
    return _open_bars


#: Set by the CLI's Ctrl-C handler (:func:`latch_interrupts`).
_interrupted: int = 0  # the signal number once interrupted under latch_interrupts


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP under :func:`latch_interrupts`: handled like Ctrl-C (outputs
    discarded, temporaries removed), reported with the signal's own exit status."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def latch_interrupts() -> None:
    """Make Ctrl-C stick: the SIGINT handler raises KeyboardInterrupt as Python's
    default does, and also sets a flag that every later progress update turns into a
    KeyboardInterrupt. A KeyboardInterrupt raised while the interpreter runs a finaliser
    (``__del__``, a weakref callback, garbage collection) is printed and dropped, so
    without the flag a long loop could go on after Ctrl-C. SIGTERM (``kill``, a job
    scheduler) and SIGHUP (a closed terminal) are handled the same way, as
    :class:`Terminated`: Python's default for them ends the process at once, without
    the clean-up that removes a command's temporary files. Only the CLI installs it; a
    Python session keeps its own handlers."""
    import signal

    def interrupted(signum: int, frame: Any) -> None:
        global _interrupted
        _interrupted = signum
        raise _interruption(signum)

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):  # no SIGHUP on Windows
            signal.signal(getattr(signal, name), interrupted)


def _interruption(signum: int) -> KeyboardInterrupt:
    import signal

    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def check_interrupted() -> None:
    """Raise KeyboardInterrupt (or :class:`Terminated`) when Ctrl-C was pressed (or
    SIGTERM / SIGHUP received) under :func:`latch_interrupts`."""
    if _interrupted:
        raise _interruption(_interrupted)


def format_postfix(values: dict[str, Any]) -> dict[str, str]:
    """Postfix entries for a bar: numbers with 4 significant digits, others as text;
    NaN and None are left out."""
    out = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, float | int) and not isinstance(value, bool):
            if value != value:  # NaN
                continue
            out[name] = f"{value:.4g}"
        else:
            out[name] = str(value)
    return out


_COUNTED: dict[type, type] = {}


def _counted(base: type) -> type:
    """``base`` (a tqdm class) whose ``close`` marks the bar as no longer open."""
    if base not in _COUNTED:

        class Counted(base):  # type: ignore[misc, valid-type]
            _counted_open = False

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                # only a bar built to the end is uncounted when it closes: one
                # interrupted while it drew itself leaves its line unfinished
                self._counted_open = True

            def close(self) -> None:
                global _open_bars
                if self._counted_open:
                    self._counted_open = False
                    _open_bars = max(_open_bars - 1, 0)
                super().close()

            def update(self, n: float = 1) -> Any:
                check_interrupted()
                return super().update(n)

            def __iter__(self) -> Iterator[Any]:
                # tqdm's own iteration does not go through update()
                for item in super().__iter__():
                    check_interrupted()
                    yield item

        Counted.__name__ = Counted.__qualname__ = base.__name__
        _COUNTED[base] = Counted
    return _COUNTED[base]


class _SilentBar:
    """What :func:`progress_bar` returns when bars are off: the same calls, no output."""

    def __init__(self, iterable: Iterable[Any] | None, total: float | None) -> None:
        self.iterable = iterable
        self.total = total
        self.n = 0

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("this bar wraps no iterable")
        for item in self.iterable:
            check_interrupted()
            yield item
            self.n += 1

    def __enter__(self) -> _SilentBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        check_interrupted()
        self.n += n

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_postfix_str(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass
