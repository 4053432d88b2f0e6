"""The compact zip index: lookups and listings agree with zipfile, names are checked, the cache is never stale."""

from __future__ import annotations

import functools
import gc
import io
import os
import struct
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sds_jupyter.errors import BaseStoreError, StackError, UnsafePathError
from sds_jupyter.stack.storage import zipindex
from sds_jupyter.stack.storage.location import location_of
from sds_jupyter.stack.storage.sources import ZipSource

# Names a store may hold that stress a byte-wise index: unicode, spaces, a newline, a sibling
# that sorts between a file and its folder ("a" < "a-b" < "a/x"), and the central directory's
# own signature inside a name (which makes the fast parser fall back to walking entry by entry).
ODD = {
    "zarr.json": b'{"zarr_format": 3, "node_type": "group"}',
    "a": b"file a",
    "a-b": b"file a-b",
    "a/x": b"x under a",
    "a/y/z": b"deep",
    "caf\u00e9/\u6570\u636e": b"unicode",
    "with space/new\nline": b"newline",
    "t/c/0/0": b"\x00" * 10,
    "t/c/0/1": b"\x01" * 3000,
}


def write_zip(path: Path, members: dict[str, bytes], *, deflate: bool = False, folders: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as archive:
        if folders:
            for folder in sorted({k.rsplit("/", 1)[0] + "/" for k in members if "/" in k}):
                archive.writestr(zipfile.ZipInfo(folder), b"")
        for key, data in members.items():
            archive.writestr(key, data)
    return path


def expected_children(keys: list[str], prefix: str) -> dict[str, bool]:
    lead = f"{prefix}/" if prefix else ""
    found: dict[str, bool] = {}
    for key in keys:
        if key.startswith(lead):
            rest = key[len(lead) :]
            name, _, below = rest.partition("/")
            found[name] = found.get(name, False) or bool(below) or "/" in rest
    return found


def check_agrees(source: ZipSource, members: dict[str, bytes]) -> None:
    keys = sorted(members, key=lambda k: k.encode())
    assert list(source.keys()) == keys
    for key, data in members.items():
        assert source.exists(key) and source.size(key) == len(data)
        assert source.read(key) == data
    assert not source.exists("a/") and not source.exists("nothing") and source.read("a/y") is None
    for prefix in ["", "a", "a/", "a/y", "t/c", "caf\u00e9", "zz"]:
        assert list(source.keys(prefix)) == [k for k in keys if k.startswith(prefix)]
    for folder in ["", "a", "a/y", "t", "t/c", "t/c/0", "caf\u00e9", "with space", "nothing"]:
        assert dict(source.children(folder)) == expected_children(keys, folder)


@pytest.mark.parametrize("deflate", [False, True])
@pytest.mark.parametrize("folders", [False, True])
def test_the_index_answers_as_zipfile_does(tmp_path: Path, deflate: bool, folders: bool) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", ODD, deflate=deflate, folders=folders)
    check_agrees(ZipSource(location_of(path)), ODD)


def test_both_parsers_agree_and_a_signature_inside_a_name_is_no_entry(tmp_path: Path) -> None:
    members = {**ODD, "t/PK\x01\x02name": b"tricky"}
    path = write_zip(tmp_path / "s.zarr.zip", members)
    directory_start = zipfile.ZipFile(path).start_dir
    directory = path.read_bytes()[directory_start:-22]
    assert zipindex._parse_fast(directory) is None  # the stray signature breaks the chain
    check_agrees(ZipSource(location_of(path)), members)
    plain = write_zip(tmp_path / "plain.zarr.zip", ODD)
    directory = plain.read_bytes()[zipfile.ZipFile(plain).start_dir : -22]
    fast, walked = zipindex._parse_fast(directory), zipindex._parse_walk(directory)
    assert fast is not None and fast.names == walked.names
    for field in fast._fields[1:]:
        assert getattr(fast, field).tolist() == getattr(walked, field).tolist(), field


def test_a_store_zipped_as_its_folder_is_keyed_from_that_folder(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", {f"s.zarr/{k}": v for k, v in ODD.items()})
    check_agrees(ZipSource(location_of(path)), ODD)


def test_data_before_the_zip_is_allowed_for(tmp_path: Path) -> None:
    inner = write_zip(tmp_path / "inner.zip", ODD).read_bytes()
    path = tmp_path / "s.zarr.zip"
    path.write_bytes(b"#!/bin/sh prefix\n" * 10 + inner)
    check_agrees(ZipSource(location_of(path)), ODD)


def _as_zip64(data: bytes) -> bytes:
    """The zip with every central entry's sizes and offset moved into a zip64 extra field."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    start, end_at = archive.start_dir, data.rfind(b"PK\x05\x06")
    directory, out, at = data[start:end_at], bytearray(), 0
    while at < len(directory):
        fixed = bytearray(directory[at : at + 46])
        name_length, extra_length, comment_length = struct.unpack_from("<3H", fixed, 28)
        csize, usize = struct.unpack_from("<2L", fixed, 20)
        (offset,) = struct.unpack_from("<L", fixed, 42)
        body = directory[at + 46 : at + 46 + name_length + extra_length + comment_length]
        name, rest = body[:name_length], body[name_length:]
        extra = struct.pack("<HH3Q", 1, 24, usize, csize, offset)
        struct.pack_into("<2L", fixed, 20, 0xFFFFFFFF, 0xFFFFFFFF)
        struct.pack_into("<L", fixed, 42, 0xFFFFFFFF)
        struct.pack_into("<H", fixed, 30, len(extra) + extra_length)
        out += fixed + name + extra + rest
        at += 46 + len(body)
    end = bytearray(data[end_at : end_at + 22])
    struct.pack_into("<L", end, 12, len(out))
    return data[:start] + bytes(out) + bytes(end)


def test_zip64_sizes_and_offsets_are_read_from_the_extra_field(tmp_path: Path) -> None:
    raw = _as_zip64(write_zip(tmp_path / "plain.zip", ODD).read_bytes())
    path = tmp_path / "s.zarr.zip"
    path.write_bytes(raw)
    with zipfile.ZipFile(path) as archive:  # zipfile reads it too: the file is a valid zip64
        assert archive.read("a/x") == b"x under a"
    check_agrees(ZipSource(location_of(path)), ODD)


def test_an_empty_zip_opens_with_no_keys_and_junk_is_refused(tmp_path: Path) -> None:
    zipfile.ZipFile(tmp_path / "empty.zip", "w").close()
    empty = ZipSource(location_of(tmp_path / "empty.zip"))
    assert list(empty.keys()) == [] and not empty.exists("zarr.json") and list(empty.children("")) == []
    (tmp_path / "junk.zip").write_bytes(b"no zip here " * 100)
    with pytest.raises(BaseStoreError, match="not a readable zip file"):
        ZipSource(location_of(tmp_path / "junk.zip"))
    whole = write_zip(tmp_path / "s.zarr.zip", ODD).read_bytes()
    (tmp_path / "tail.zip").write_bytes(whole[len(whole) // 2 :])  # the directory without the data
    with pytest.raises(BaseStoreError, match="not a readable zip file"):
        ZipSource(location_of(tmp_path / "tail.zip"))


@pytest.mark.parametrize("name", ["../up", "/abs", "a//b", "a/./b", "a/..", ".", "back\\slash"])
def test_an_unsafe_member_name_is_refused(tmp_path: Path, name: str) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", {"zarr.json": b"{}", name: b"x"})
    with pytest.raises(UnsafePathError, match="zip member name"):
        ZipSource(location_of(path))


def test_a_duplicated_member_is_listed_once_and_refused(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", {"zarr.json": b"{}", "t/0": b"first"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("t/0", b"second")
    source = ZipSource(location_of(path))
    assert list(source.keys()) == ["t/0", "zarr.json"]
    assert source.problems == {"t/0": "appears more than once in the zip"}
    with pytest.raises(BaseStoreError, match="more than once"):
        source.read("t/0")


@pytest.fixture
def cache_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache indexes of zips written a moment ago (tests cannot wait out FRESH_SECONDS)."""
    monkeypatch.setattr(zipindex, "FRESH_SECONDS", 0.0)


@pytest.fixture
def indexes() -> zipindex.ZipIndexes:
    """A cache of zip indexes of this test's own (the caller owns it; no module holds one)."""
    return zipindex.ZipIndexes()


def test_a_zip_written_a_moment_ago_is_not_cached(tmp_path: Path, indexes: zipindex.ZipIndexes) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", ODD)
    assert (
        ZipSource(location_of(path), indexes=indexes)._index is not ZipSource(location_of(path), indexes=indexes)._index
    )


@pytest.mark.usefixtures("cache_at_once")
def test_reopening_an_unchanged_zip_reuses_its_index(tmp_path: Path, indexes: zipindex.ZipIndexes) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", ODD)
    first, second = ZipSource(location_of(path), indexes=indexes), ZipSource(location_of(path), indexes=indexes)
    assert first._index is second._index
    assert ZipSource(location_of(tmp_path / "." / "s.zarr.zip"), indexes=indexes)._index is first._index


@pytest.mark.usefixtures("cache_at_once")
def test_a_zip_replaced_with_one_of_the_same_size_is_read_again(tmp_path: Path, indexes: zipindex.ZipIndexes) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", {"zarr.json": b"{}", "t/aaaa": b"1"})
    stale = ZipSource(location_of(path), indexes=indexes)
    assert ZipSource(location_of(path), indexes=indexes)._index is stale._index  # cached
    info = os.stat(path)
    # Same size, names of the same length, a new mtime: the old index would serve no "t/bbbb".
    replacement = write_zip(tmp_path / "next" / "s.zarr.zip", {"zarr.json": b"{}", "t/bbbb": b"2"})
    assert replacement.stat().st_size == info.st_size
    os.replace(replacement, path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    fresh = ZipSource(location_of(path), indexes=indexes)
    assert fresh._index is not stale._index and list(fresh.keys()) == ["t/bbbb", "zarr.json"]
    assert fresh.read("t/bbbb") == b"2"


@pytest.mark.usefixtures("cache_at_once")
def test_a_zip_rewritten_in_place_with_its_mtime_put_back_is_read_again(
    tmp_path: Path, indexes: zipindex.ZipIndexes
) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", {"zarr.json": b"{}", "t/aaaa": b"1"})
    stale = ZipSource(location_of(path), indexes=indexes)
    assert ZipSource(location_of(path), indexes=indexes)._index is stale._index  # cached
    info = os.stat(path)
    data = write_zip(tmp_path / "next.zip", {"zarr.json": b"{}", "t/bbbb": b"2"}).read_bytes()
    with open(path, "r+b") as handle:  # same inode, same size
        handle.write(data)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # the mtime set back by hand
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (info.st_ino, info.st_size, info.st_mtime_ns)
    fresh = ZipSource(location_of(path), indexes=indexes)
    assert fresh._index is not stale._index and fresh.read("t/bbbb") == b"2"


@pytest.mark.usefixtures("cache_at_once")
def test_a_zip_opened_without_indexes_is_read_each_time_and_kept_nowhere(
    tmp_path: Path, indexes: zipindex.ZipIndexes
) -> None:
    path = write_zip(tmp_path / "s.zarr.zip", ODD)
    assert ZipSource(location_of(path))._index is not ZipSource(location_of(path))._index
    kept = ZipSource(location_of(path), indexes=indexes)
    assert len(indexes) == 1 and ZipSource(location_of(path))._index is not kept._index
    other = zipindex.ZipIndexes()
    assert ZipSource(location_of(path), indexes=other)._index is not kept._index  # two owners share nothing
    indexes.clear()
    assert len(indexes) == 0 and len(other) == 1


@pytest.mark.usefixtures("cache_at_once")
def test_the_zip_indexes_keep_at_most_their_limit(tmp_path: Path) -> None:
    indexes = zipindex.ZipIndexes(limit=2)
    paths = [write_zip(tmp_path / f"s{n}.zarr.zip", ODD) for n in range(3)]
    first = ZipSource(location_of(paths[0]), indexes=indexes)
    for path in paths[1:]:
        ZipSource(location_of(path), indexes=indexes)
    assert len(indexes) == 2  # the least recently used went
    assert ZipSource(location_of(paths[0]), indexes=indexes)._index is not first._index
    assert zipindex.ZipIndexes().limit == zipindex.CACHED_INDEXES


def test_the_index_of_fifty_thousand_members_stays_small(tmp_path: Path) -> None:
    count = 50_000
    path = tmp_path / "s.zarr.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("zarr.json", b"{}")
        for number in range(count):
            archive.writestr(f"image/0/c/{number // 1000}/{number % 1000}", b"x")
    gc.collect()
    tracemalloc.start()
    try:
        source = ZipSource(location_of(path))
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A million members within 100 MiB is 105 bytes a member; zipfile's ZipInfo alone is ~700.
    assert retained < 64 * count, f"{retained / count:.0f} bytes per member"
    assert source._index.nbytes() < 48 * count
    assert source.read("image/0/c/49/999") == b"x" and source.size("image/0/c/7/7") == 1
    assert list(source.children("image/0/c/5"))[:3] == [("0", False), ("1", False), ("10", False)]
    assert sum(1 for _ in source.children("image/0/c")) == 50


def test_a_zip_source_pickles_with_its_index(tmp_path: Path) -> None:
    import pickle

    path = write_zip(tmp_path / "s.zarr.zip", ODD)
    copy = pickle.loads(pickle.dumps(ZipSource(location_of(path))))
    check_agrees(copy, ODD)


@functools.cache
def _small_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, data in ODD.items():
            archive.writestr(key, data)
    return buffer.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), min_size=1, max_size=6))
def test_a_corrupted_directory_is_refused_or_read_never_crashes(tmp_path: Path, flips: list[tuple[int, int]]) -> None:
    raw = bytearray(_small_zip())
    start = zipfile.ZipFile(io.BytesIO(bytes(raw))).start_dir
    for where, value in flips:
        raw[start + where % (len(raw) - start)] = value
    path = tmp_path / "fuzz.zarr.zip"
    path.write_bytes(bytes(raw))
    try:
        source = ZipSource(location_of(path))
    except StackError:
        return
    for key in list(source.keys())[:20]:
        try:
            data = source.read(key)
        except StackError:
            continue
        assert data is None or len(data) == source.size(key)
