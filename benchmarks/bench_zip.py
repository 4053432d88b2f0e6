"""Opening a ``.zarr.zip`` base of many members vs zarr's ``ZipStore``, and the index's memory.

Data: a Zarr v3 store zipped (stored, as zarr's ``ZipStore`` writes it) with one
array of 1 x 1 chunks, so the zip holds N members (``x/c/<row>/<column>``) and
two metadata documents: 100,000 by default, 1,000,000 with ``--full``, 20,000
with ``--quick``. The zip is written directly (one pass, no ``zipfile``) so that
a million members take seconds to build.

A (open): ``zarr.open_group(open_stack(zip))`` with the zip index cache emptied
   first: read and check the central directory, build the index, read the root.
B: ``zarr.open_group(ZipStore(zip, mode="r"))``. Goal A / B <= 1.
A (reopen): the same with the index cached (the zip unchanged). Goal A / B <= 0.1.
Memory: the bytes the index retains (tracemalloc), at N, and per member times
1,000,000. Goal at 1,000,000 members: <= 100 MiB (printed, not a ratio).
"""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from pathlib import Path

from _common import alternate, begin, comparison, emit, workdir

OPEN_GOAL = 1.0
REOPEN_GOAL = 0.1
MEMORY_GOAL_MIB = 100.0
COLUMNS = 100
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")


def write_zip(path: Path, members: int) -> None:
    """A stored zip of a v3 store with ``members`` one-byte chunks (zip64 end records past 65,535)."""
    rows = members // COLUMNS
    array = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [rows, COLUMNS],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "attributes": {},
    }
    root = {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {},
        "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {"x": array}},
    }
    files = [("zarr.json", json.dumps(root).encode()), ("x/zarr.json", json.dumps(array).encode())]
    chunk = b"\x07"
    chunk_crc = zlib.crc32(chunk)
    local, central, offset = bytearray(), bytearray(), 0

    def add(name: bytes, data: bytes, crc: int) -> None:
        nonlocal offset
        size, date = len(data), 0x21  # 1980-01-01
        header = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, date, crc, size, size, len(name), 0)
        local.extend(header + name + data)
        entry = (
            b"PK\x01\x02",
            20,
            3,
            20,
            0,
            0,
            0,
            0,
            date,
            crc,
            size,
            size,
            len(name),
            0,
            0,
            0,
            0,
            0o644 << 16,
            offset,
        )
        central.extend(_CENTRAL.pack(*entry) + name)
        offset += len(header) + len(name) + size

    for name, data in files:
        add(name.encode(), data, zlib.crc32(data))
    for row in range(rows):
        for column in range(COLUMNS):
            add(f"x/c/{row}/{column}".encode(), chunk, chunk_crc)
    count = rows * COLUMNS + len(files)
    with open(path, "wb") as out:
        out.write(local)
        out.write(central)
        end64_at = len(local) + len(central)
        out.write(struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(central), len(local)))
        out.write(struct.pack("<4sLQL", b"PK\x06\x07", 0, end64_at, 1))
        small = min(count, 0xFFFF)
        out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, small, small, len(central), len(local), 0))


def main() -> None:
    args = begin(__doc__)
    import gc
    import tracemalloc

    import zarr
    from zarr.storage import ZipStore

    from sds_jupyter.stack import open_stack
    from sds_jupyter.stack.caches import default_caches
    from sds_jupyter.stack.storage import zipindex
    from sds_jupyter.stack.storage.location import location_of
    from sds_jupyter.stack.storage.sources import ZipSource

    members = 1_000_000 if args.full else (20_000 if args.quick else 100_000)
    rounds = args.rounds or (3 if args.quick or args.full else 7)
    print(f"bench_zip: a .zarr.zip of {members:,} members, the stack vs zarr's ZipStore")
    with workdir(args.keep) as root:
        path = root / "datasets" / "base" / "s.zarr.zip"
        path.parent.mkdir(parents=True)
        start = time.perf_counter()
        write_zip(path, members)
        print(f"  built in {time.perf_counter() - start:.1f} s ({os.path.getsize(path) / 2**20:.0f} MiB)")
        zipindex.FRESH_SECONDS = 0.0  # the zip was written a moment ago; nothing rewrites it here

        def open_ours() -> None:
            store = open_stack(path)
            assert zarr.open_group(store, mode="r")["x"].shape == (members // COLUMNS, COLUMNS)
            store.close()

        def open_zipstore() -> None:
            store = ZipStore(path, mode="r")
            assert zarr.open_group(store, mode="r")["x"].shape == (members // COLUMNS, COLUMNS)
            store.close()

        results = []
        ta, tb = alternate(open_ours, open_zipstore, rounds, before_a=default_caches().zip_indexes.clear)
        results.append(
            comparison(
                f"zip open, {members:,} members",
                "open_group(open_stack(zip)), cold",
                'open_group(ZipStore(zip, mode="r"))',
                ta,
                tb,
                goal=OPEN_GOAL,
                unit="open",
            )
        )
        open_ours()  # fills the cache
        ta, tb = alternate(open_ours, open_zipstore, rounds)
        results.append(
            comparison(
                f"zip reopen, {members:,} members",
                "open_group(open_stack(zip)), index cached",
                'open_group(ZipStore(zip, mode="r"))',
                ta,
                tb,
                goal=REOPEN_GOAL,
                unit="open",
            )
        )

        default_caches().zip_indexes.clear()
        gc.collect()
        tracemalloc.start()
        source = ZipSource(location_of(path))
        retained, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert source.size("x/c/0/0") == 1
        per_member = retained / members
        at_million = per_member * 1_000_000 / 2**20
        met = at_million <= MEMORY_GOAL_MIB
        print(
            f"  index memory: {retained / 2**20:.1f} MiB retained ({per_member:.0f} bytes a member; "
            f"peak while building {peak / 2**20:.0f} MiB); at 1,000,000 members {at_million:.0f} MiB"
            f"{' (measured)' if members == 1_000_000 else ' (scaled)'}; goal <= {MEMORY_GOAL_MIB:g} MiB: "
            + ("met" if met else "MISSED")
        )
    emit(
        "bench_zip",
        results,
        members=members,
        index_bytes=retained,
        index_peak_bytes=peak,
        index_mib_at_million=at_million,
        memory_met=met,
    )


if __name__ == "__main__":
    main()
