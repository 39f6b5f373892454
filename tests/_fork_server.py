"""A fork server for the documents' ``crowdlearn`` commands (tests/test_docs.py).

Most of the time of a short ``crowdlearn`` command is importing numpy, pandas,
scikit-learn, torch and crowdlearn itself (75-80 % for ``aggregate`` and a three-epoch
``learn`` of the README's tour, measured with ``python -X importtime``), and the
documents run about seventy of them. The server imports those modules once, then
forks one child per command: each command still runs in a process of its own, with its
own arguments, working directory, environment and standard streams (the client's file
descriptors, passed over a Unix socket), so nothing leaks from one command to the
next, and its exit status is the child's. The client is a small ``crowdlearn`` script,
put first on the documents' ``PATH``, that Python starts without ``site`` (a few
milliseconds).

What this does not exercise is the console script's own start (resolving the entry
point, the imports in a fresh interpreter): tests/test_startup.py runs the real
``crowdlearn`` in fresh processes, and ``CROWDLEARN_DOCS_FORK=0`` makes the documents
do so too.

The server never runs a command itself and starts no thread, so forking it is safe;
modules that read the environment when imported (numba's and torch's thread settings)
see the documents' environment, which the server is started with.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

#: Modules the documents' commands import; one that fails to import is left out.
PRELOAD = (
    "numpy",
    "pandas",
    "pyarrow.parquet",
    "scipy.special",
    "sklearn.linear_model",
    "torch",
    "matplotlib.pyplot",
    "crowdlearn._console",
    "crowdlearn.cli",
    "crowdlearn.aggregation",
    "crowdlearn.learning",
    "crowdlearn.io",
    "crowdlearn.simulate",
    "crowdlearn.report",
    "crowdlearn.datasets",
    "crowdlearn.identify",
    "crowdlearn.aggregation._kernels",
)
#: Set to 0 to run the documents' commands as fresh processes.
SWITCH = "CROWDLEARN_DOCS_FORK"
#: The client reads the server's socket from this variable.
SOCKET_ENV = "CROWDLEARN_DOCS_FORK_SOCKET"
#: Seconds to wait for a server to listen.
START_TIMEOUT_S = 120.0

CLIENT = """\
import json, os, socket, sys
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(os.environ[{socket_env!r}])
body = json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(connection, [len(body).to_bytes(8, "big")], [0, 1, 2])
connection.sendall(body)
reply = b""
while True:
    part = connection.recv(64)
    if not part:
        break
    reply += part
sys.exit(int(reply) if reply else 1)
"""


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    """One request: its header carries the client's three standard streams."""
    header, fds, _, _ = socket.recv_fds(connection, 8, 3)
    while len(header) < 8:
        header += connection.recv(8 - len(header))
    size = int.from_bytes(header, "big")
    body = b""
    while len(body) < size:
        part = connection.recv(min(1 << 20, size - len(body)))
        if not part:
            raise ConnectionError("the client left before its request was read")
        body += part
    return json.loads(body), list(fds)


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked child: become the command, run it as the console script does."""
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    code = 0
    try:
        from crowdlearn._console import main

        main()
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:  # sys.exit("message"): printed, status 1
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException:  # an uncaught error, as the interpreter would report it
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code & 0xFF)


def serve(path: str) -> None:
    """Import :data:`PRELOAD`, listen on ``path`` and fork a child per request."""
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".part")
    server.listen(4)
    os.rename(path + ".part", path)  # the path appears once the server listens
    while True:
        connection, _ = server.accept()
        try:
            request, fds = _receive(connection)
        except Exception:
            connection.close()
            continue
        pid = os.fork()
        if pid == 0:
            server.close()
            connection.close()
            _run_child(request, fds)
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code < 0:  # killed by a signal: as a shell reports it
            code = 128 - code
        try:
            connection.sendall(str(code).encode())
        finally:
            connection.close()


def enabled() -> bool:
    """Whether the documents' commands go through the server (``$CROWDLEARN_DOCS_FORK``,
    default on where Unix sockets can pass file descriptors)."""
    return (
        os.environ.get(SWITCH, "1") != "0" and hasattr(socket, "send_fds") and hasattr(os, "fork")
    )


_SERVER: dict[str, object] = {}


def environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the client first on ``PATH`` and the server's socket set; the
    server (one per test process, stopped at exit) is started with the first ``env``
    given: every document's environment comes from the same process environment, and
    each command's own environment is applied in its child. Where the server cannot
    start, ``env`` unchanged (fresh processes), with a warning, once."""
    if "failed" in _SERVER:
        return env
    if "path" not in _SERVER:
        try:
            _SERVER.update(_start(env))
        except (OSError, RuntimeError) as error:  # e.g. a socket path over 107 bytes
            _SERVER["failed"] = f"{type(error).__name__}: {error}"
            warnings.warn(
                f"the documents' fork server did not start ({_SERVER['failed']}): "
                "their commands run as fresh processes",
                RuntimeWarning,
                stacklevel=2,
            )
            return env
    out = dict(env)
    out[SOCKET_ENV] = str(_SERVER["path"])
    out["PATH"] = os.pathsep.join([str(_SERVER["bin"]), env.get("PATH", "")])
    return out


def _start(env: dict[str, str]) -> dict[str, object]:
    base = tempfile.gettempdir()
    if len(base) > 60 and os.path.isdir("/tmp"):  # a Unix socket's path: 107 bytes at most
        base = "/tmp"
    folder = Path(tempfile.mkdtemp(prefix="crowdlearn-docs-fork-", dir=base))
    path = str(folder / "server.sock")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    client = bin_dir / "crowdlearn"
    client.write_text(f"#!{sys.executable} -IS\n" + CLIENT.format(socket_env=SOCKET_ENV))
    client.chmod(0o755)
    here = str(Path(__file__).resolve().parent)
    code = (
        f"import sys; sys.path.insert(0, {here!r}); import _fork_server; "
        f"_fork_server.serve({path!r})"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=str(folder),
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the documents' fork server did not start ({process.poll()})")
        time.sleep(0.05)
    return {"path": path, "bin": bin_dir, "process": process}


@atexit.register
def _stop() -> None:
    process = _SERVER.get("process")
    if isinstance(process, subprocess.Popen):
        process.kill()
        process.wait()
