"""The ``sds-jupyter`` command line for tests: in this process, or in a real one.

Tests of WHAT a command does (its output, the files it writes, its refusals and exit codes) call
:func:`run_cli`: ``sds_jupyter.cli.main`` in this process, answering the ``(returncode, stdout,
stderr)`` that :func:`cli_process` (``python -m sds_jupyter`` in a subprocess) answers, without a
new Python's second of imports (zarr, pandas, numpy) per call. Tests where the process itself is
the subject (the console script runs, a refusal prints one line and no traceback from a real
process, control sequences on a real stream, signals and pipes, the read-only mount, a fresh
process's imports and caches) call :func:`cli_process` and keep at least one per subcommand.

What :func:`run_cli` holds apart, as a new process would have it: the environment (``env``, a value
of None removes the variable; ``PYTHONWARNINGS=ignore`` as :func:`cli_process` sets, so warnings are
ignored), the working folder (``cwd``), stdin (``stdin``, empty by default), stdout and stderr (text
streams over bytes in the locale's encoding, strict on stdout and ``backslashreplace`` on stderr as
Python sets a pipe's, read back as ``text=True`` reads a pipe), ``sys.argv``, and ``SystemExit``
(turned into the return code, as the interpreter does).
An exception ``main`` lets out is printed as the interpreter would (a traceback, status 1), so a
test asserting "no traceback" holds the same either way. The stack library's in-memory caches of
the process (``default_caches()``) are emptied before each call, so a command reads afresh as a new
process would (each entry is proven by the identity of what it read anyway); the records on disk
(``SDS_STACK_CACHE``, which the tests' conftest points at the test's own folder) are shared, as
between processes. A warning logged by a library goes to the command's stderr as Python's last-resort
handler would print it in a new process. The process's one export worker
(``sds_jupyter.studio.worker``) is shared with the rest of the test run, as a server shares it.

``SDS_TEST_CLI=process`` in the environment runs every :func:`run_cli` as a subprocess instead:
``SDS_TEST_CLI=process pytest tests/cli`` checks both ways give the tests the same answers.
"""

from __future__ import annotations

import io
import locale
import logging
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Mapping
from pathlib import Path

import pytest

#: ``process``: :func:`run_cli` starts a real process each time (to compare the two ways).
MODE_ENV = "SDS_TEST_CLI"

__all__ = ["MODE_ENV", "cli_process", "run_cli"]


def cli_process(
    *args: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdin: str = "",
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m sds_jupyter ARGS`` in a new process, its output captured as text."""
    merged = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for name, value in (env or {}).items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return subprocess.run(
        [sys.executable, "-m", "sds_jupyter", *(os.fspath(arg) for arg in args)],
        input=stdin,
        capture_output=True,
        text=True,
        env=merged,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def run_cli(
    *args: str | os.PathLike[str],
    env: Mapping[str, str | None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdin: str = "",
) -> subprocess.CompletedProcess[str]:
    """``sds-jupyter ARGS`` run by its entry function in this process (see the module's docstring)."""
    if os.environ.get(MODE_ENV) == "process":
        return cli_process(*args, env=env, cwd=cwd, stdin=stdin)
    from sds_jupyter.cli import main

    argv = [os.fspath(arg) for arg in args]
    # Text streams over bytes, as a pipe's are: strict UTF-8 on stdout, backslashreplace on stderr.
    encoding = locale.getpreferredencoding(False)
    out = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="backslashreplace", write_through=True)
    last_resort = logging.StreamHandler(err)
    last_resort.setLevel(logging.WARNING)
    root = logging.getLogger()
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setenv("PYTHONWARNINGS", "ignore")
        for name, value in (env or {}).items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        if cwd is not None:
            patch.chdir(Path(cwd))
        patch.setattr(sys, "argv", ["sds-jupyter", *argv])
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        _forget_what_the_process_read()
        root.addHandler(last_resort)
        try:
            code = main(argv)
        except SystemExit as exit:
            code = _status(exit.code, err)
        except Exception:  # a bug: the interpreter would print the traceback and exit with 1
            traceback.print_exc(file=err)
            code = 1
        finally:
            root.removeHandler(last_resort)
    return subprocess.CompletedProcess(["sds-jupyter", *argv], code, _text(out, encoding), _text(err, encoding))


def _text(stream: io.TextIOWrapper, encoding: str) -> str:
    """What was written, decoded as ``subprocess.run(..., text=True)`` decodes a pipe."""
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _status(code: object, err: io.TextIOWrapper) -> int:
    """The exit status the interpreter gives ``SystemExit(code)``: None is 0, text is printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def _forget_what_the_process_read() -> None:
    """Empty the stack library's in-memory caches, if it was imported: a new process starts with none."""
    caches = sys.modules.get("sds_jupyter.stack.caches")
    if caches is not None:
        caches.default_caches().clear()
