"""Resolving a 500-deep stack in object storage at 20 ms a request: manifests fetched at once.

Data: the 500-deep stack of ``_deepstack.py``, copied into an fsspec in-memory
filesystem behind a latency-injecting wrapper (protocol ``slowmem://``): every
request (a read, an ``info``, a listing) answers after 20 ms
(``SDS_BENCH_LATENCY_MS``), and requests in flight at once wait side by side, as
they do against S3. (moto's S3 server would run in this process and spend tens
of milliseconds of CPU on each request on this shared 2-core machine, so it
would time itself rather than the round trips; the S3 request budgets are
asserted against moto in the tests.) ``--quick``: 100 deep.

A: ``Stack.resolve(url)``: after 8 parents followed one by one, one listing of
   the datasets folder and every dataset folder's manifest fetched 32 at a time.
B: the same with the prefetch off: the walk, one round trip per manifest.
Goal: A <= 2 s (absolute, printed; the ratio is for scale). Requests are counted
by the wrapper.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from pathlib import Path
from typing import Any

from _common import alternate, begin, comparison, emit, fmt_time, median, workdir
from _deepstack import build

GOAL_S = 2.0
LATENCY_S = float(os.environ.get("SDS_BENCH_LATENCY_MS", "20")) / 1000


def slow_filesystem() -> tuple[Any, collections.Counter[str]]:
    """An in-memory fsspec filesystem whose every request costs LATENCY_S; and its request counts."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    counts: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def request(kind: str) -> None:
        with lock:
            counts[kind] += 1
        time.sleep(LATENCY_S)

    class SlowMemoryFileSystem(MemoryFileSystem):
        protocol = "slowmem"
        store: dict[str, Any] = {}  # noqa: RUF012 - fsspec's class-level store, one of its own
        pseudo_dirs = [""]  # noqa: RUF012
        delay = True

        @classmethod
        def _strip_protocol(cls, path: str) -> str:
            return str(super()._strip_protocol(path.removeprefix("slowmem://")))

        def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
            if self.delay:
                request("GET")
            return bytes(super().cat_file(path, start=start, end=end, **kwargs))

        def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
            if self.delay:
                request("LIST")
            return super().ls(path, detail=detail, **kwargs)

        def info(self, path: str, **kwargs: Any) -> Any:
            if self.delay:
                request("HEAD")
            return super().info(path, **kwargs)

    fsspec.register_implementation("slowmem", SlowMemoryFileSystem, clobber=True)
    return SlowMemoryFileSystem, counts


def upload(fs: Any, local: Path, prefix: str) -> int:
    count = 0
    for path in local.rglob("*"):
        if path.is_file():
            fs.pipe_file(f"{prefix}/{path.relative_to(local).as_posix()}", path.read_bytes())
            count += 1
    return count


def main() -> None:
    args = begin(__doc__)
    from sds_jupyter.stack import Stack, prefetch

    depth = 100 if args.quick else 500
    rounds = args.rounds or (2 if args.quick else 3)
    print(f"bench_deep_remote: resolving a {depth}-deep stack in object storage at {LATENCY_S * 1e3:.0f} ms a request")
    filesystem, counts = slow_filesystem()
    fs = filesystem()
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        filesystem.delay = False
        objects = upload(fs, stacks.datasets, "/bucket/deep/datasets")
        filesystem.delay = True
    print(f"  {objects} objects in the bucket")
    url = f"slowmem://bucket/deep/datasets/{stacks.deep_top.name}"
    seen: dict[str, dict[str, int]] = {}

    def resolve(label: str, after: int) -> None:
        prefetch.AFTER = after
        counts.clear()
        stack = Stack.resolve(url)
        assert stack.depth == depth
        seen[label] = dict(counts)

    ta, tb = alternate(lambda: resolve("A", 8), lambda: resolve("B", 10**9), rounds)
    result = comparison(
        f"resolve {depth}-deep remote, {LATENCY_S * 1e3:.0f} ms/request",
        "Stack.resolve, manifests fetched at once",
        "Stack.resolve, one round trip per manifest",
        ta,
        tb,
        goal=None,
        unit="resolve",
    )
    for label in ("A", "B"):
        print(f"  {label}: " + ", ".join(f"{seen[label].get(k, 0)} {k}" for k in ("GET", "HEAD", "LIST")))
    seconds = median(ta)
    met = seconds <= GOAL_S
    print(f"  resolve with prefetch: {fmt_time(seconds)}  goal <= {fmt_time(GOAL_S)}: {'met' if met else 'MISSED'}")
    emit("bench_deep_remote", [result], depth=depth, resolve_s=seconds, goal_s=GOAL_S, met=met, requests=seen)


if __name__ == "__main__":
    main()
