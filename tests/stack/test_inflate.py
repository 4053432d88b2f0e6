"""Issue 38 item 1: no chunk read through a stack inflates past what its array declares.

The arrays are written by zarr itself (Zarr v2 and v3, each codec zarr and numcodecs offer for
them); a bomb is a real chunk of 2^17 values under metadata edited to declare 1,000, which is
what a hostile download looks like: a small array whose one chunk inflates a thousandfold.
Each is refused by name before zarr decompresses it, and its honest neighbour reads as written.
"""

from __future__ import annotations

import json
import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs.numcodecs as zn
from kit.hostile import BOMB_BYTES, bomb_chunk, replace_chunk
from kit.stackkit import write_version
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec

import sds_jupyter as sds
from sds_jupyter.errors import InflationError, StackError
from sds_jupyter.limits import chunk_bound
from sds_jupyter.stack import Stack, StackStore
from sds_jupyter.stack.inflate import rule_from_metadata

pytest_plugins = ["kit.fixtures_service"]

#: Values in a bomb's one chunk (1 MiB of float64), and what its edited metadata declares.
BOMB_VALUES, DECLARED = 2**17, 1000

V2: dict[str, Callable[[], Any]] = {
    "gzip": lambda: numcodecs.GZip(5),
    "zlib": lambda: numcodecs.Zlib(5),
    "zstd": lambda: numcodecs.Zstd(3),
    "blosc": lambda: numcodecs.Blosc(),
    "lz4": lambda: numcodecs.LZ4(),
    "bz2": lambda: numcodecs.BZ2(),
    "lzma": lambda: numcodecs.LZMA(),
}
V3: dict[str, Callable[[], Any]] = {
    "gzip": lambda: GzipCodec(),
    "zstd": lambda: ZstdCodec(),
    "blosc": lambda: BloscCodec(),
    "zlib": lambda: zn.Zlib(),
    "lz4": lambda: zn.LZ4(),
    "bz2": lambda: zn.BZ2(),
}


def _declare(meta_path: Path, shape: int, chunk: int, inner: int | None = None) -> None:
    """Edit an array's own metadata document to declare ``shape`` values in chunks of ``chunk``."""
    doc = json.loads(meta_path.read_text())
    doc["shape"] = [shape]
    if doc["zarr_format"] == 2:
        doc["chunks"] = [chunk]
    else:
        doc["chunk_grid"]["configuration"]["chunk_shape"] = [chunk]
        if inner is not None:
            doc["codecs"][0]["configuration"]["chunk_shape"] = [inner]
    meta_path.write_text(json.dumps(doc))


def _stack_over(tmp_path: Path, fmt: int, write: Callable[[zarr.Group], None]) -> StackStore:
    """A stack whose base is the store ``write`` fills with zarr (a version above it, empty)."""
    root = zarr.open_group(tmp_path / "base-1111" / "store.zarr", mode="w", zarr_format=fmt)
    write(root)
    write_version(tmp_path, "top-2222", "cirro:::dataset:base-1111/store.zarr")
    return StackStore(Stack.resolve(tmp_path / "top-2222"))


def _honest_and_bomb(fmt: int, codec: str) -> Callable[[zarr.Group], None]:
    def write(root: zarr.Group) -> None:
        options = {"compressor": V2[codec]()} if fmt == 2 else {"compressors": [V3[codec]()]}
        root.create_array("honest", shape=(DECLARED,), chunks=(DECLARED,), dtype="f8", **options)[:] = np.arange(
            DECLARED
        )
        root.create_array("bomb", shape=(BOMB_VALUES,), chunks=(BOMB_VALUES,), dtype="f8", **options)[:] = 1.0
        folder = Path(str(root.store.root)) / "bomb"
        _declare(folder / (".zarray" if fmt == 2 else "zarr.json"), DECLARED, DECLARED)

    return write


@pytest.mark.parametrize(
    ("fmt", "codec"), [(2, codec) for codec in V2] + [(3, codec) for codec in V3], ids=lambda value: str(value)
)
def test_a_chunk_inflating_past_its_declared_size_is_refused_by_name(tmp_path: Path, fmt: int, codec: str) -> None:
    store = _stack_over(tmp_path, fmt, _honest_and_bomb(fmt, codec))
    group = zarr.open_group(store, mode="r")
    np.testing.assert_array_equal(group["honest"][:], np.arange(DECLARED))
    with pytest.raises(InflationError) as info:
        group["bomb"][:]
    message = str(info.value)
    assert "'bomb'" in message and f"{DECLARED * 8:,} bytes" in message and "\n" not in message


def test_a_sharded_array_reads_and_its_inflating_inner_chunks_are_refused(tmp_path: Path) -> None:
    def write(root: zarr.Group) -> None:
        honest = root.create_array("honest", shape=(4096,), shards=(4096,), chunks=(512,), dtype="f8")
        honest[:] = np.arange(4096)
        root.create_array("bomb", shape=(BOMB_VALUES,), shards=(BOMB_VALUES,), chunks=(2**14,), dtype="f8")[:] = 1.0
        # 8 inner chunks as written; declared: 8 inner chunks of 128 values (1 KiB each)
        _declare(Path(str(root.store.root)) / "bomb" / "zarr.json", 1024, 1024, inner=128)

    group = zarr.open_group(_stack_over(tmp_path, 3, write), mode="r")
    np.testing.assert_array_equal(group["honest"][:], np.arange(4096))
    np.testing.assert_array_equal(group["honest"][100:700], np.arange(100, 700))
    with pytest.raises(InflationError, match="'bomb'"):
        group["bomb"][:]
    # zarr 3.2+ reads part of a shard through get_ranges in a task group, so the refusal reaches the
    # caller inside an ExceptionGroup there (zarr 3.1 raises it bare): either way it is ours, alone.
    with pytest.raises((InflationError, ExceptionGroup)) as partial:
        group["bomb"][:10]
    refusals = partial.value.exceptions if isinstance(partial.value, ExceptionGroup) else (partial.value,)
    assert [type(e) for e in refusals] == [InflationError] and "'bomb'" in str(refusals[0])


def test_a_read_spanning_several_inner_chunks_of_a_shard_is_checked_chunk_by_chunk(tmp_path: Path) -> None:
    """Newer zarr (3.2+) coalesces the inner chunks a read needs into one ranged read of the shard.

    Seen with zarr 3.4.2: spatialdata 0.8 wrote X sharded, and a read of a few rows asked for one
    range holding several inner chunks, which the check measured as one oversized chunk and refused
    ("stored as 4,528,908 bytes, more than its 700,000 bytes of values could need"). Each inner
    chunk inside a range is checked on its own; a range that holds an inflating one is still refused.
    """
    values = np.random.default_rng(0).random(16 * 8192)  # incompressible: a range of 3 chunks is 3 chunks' size

    def write(root: zarr.Group) -> None:
        root.create_array("honest", shape=(16 * 8192,), shards=(16 * 8192,), chunks=(8192,), dtype="f8")[:] = values
        root.create_array("bomb", shape=(BOMB_VALUES,), shards=(BOMB_VALUES,), chunks=(2**14,), dtype="f8")[:] = 1.0
        _declare(Path(str(root.store.root)) / "bomb" / "zarr.json", 1024, 1024, inner=128)

    store = _stack_over(tmp_path, 3, write)
    group = zarr.open_group(store, mode="r")
    np.testing.assert_array_equal(group["honest"][100:33000], values[100:33000])  # inner chunks 0 to 4
    np.testing.assert_array_equal(group["honest"][:], values)
    # the store asked directly, as a coalescing zarr asks: one range over inner chunks 1 to 3
    shard = store.read_raw("honest/c/0")
    assert shard is not None
    index = np.frombuffer(shard[-16 * 16 - 4 : -4], dtype="<u8").reshape(-1, 2)  # 16 inner chunks, then a CRC
    start, end = int(index[1][0]), int(index[3][0] + index[3][1])

    assert len(store.read_for_zarr("honest/c/0", RangeByteRequest(start, end))) == end - start
    bomb_index = store.read_raw("bomb/c/0")
    assert bomb_index is not None
    with pytest.raises(InflationError, match="'bomb'"):
        store.read_for_zarr("bomb/c/0", RangeByteRequest(0, len(bomb_index) - 8 * 16 - 4))


def test_a_shard_read_a_range_at_a_time_reads_its_index_no_more_than_zarr_does(tmp_path: Path) -> None:
    """The index a range of a shard is checked by is remembered per stack, not read again for each range.

    zarr 3.1 reads a shard one inner chunk a range (3.2+ coalesces neighbours): each of those
    ranges read the shard's index again to check it, doubling the reads of a sharded array.
    """
    values = np.random.default_rng(1).random(16 * 8192)

    def write(root: zarr.Group) -> None:
        root.create_array("honest", shape=(16 * 8192,), shards=(8 * 8192,), chunks=(8192,), dtype="f8")[:] = values
        root.create_array("bomb", shape=(BOMB_VALUES,), shards=(BOMB_VALUES,), chunks=(2**14,), dtype="f8")[:] = 1.0
        _declare(Path(str(root.store.root)) / "bomb" / "zarr.json", 1024, 1024, inner=128)

    store = _stack_over(tmp_path, 3, write)
    raw_reads: list[str] = []
    zarr_reads: list[str] = []
    read_raw, read_for_zarr = store.read_raw, store.read_for_zarr

    def counting_raw(key: str, byte_range: Any = None) -> bytes | None:
        raw_reads.append(key)
        return read_raw(key, byte_range)

    def counting_zarr(key: str, byte_range: Any = None) -> bytes | None:
        zarr_reads.append(key)
        return read_for_zarr(key, byte_range)

    store.read_raw = counting_raw  # type: ignore[method-assign]
    store.read_for_zarr = counting_zarr  # type: ignore[method-assign]
    honest = zarr.open_group(store, mode="r")["honest"]
    for start in range(0, 16 * 8192, 8192):
        np.testing.assert_array_equal(honest[start : start + 8192], values[start : start + 8192])
    np.testing.assert_array_equal(honest[5000:70000], values[5000:70000])  # inner chunks of both shards
    chunk_reads = [key for key in raw_reads if "/c/" in key]
    assert len(chunk_reads) == len([key for key in zarr_reads if "/c/" in key]), (chunk_reads, zarr_reads)

    # a remembered index still checks every inner chunk of a range on its own
    bomb_shard = read_raw("bomb/c/0")
    assert bomb_shard is not None
    index = store.read_for_zarr("bomb/c/0", SuffixByteRequest(8 * 16 + 4))
    assert index is not None and len(index) == 8 * 16 + 4
    for _ in range(2):
        with pytest.raises(InflationError, match="'bomb'"):
            store.read_for_zarr("bomb/c/0", RangeByteRequest(0, len(bomb_shard) - 8 * 16 - 4))


def test_text_claiming_more_values_than_its_chunk_holds_is_refused(tmp_path: Path) -> None:
    """numcodecs' vlen decoders allocate the item count a chunk's first 4 bytes claim."""

    def write(root: zarr.Group) -> None:
        root.create_array("names", shape=(3,), chunks=(3,), dtype=str)[:] = np.array(["a", "b", "c"])
        root.create_array("bomb", shape=(50_000,), chunks=(50_000,), dtype=str)[:] = np.array(["x"] * 50_000)
        _declare(Path(str(root.store.root)) / "bomb" / "zarr.json", 3, 3)

    group = zarr.open_group(_stack_over(tmp_path, 3, write), mode="r")
    assert list(group["names"][:]) == ["a", "b", "c"]
    with pytest.raises(InflationError, match="claims 50,000 values; its chunks hold 3"):
        group["bomb"][:]


def test_a_chunk_stored_larger_than_its_values_is_refused_by_its_size(tmp_path: Path) -> None:
    def write(root: zarr.Group) -> None:
        root.create_array("raw", shape=(10,), chunks=(10,), dtype="f8", compressors=None)[:] = np.arange(10)
        chunk = Path(str(root.store.root)) / "raw" / "c" / "0"
        with chunk.open("ab") as grown:
            grown.truncate(512 * 1024 * 1024)  # sparse: no disk used, and never read

    group = zarr.open_group(_stack_over(tmp_path, 3, write), mode="r")
    tracemalloc.start()
    try:
        with pytest.raises(InflationError, match="stored as 536,870,912 bytes"):
            group["raw"][:]
        assert tracemalloc.get_traced_memory()[1] < 4 * 1024 * 1024
    finally:
        tracemalloc.stop()


def test_codecs_that_cannot_be_bounded_are_refused_and_pickle_never_runs() -> None:
    for codec, says in [("zfpy", "'zfpy', whose output cannot be bounded"), ("pickle", "never unpickles")]:
        rule = rule_from_metadata(
            "a", {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f8", "compressor": {"id": codec}}
        )
        assert rule is not None
        from sds_jupyter.stack.inflate import check_chunk

        with pytest.raises(InflationError, match=says):
            check_chunk(rule, "a/0", b"\x80\x04K\x01.")


def test_the_bound_is_the_declared_chunk_capped_by_the_array() -> None:
    """One rule (limits.chunk_bound): exact for fixed-size values; a chunk shape far past its
    array's shape is held to the array's size or MAX_CHUNK_BYTES; text gets its per-value room."""
    assert chunk_bound(1000, 1000, 8) == 8000
    assert chunk_bound(2**40, 10, 8) == 64 * 1024 * 1024
    assert chunk_bound(3, 3, None) == 64 * 1024 * 1024
    assert chunk_bound(2**20, 2**20, None) == 2**20 * 1028 + 4


# ------------------------------------------------------------------ through the library and the service


@pytest.fixture(scope="module")
def bombed(tmp_path_factory: pytest.TempPathFactory, demo_top: Path) -> Path:
    """A version on the demo whose obs column ``bomb`` is one gzip chunk inflating to BOMB_BYTES."""
    datasets = Path(shutil.copytree(demo_top.parent, tmp_path_factory.mktemp("bombed") / "datasets", symlinks=True))
    adata = sds.open_anndata(datasets / demo_top.name)
    adata.obs["bomb"] = np.zeros(adata.n_obs)
    top = Path(sds.save_version(datasets / demo_top.name, adata, title="Bombed"))
    return replace_chunk(top, "tables/table/obs/bomb/c/0", bomb_chunk(BOMB_BYTES))


def test_open_anndata_refuses_a_version_with_a_bomb_by_its_column(bombed: Path) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(InflationError, match=r"'tables/table/obs/bomb'") as info:
            sds.open_anndata(bombed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(info.value, StackError) and "\n" not in str(info.value)
    assert peak < 64 * 1024**2, f"opening held {peak:,} bytes"


@pytest.mark.parametrize(
    ("request_name", "params"),
    [
        ("color_values", {"figure": "fig-clusters", "column": "bomb"}),
        ("cell", {"figure": "fig-clusters", "index": 0}),
        ("compare", {"a": 0, "b": "Bombed"}),
    ],
)
def test_service_requests_on_a_bomb_answer_a_refusal_naming_the_column(
    bombed: Path, request_name: str, params: dict[str, Any]
) -> None:
    from sds_jupyter.service import StackService, dispatch

    service = StackService(bombed)
    with pytest.raises(StackError, match="obs/bomb") as info:
        dispatch(service, request_name, params)
    assert info.value.kind == "base"


def test_checking_reads_no_metadata_beyond_what_zarr_reads(tmp_path: Path) -> None:
    """The rules come from the metadata documents zarr reads through the store: reading 64 chunks
    of an array asks the store for no document more than zarr itself does (in object storage each
    would be a request)."""

    def write(root: zarr.Group) -> None:
        root.create_array("image", shape=(64, 64), chunks=(8, 8), dtype="u2")[:] = np.arange(4096).reshape(64, 64)

    store = _stack_over(tmp_path, 3, write)
    asked: list[str] = []
    read_raw = store.read_raw

    def counting(key: str, byte_range: Any = None) -> bytes | None:
        asked.append(key)
        return read_raw(key, byte_range)

    store.read_raw = counting  # type: ignore[method-assign]
    np.testing.assert_array_equal(zarr.open_group(store, mode="r")["image"][:], np.arange(4096).reshape(64, 64))
    documents = [key for key in asked if key.rsplit("/", 1)[-1] in ("zarr.json", ".zarray", ".zgroup")]
    assert len([key for key in asked if "/c/" in key]) == 64
    assert len(documents) == len(set(documents)) <= 3, documents


def _one_shard(real: tuple[int, ...], inner: tuple[int, ...]) -> tuple[dict[str, Any], bytes]:
    """A zarr-written array of ones in one shard of ``real`` values and ``inner`` chunks: its metadata, its shard."""
    written: dict[str, Any] = {}
    array = zarr.create_array(zarr.storage.MemoryStore(written), shape=real, shards=real, chunks=inner, dtype="f8")
    array[:] = 1.0
    (shard_key,) = (key for key in written if key != "zarr.json")
    return json.loads(written["zarr.json"].to_bytes()), bytes(written[shard_key].to_bytes())


@pytest.fixture(scope="module")
def shard_bombed(tmp_path_factory: pytest.TempPathFactory, demo_top: Path) -> Path:
    """Two versions on the demo: one whose obs column ``bomb`` and one whose image's finest level are each
    a real shard of inner chunks 2^14 and 4x the values their metadata declares (as many inner chunks)."""
    datasets = Path(shutil.copytree(demo_top.parent, tmp_path_factory.mktemp("shard") / "datasets", symlinks=True))
    adata = sds.open_anndata(datasets / demo_top.name)
    adata.obs["bomb"] = np.zeros(adata.n_obs)
    saved = Path(sds.save_version(datasets / demo_top.name, adata, title="Shard-bombed"))
    column = "tables/table/obs/bomb"
    overlay = saved / json.loads((saved / "layer.json").read_text())["overlay"]
    doc, shard = _one_shard((2 * 2**14,), (2**14,))
    declared = adata.n_obs + adata.n_obs % 2  # two declared inner chunks, as the shard holds
    doc["attributes"] = json.loads((overlay / column / "zarr.json").read_text())["attributes"]
    doc["shape"], doc["chunk_grid"]["configuration"]["chunk_shape"] = [adata.n_obs], [declared]
    doc["codecs"][0]["configuration"]["chunk_shape"] = [declared // 2]
    replace_chunk(saved, f"{column}/zarr.json", json.dumps(doc).encode())
    replace_chunk(saved, f"{column}/c/0", shard)
    level = "images/blobs_image/s0"
    image, shard = _one_shard((3, 1024, 1024), (3, 512, 512))
    image["shape"] = image["chunk_grid"]["configuration"]["chunk_shape"] = [3, 512, 512]
    image["codecs"][0]["configuration"]["chunk_shape"] = [3, 256, 256]
    files = {f"{level}/zarr.json": json.dumps(image).encode(), f"{level}/c/0/0/0": shard}
    write_version(datasets, "image-bomb-7777", f"cirro:::dataset:{saved.name}/layer.json", files)
    return datasets / "image-bomb-7777"


@pytest.mark.parametrize(
    ("request_name", "params", "array"),
    [
        ("cell", {"figure": "fig-clusters", "index": 0}, "obs/bomb"),
        ("color_values", {"figure": "fig-clusters", "column": "bomb"}, "obs/bomb"),
        ("image_tile", {"figure": "fig-clusters", "level": 0, "x": 0, "y": 0}, "blobs_image/s0"),
    ],
)
def test_a_sharded_bomb_is_one_refusal_at_the_service(
    shard_bombed: Path, request_name: str, params: dict[str, Any], array: str
) -> None:
    """Whether zarr raises our refusal bare (3.1) or inside a task group's ExceptionGroup (3.2+ reads
    parts of shards that way), the service's one door hands transports the refusal itself: a 400
    naming the array, not a 500."""
    from sds_jupyter.service import StackService, dispatch

    with pytest.raises(InflationError, match=array) as info:
        dispatch(StackService(shard_bombed), request_name, params)
    assert info.value.kind == "base" and "\n" not in str(info.value)


def test_sole_refusal_unwraps_groups_of_refusals_only() -> None:
    from sds_jupyter.errors import sole_refusal

    refusal = InflationError("a chunk of 'x' would inflate")
    assert sole_refusal(refusal) is refusal
    assert sole_refusal(ExceptionGroup("g", [ExceptionGroup("h", [refusal])])) is refusal
    mixed = ExceptionGroup("g", [refusal, OSError("disk")])
    assert sole_refusal(mixed) is mixed


@pytest.mark.parametrize("fmt", [2, 3])
def test_a_writer_reading_below_is_held_to_the_same_bound(tmp_path: Path, fmt: int) -> None:
    """A copy-on-write store (what a save reads and writes through) refuses a bomb below it by name, as the
    stack's own store does, and reads what it staged and what is honest below as they are."""
    from sds_jupyter.stack.write.cow import CopyOnWriteStore

    cow = CopyOnWriteStore(_stack_over(tmp_path, fmt, _honest_and_bomb(fmt, "gzip")))
    group = zarr.open_group(cow, mode="r+")
    np.testing.assert_array_equal(group["honest"][:], np.arange(DECLARED))
    with pytest.raises(InflationError, match="'bomb'"):
        group["bomb"][:]
    group.create_array("fresh", shape=(BOMB_VALUES,), chunks=(BOMB_VALUES,), dtype="f8")[:] = 2.0
    np.testing.assert_array_equal(group["fresh"][:], np.full(BOMB_VALUES, 2.0))


@pytest.mark.parametrize(
    ("request_name", "params"),
    [
        ("color_values", {"figure": "fig-clusters", "column": "bomb"}),
        ("image_tile", {"figure": "fig-clusters", "level": 0, "x": 0, "y": 0}),
    ],
)
def test_a_bomb_over_the_widget_comm_is_a_refusal_and_the_widget_answers_on(
    shard_bombed: Path, recorded_messages: list[dict[str, Any]], request_name: str, params: dict[str, Any]
) -> None:
    """The notebook's transport: a bombed column or image level is answered as the refusal (kind
    ``base``, naming the array), and the same widget goes on answering the next request."""
    from kit.widget import deliver, widget_replies

    from sds_jupyter.widget import VersionBrowser

    browser = VersionBrowser(shard_bombed, namespace={})
    deliver(browser, {"type": "request", "id": 7, "name": request_name, "params": params})
    deliver(browser, {"type": "request", "id": 8, "name": "history", "params": {}})
    refused, answered = widget_replies(recorded_messages)
    assert (refused["id"], refused["ok"], refused["error"]["kind"]) == (7, False, "base"), refused
    assert "obs/bomb" in refused["error"]["message"] or "blobs_image/s0" in refused["error"]["message"]
    assert (answered["id"], answered["ok"]) == (8, True) and answered["data"], answered
