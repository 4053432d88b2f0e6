"""A real S3-compatible server on loopback (moto's server mode), with every request logged.

s3fs talks to it over HTTP exactly as it would to S3. Requests are counted by the
server (a WSGI layer in front of moto), never by patching the client. The
fixtures are imported by ``conftest.py``, so every test module may use them.
"""

from __future__ import annotations

import collections
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

BUCKET = "sds-stacks"
SECRET = "secret/credentials.json"
"""An object outside every datasets prefix: no test may ever request it."""


# -- the server --------------------------------------------------------------------------


@dataclass
class RequestLog:
    """Every request the server answered: method, path, query, Range header."""

    entries: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, environ: dict[str, Any]) -> None:
        with self.lock:
            self.entries.append(
                (
                    environ["REQUEST_METHOD"],
                    environ.get("PATH_INFO", ""),
                    environ.get("QUERY_STRING", ""),
                    environ.get("HTTP_RANGE"),
                )
            )

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()

    @staticmethod
    def kind(method: str, query: str) -> str:
        if method == "GET" and ("list-type" in query or "prefix=" in query):
            return "LIST"
        return method

    def counts(self) -> dict[str, int]:
        tally = collections.Counter(self.kind(m, q) for m, _, q, _ in self.entries)
        return {k: tally.get(k, 0) for k in ("GET", "HEAD", "LIST")} | {
            k: v for k, v in tally.items() if k not in ("GET", "HEAD", "LIST")
        }

    def gets(self) -> collections.Counter[str]:
        return collections.Counter(p for m, p, q, _ in self.entries if self.kind(m, q) == "GET")

    def paths(self) -> list[str]:
        """The object each request named; for a LIST, the bucket and the prefix listed."""
        from urllib.parse import parse_qs

        return [
            f"{p.rstrip('/')}/{parse_qs(q).get('prefix', [''])[0]}" if self.kind(m, q) == "LIST" else p
            for m, p, q, _ in self.entries
        ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server() -> Iterator[tuple[str, RequestLog]]:
    """moto's ThreadedMotoServer on loopback, with every request logged."""
    pytest.importorskip("moto.server")
    from moto.moto_server import threaded_moto_server as tms
    from moto.server import ThreadedMotoServer

    log = RequestLog()

    class CountingMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = tms.DomainDispatcherApplication(tms.create_backend_app)

            def counted(environ, start_response):  # noqa: ANN001, ANN202 - WSGI
                log.add(environ)
                return app(environ, start_response)

            self._server = tms.make_server(
                self._ip_address, self._port, counted, True, request_handler=tms.MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            patch.setenv(name, value)
        server = CountingMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}", log
        finally:
            server.stop()


@pytest.fixture(scope="session")
def storage_options(s3_server: tuple[str, RequestLog]) -> dict[str, Any]:
    endpoint, _ = s3_server
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}


@pytest.fixture(scope="session")
def s3(storage_options: dict[str, Any]) -> Any:
    s3fs = pytest.importorskip("s3fs")
    fs = s3fs.S3FileSystem(**storage_options)
    fs.mkdir(BUCKET)
    fs.pipe(f"{BUCKET}/{SECRET}", b'{"password": "hunter2"}')
    return fs


@pytest.fixture
def requests(s3_server: tuple[str, RequestLog]) -> Iterator[RequestLog]:
    """The server's request log, cleared; afterwards, proof the secret was never asked for."""
    _, log = s3_server
    log.clear()
    yield log
    assert not any(SECRET in path for path in log.paths()), "a request reached outside its prefix"


def upload(s3: Any, datasets: Path, name: str | None = None) -> str:
    """Upload a local datasets folder to a fresh prefix; returns its URL."""
    prefix = f"{BUCKET}/{name or uuid.uuid4().hex[:10]}/datasets"
    s3.put(str(datasets) + "/", prefix + "/", recursive=True)
    s3.invalidate_cache()
    return f"s3://{prefix}"
