"""Exports drawn in a worker process, so that a renderer that fails is an error, never the end of the caller.

Why: vl-convert draws charts in V8 and matplotlib draws canvases with Agg, native code that
can end the process it runs in: V8 aborts when it cannot reserve its heap (it does under any
address-space limit, ``prlimit --as``, a common way to run a shared server), Agg throws
``std::bad_alloc`` on a canvas it cannot allocate. In the Jupyter server that process serves
every user, and in a kernel it holds the user's work. So every export is drawn by one worker
process of its own: started on the first export and reused (a start costs about a second of
imports; a drawing handed to a running worker costs a few milliseconds more than one drawn in
place, ``benchmarks/bench_export.py``), held to EXPORT_WORKER_DATA_BYTES of memory and
EXPORT_TIMEOUT_SECONDS a drawing. When it dies, that export is refused with a FigureError
saying so, and the next one starts a new worker. Exports take turns in it.

The worker is this module run as ``python -m sds_jupyter.studio.worker``; it reads requests
(pickled ``(renderer, args)`` frames) on its standard input and answers on the standard output
it had when it started (its prints go to standard error). It ends when its input closes.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from sds_jupyter.errors import FigureError, StackError
from sds_jupyter.limits import EXPORT_TIMEOUT_SECONDS, EXPORT_WORKER_DATA_BYTES

__all__ = ["ExportWorker", "draw_in_worker", "serve"]

_LENGTH = struct.Struct(">Q")
#: What an answer says: drawn (the value), refused (a StackError's message), failed (another exception).
_DRAWN, _REFUSED, _FAILED = "drawn", "refused", "failed"


def _renderers() -> dict[str, Callable[..., Any]]:
    """The drawings a worker makes, by name (imported in the worker only)."""
    from sds_jupyter.studio.render import render_canvas, render_chart

    return {"chart": render_chart, "canvas": render_canvas}


def _send(stream: IO[bytes], data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes:
    """One frame; EOFError when the other side is gone (before or inside a frame)."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return data


class ExportWorker:
    """One worker process, started on demand and reused; one drawing at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        atexit.register(self.close)

    @property
    def pid(self) -> int | None:
        """The running worker's process id (None before the first export or after it died)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def draw(self, renderer: str, *args: Any) -> Any:
        """``renderer`` ("chart" or "canvas", see studio.render) called with ``args`` in the worker.

        Its StackErrors come back as FigureErrors with their message; any other failure,
        the worker's death or EXPORT_TIMEOUT_SECONDS passing is a FigureError saying so.
        """
        with self._lock:
            process = self._started()
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                process.kill()

            timer = threading.Timer(EXPORT_TIMEOUT_SECONDS, expire)
            timer.start()
            try:
                assert process.stdin is not None and process.stdout is not None
                _send(process.stdin, pickle.dumps((renderer, args), protocol=pickle.HIGHEST_PROTOCOL))
                status, value = pickle.loads(_receive(process.stdout))
            except (OSError, EOFError):
                self._process = None
                raise FigureError(_death(process, expired.is_set())) from None
            finally:
                timer.cancel()
        if status == _REFUSED:
            raise FigureError(value)
        if status == _FAILED:
            raise FigureError(f"The export could not be drawn ({value}); lower its dpi or print width.")
        return value

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        package_parent = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "sds_jupyter.studio.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path, "MPLBACKEND": "Agg"},
        )
        return self._process

    def close(self) -> None:
        """End the worker (its input closes, so it leaves its loop); killed if it does not within 5 s."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        assert process.stdin is not None
        try:
            process.stdin.close()
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()


def _death(process: subprocess.Popen[bytes], expired: bool) -> str:
    """Why the worker stopped answering, as the export's refusal."""
    try:
        code = process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    if expired:
        return (
            f"Drawing this export took longer than {EXPORT_TIMEOUT_SECONDS} s (EXPORT_TIMEOUT_SECONDS) and was "
            "stopped; nothing was written: lower its dpi or print width."
        )
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    return (
        f"The export's renderer process stopped while drawing ({how}); nothing was written. Lower the dpi or "
        "the print width; a chart also needs room to reserve its engine's memory, which an address-space "
        "limit (ulimit -v, prlimit --as) does not leave."
    )


_WORKER = ExportWorker()


def draw_in_worker(renderer: str, *args: Any) -> Any:
    """``renderer`` with ``args`` drawn by the process's one export worker (see :class:`ExportWorker`)."""
    return _WORKER.draw(renderer, *args)


def serve() -> None:
    """The worker's loop: limit itself, then draw each request until its input closes."""
    import resource  # POSIX only, and needed in the worker only

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    # never above a limit the caller already runs under (an administrator's lower one stays)
    bounds = [b for b in (soft, hard) if b != resource.RLIM_INFINITY]
    resource.setrlimit(resource.RLIMIT_DATA, (min([EXPORT_WORKER_DATA_BYTES, *bounds]), hard))
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to standard error, never into an answer
    renderers = _renderers()
    while True:
        try:
            renderer, args = pickle.loads(_receive(requests))
        except EOFError:
            return
        try:
            answer: tuple[str, Any] = (_DRAWN, renderers[renderer](*args))
        except StackError as exc:
            answer = (_REFUSED, str(exc))
        except Exception as exc:  # noqa: BLE001 - MemoryError and any renderer's failure: the caller's error reply
            answer = (_FAILED, f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}")
        _send(answers, pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    serve()
