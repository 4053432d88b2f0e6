"""Requests to object storage: opening the demo stack's table through the stack vs flattened.

Data: the demo stack (spatialdata's blobs as the base, four versions on it),
uploaded to a bucket of a real S3-compatible server on loopback (moto's server
mode). The stack is also flattened (a full copy) and uploaded to the same bucket.
Every request the server answers is counted, by kind (GET, HEAD, LIST), with the
bytes of the response bodies.

A: ``open_anndata("s3://.../<top version>", storage_options=...)``: resolve the
   stack (its manifests), then read the table through the StackStore.
B: ``anndata.read_zarr(zarr.open_group(FsspecStore.from_url("s3://.../flat.zarr"), zarr_format=3)["tables/table"])``:
   zarr's own fsspec store on the flattened copy (the format named, as the stack names it).

Both eagerly (the whole table) and lazily (``anndata.experimental.read_lazy``:
what opening costs before anything is computed).

Goal: A's GETs = the keys B reads + one per manifest (+ one ranged byte of the
base's root document, to learn its Zarr format), and zero LISTs. B reads a key
with HEAD then GET, and a missing key with HEAD then LIST; A reads any key with
one ranged GET (a 404 for a missing one). Request counts are exact; times on
loopback are printed for scale only.
"""

from __future__ import annotations

import collections
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from _common import begin, emit, machine, versions, workdir

BUCKET = "bench"
#: ``SDS_BENCH_LATENCY_MS=20`` delays every response, as a distant bucket would.
LATENCY_S = float(os.environ.get("SDS_BENCH_LATENCY_MS", "0")) / 1000


class Counter:
    """Requests by kind and response bytes, counted by the server."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests: collections.Counter[str] = collections.Counter()
        self.bytes = 0
        self.paths: collections.Counter[str] = collections.Counter()
        self.keys: set[str] = set()

    def add(self, method: str, path: str, query: str) -> str:
        kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
        with self.lock:
            self.requests[kind] += 1
            if kind == "GET":
                self.paths[path] += 1
            if kind in ("GET", "HEAD"):
                self.keys.add(path)
        return kind

    def add_bytes(self, n: int) -> None:
        with self.lock:
            self.bytes += n

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {
                "GET": self.requests["GET"],
                "HEAD": self.requests["HEAD"],
                "LIST": self.requests["LIST"],
                "bytes": self.bytes,
                "keys": len(self.keys),
                "max GETs of one key": max(self.paths.values(), default=0),
            }


def start_server(counter: Counter) -> tuple[Any, str]:
    from moto.moto_server import threaded_moto_server as tms
    from moto.server import ThreadedMotoServer

    class CountingMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = tms.DomainDispatcherApplication(tms.create_backend_app)

            def counted(environ, start_response):  # noqa: ANN001, ANN202 - WSGI
                counter.add(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
                if LATENCY_S:
                    time.sleep(LATENCY_S)
                for chunk in app(environ, start_response):
                    counter.add_bytes(len(chunk))
                    yield chunk

            self._server = tms.make_server(
                self._ip_address, self._port, counted, True, request_handler=tms.MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = CountingMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


def zip_base(top: Path, out: Path) -> tuple[Path, int]:
    """A copy of the demo whose base is one stored ``.zarr.zip``; (top folder, zip size)."""
    import shutil
    import zipfile

    from sds_jupyter.stack import Stack

    datasets = out / "datasets"
    shutil.copytree(top.parent, datasets)
    base = Path(Stack.resolve(datasets / top.name).base.path)
    archive_path = base.parent / f"{base.name}.zip"
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_STORED) as archive:
        for path in sorted(base.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(base).as_posix())
    shutil.rmtree(base)
    for manifest in datasets.glob("*/layer.json"):
        manifest.write_text(manifest.read_text().replace(f'/{base.name}"', f'/{base.name}.zip"'))
    return datasets / top.name, archive_path.stat().st_size


def main() -> None:
    args = begin(__doc__)
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        os.environ.setdefault(name, value)

    import anndata
    import s3fs
    import zarr
    from anndata.experimental import read_lazy
    from zarr.storage import FsspecStore

    from sds_jupyter.demo import build_demo
    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.flatcopy import flatten
    from sds_jupyter.stack.open import open_anndata

    rounds = args.rounds or (2 if args.quick else 5)
    counter = Counter()
    server, endpoint = start_server(counter)
    options = {"key": "bench", "secret": "bench", "client_kwargs": {"endpoint_url": endpoint}}
    try:
        with workdir(args.keep) as root:
            top = build_demo(root / "demo", small=True)
            flat = flatten(top, root / "flat.zarr", link=False, progress=False)
            fs = s3fs.S3FileSystem(**options)
            fs.mkdir(BUCKET)
            fs.put(str(top.parent) + "/", f"{BUCKET}/stack/datasets/", recursive=True)
            fs.put(str(flat) + "/", f"{BUCKET}/flat/flat.zarr/", recursive=True)
            zipped_top, zip_size = zip_base(top, root / "zipped")
            fs.put(str(zipped_top.parent) + "/", f"{BUCKET}/zipped/datasets/", recursive=True)
            stack_url = f"s3://{BUCKET}/stack/datasets/{top.name}"
            zipped_url = f"s3://{BUCKET}/zipped/datasets/{top.name}"
            flat_url = f"s3://{BUCKET}/flat/flat.zarr"
            depth = Stack.resolve(top).depth

            def through_stack(lazy: bool) -> Any:
                return open_anndata(stack_url, lazy=lazy, storage_options=options)

            def through_flat(lazy: bool) -> Any:
                store = FsspecStore.from_url(flat_url, storage_options=options, read_only=True)
                group = zarr.open_group(store, mode="r", zarr_format=3)["tables/table"]
                return read_lazy(group) if lazy else anndata.read_zarr(group)

            results: dict[str, dict[str, Any]] = {}
            for label, fn in (
                ("A eager: stack", lambda: through_stack(False)),
                ("B eager: flattened, FsspecStore", lambda: through_flat(False)),
                ("A lazy: stack", lambda: through_stack(True)),
                ("B lazy: flattened, FsspecStore", lambda: through_flat(True)),
                ("C eager: stack on a .zarr.zip base", lambda: open_anndata(zipped_url, storage_options=options)),
            ):
                times = []
                for _ in range(rounds):
                    # A fresh filesystem each round, so nothing is served from a client cache.
                    s3fs.S3FileSystem.clear_instance_cache()
                    counter.reset()
                    start = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - start)
                    snapshot = counter.snapshot()
                times.sort()
                results[label] = {**snapshot, "median_s": times[len(times) // 2]}
    finally:
        server.stop()

    print(f"machine: {machine()}")
    print(f"versions: {versions()}")
    print(f"demo stack: {depth} versions on a folder base; {rounds} rounds, counts from the last")
    print(f"C: the same stack with its base as one stored .zarr.zip of {zip_size} bytes")
    print(f"latency added to every response: {LATENCY_S * 1e3:.0f} ms\n")
    header = f"{'':36} {'keys':>5} {'GET':>5} {'HEAD':>5} {'LIST':>5} {'bytes':>9} {'max GET/key':>11} {'median':>9}"
    print(header)
    for label, r in results.items():
        print(
            f"{label:36} {r['keys']:>5} {r['GET']:>5} {r['HEAD']:>5} {r['LIST']:>5} {r['bytes']:>9} "
            f"{r['max GETs of one key']:>11} {r['median_s'] * 1e3:>7.1f} ms"
        )
    goal_ok = True
    for mode in ("eager", "lazy"):
        a, b = results[f"A {mode}: stack"], results[f"B {mode}: flattened, FsspecStore"]
        # B reads a missing key with HEAD (+ LIST), A with one GET: compare keys read.
        extra = a["GET"] - b["keys"]
        ok = a["LIST"] == 0 and a["HEAD"] == 0 and extra <= depth + 1
        goal_ok &= ok
        print(
            f"{mode}: stack GETs - keys the flattened store read = {extra} "
            f"(goal: {depth} manifests + 1 base probe = {depth + 1}); "
            f"stack requests {a['GET'] + a['HEAD'] + a['LIST']} vs {b['GET'] + b['HEAD'] + b['LIST']}; "
            f"stack LISTs {a['LIST']}; {'goal met' if ok else 'GOAL MISSED'}"
        )
    emit(
        "bench_s3_requests",
        [],
        requests={k: dict(v) for k, v in results.items()},
        depth=depth,
        zip_size=zip_size,
        goal_met=goal_ok,
        run_id=uuid.uuid4().hex[:8],
    )


if __name__ == "__main__":
    main()
