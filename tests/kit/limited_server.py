"""A Jupyter server in its own process under an address-space limit, asked over HTTP as a browser asks."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from kit.repo import ROOT
from sds_jupyter.server.handlers import NAMESPACE

#: The server's address space: the baseline of a Jupyter server with this extension loaded is
#: about 1.3 GB of mappings (mostly libraries and thread stacks); what is left is far below
#: what the hostile requests of issue 24 took (2-5 GB) and above what a bounded read may hold.
SERVER_ADDRESS_SPACE = 2 * 1024**3

#: How far one refused request may raise the server's resident memory above what it held before:
#: a refusal is made from metadata and parameters, before any data is read.
REFUSAL_PEAK_BYTES = 64 * 1024**2

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def limit_server() -> None:
    """In the server's process before exec: cap its address space; as root, drop root's read-anything rights."""
    resource.setrlimit(resource.RLIMIT_AS, (SERVER_ADDRESS_SPACE, SERVER_ADDRESS_SPACE))
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base: str
    token: str
    top: str
    hostile: dict[str, tuple[str, int]]

    def call(self, name: str, method: str = "GET", body: Any = None, **params: Any) -> tuple[int, Any]:
        """``(status, JSON body or raw bytes)`` of one request to ``api/<name>``."""
        query = urlencode({**{k: str(v) for k, v in params.items()}, "token": self.token})
        request = urllib.request.Request(f"{self.base}/{NAMESPACE}/api/{name}?{query}", data=body, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, payload, kind = response.status, response.read(), response.headers["Content-Type"]
        except urllib.error.HTTPError as error:
            status, payload, kind = error.code, error.read(), error.headers["Content-Type"]
        return status, json.loads(payload) if kind and kind.startswith("application/json") else payload

    def peak_of(self, name: str, method: str = "GET", body: Any = None, **params: Any) -> tuple[int, Any, int]:
        """``call``, and how far the server's resident memory rose above where it was, at its peak."""
        status_file = Path(f"/proc/{self.process.pid}/status")
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")  # the peak mark starts again from now
        before = _status_bytes(status_file, "VmRSS")
        status, payload = self.call(name, method, body, **params)
        return status, payload, _status_bytes(status_file, "VmHWM") - before

    def alive(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=10) as response:
                return response.status == 200 and self.process.poll() is None
        except OSError:
            return False


def _status_bytes(status_file: Path, field: str) -> int:
    """One memory figure (kB in /proc) of a process, in bytes."""
    for line in status_file.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in {status_file}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_server(
    root: Path,
    home: Path,
    top: str,
    limits: Callable[[], None],
    hostile: dict[str, tuple[str, int]] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """A Jupyter server over ``root`` in its own process, ``limits`` applied in it before exec (its
    children inherit them), answering once it does; stopped after. Its log is ``home/server.log``."""
    token, port = secrets.token_hex(16), free_port()
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        **(env or {}),
    }
    environ.pop("SDS_WORK_DIR", None)
    command = [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1", "--no-browser"]
    command += [f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0"]
    command += ["--allow-root"] if os.geteuid() == 0 else []
    log = (home / "server.log").open("wb")
    process = subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT, preexec_fn=limits)
    started = Server(process, f"http://127.0.0.1:{port}", token, top, hostile or {})
    try:
        deadline = time.monotonic() + 120
        while not started.alive():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the server did not start: " + (home / "server.log").read_text()[-2000:])
            time.sleep(0.5)
        yield started
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
