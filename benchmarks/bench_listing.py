"""Opening a version whose manifest lists 1,000,000 files (100,000 unless ``--full``).

Data: a small folder base and one version on it whose ``layer.json`` lists N
files (keys as a store's chunks are named: ``tables/table/layers/l<i>/c/<j>/0``,
about 40 characters each; the overlay files themselves are not written: opening
reads only the manifest).

A: ``open_stack(top)`` with the process's caches emptied: read, check every key,
   build the layer index. Its peak memory is measured in a separate run
   (``tracemalloc``: Python's allocations, what the open adds).
B: reading and ``json.loads`` of the manifest (the least any reader does).

Goals at 1,000,000 files: A <= 1 s and peak memory <= 150 MiB; at 100,000 the
same goals scaled down tenfold (0.1 s, 15 MiB). Also timed: the first listing
(``keys_raw``) after the open, which builds the listing index.
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path

from _common import alternate, begin, comparison, emit, settle, workdir

GOAL_S_PER_MILLION = 1.0
GOAL_MIB_PER_MILLION = 150.0


def write(datasets: Path, n: int) -> Path:
    base = datasets / "base" / "store.zarr"
    base.mkdir(parents=True)
    (base / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    top = datasets / "big"
    top.mkdir()
    files = [{"key": f"tables/table/layers/l{i // 1000}/c/{i % 1000}/0", "size": 4096 + i % 97} for i in range(n)]
    manifest = {
        "format": "spatial-data-studio.layer",
        "format_version": 1,
        "parent": "cirro:::dataset:base/store.zarr",
        "title": f"{n} files",
        "overlay": "overlay",
        "files": files,
        "deleted": [],
        "changes": [{"op": "set-layer", "table": "table", "key": "l"}],
    }
    (top / "layer.json").write_text(json.dumps(manifest))
    return top


def main() -> None:
    sys.argv, full = [a for a in sys.argv if a != "--full"], "--full" in sys.argv
    args = begin(__doc__)
    from sds_jupyter.stack import open_stack
    from sds_jupyter.stack.caches import default_caches

    n = 1_000_000 if full else (20_000 if args.quick else 100_000)
    scale = n / 1_000_000
    rounds = args.rounds or (3 if args.quick else 7)
    print(f"bench_listing: open a version listing {n:,} files (--full: 1,000,000)")
    with workdir(args.keep) as root:
        datasets = root / "datasets"
        top = write(datasets, n)
        manifest = top / "layer.json"
        print(f"  the manifest: {manifest.stat().st_size / 2**20:.1f} MiB")
        settle()

        def forget() -> None:
            default_caches().stacks.clear()
            default_caches().manifests.clear()

        def open_it() -> None:
            open_stack(top)

        def loads() -> None:
            json.loads(manifest.read_bytes())

        forget()
        store = open_stack(top)
        assert store.stack.versions[0].manifest.files[-1].key.endswith("/0")
        del store

        results = []
        ta, tb = alternate(open_it, loads, rounds, before_a=forget)
        results.append(
            comparison(
                f"open, {n:,} files listed",
                "open_stack(top), caches emptied",
                "read + json.loads of the manifest",
                ta,
                tb,
                goal=None,
                unit="open",
                goal_seconds=GOAL_S_PER_MILLION * scale,
            )
        )

        forget()
        tracemalloc.start()
        store = open_stack(top)
        _, peak = tracemalloc.get_traced_memory()
        kept, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        goal_mib = GOAL_MIB_PER_MILLION * scale
        met = peak / 2**20 <= goal_mib
        print(
            f"  memory of the open (tracemalloc): peak {peak / 2**20:.1f} MiB, kept {kept / 2**20:.1f} MiB; "
            f"goal peak <= {goal_mib:g} MiB: {'met' if met else 'MISSED'}"
        )
        import time

        start = time.perf_counter()
        listed = sum(1 for _ in store.keys_raw("tables/"))
        first_list = time.perf_counter() - start
        print(f"  first listing after the open: {listed:,} keys in {first_list * 1e3:.0f} ms")
    emit(
        "bench_listing",
        results,
        files=n,
        peak_mib=peak / 2**20,
        kept_mib=kept / 2**20,
        goal_mib=goal_mib,
        memory_met=met,
        first_list_s=first_list,
    )


if __name__ == "__main__":
    main()
