"""A chunk's gzip, made by ISA-L or by zlib in pieces on threads, is one member every reader inflates."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numcodecs  # type: ignore[import-untyped]
import numpy as np
import pytest

from sds_jupyter.stack.storage import gzipped
from sds_jupyter.stack.storage.gzipped import PIECE_BYTES, gzip_chunk

SIZES = [0, 1, PIECE_BYTES - 1, 2 * PIECE_BYTES, 2 * PIECE_BYTES + 7, 7 * PIECE_BYTES + 3]


def _payload(size: int) -> bytes:
    """Half random, half repeating: deflate both stores and compresses across the pieces."""
    rng = np.random.default_rng(size)
    random_part = rng.integers(0, 256, size // 2, dtype=np.uint8).tobytes()
    return random_part + (b"spatial" * (size // 7 + 1))[: size - len(random_part)]


@pytest.mark.parametrize("fast", [True, False], ids=["isal", "zlib-threads"])
@pytest.mark.parametrize("size", SIZES)
def test_one_gzip_member_that_every_reader_inflates(size: int, fast: bool) -> None:
    data = _payload(size)
    out = gzip_chunk(data, 1, fast=fast)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # one member only, header and trailer checked
    assert inflater.decompress(out) == data
    assert inflater.eof and inflater.unused_data == b"", "exactly one gzip member, nothing after it"
    assert gzip.decompress(out) == data
    assert bytes(numcodecs.GZip().decode(out)) == data  # what zarr's GzipCodec reads with


def test_a_corrupt_piece_fails_the_checksum() -> None:
    data = _payload(3 * PIECE_BYTES)
    out = bytearray(gzip_chunk(data, 1, fast=False))
    out[-8] ^= 0xFF  # the CRC-32 of the whole, in the trailer
    with pytest.raises((zlib.error, gzip.BadGzipFile, OSError)):
        gzip.decompress(bytes(out))


def test_a_float_column_written_as_a_version_writes_it_reads_back_with_zarr(tmp_path: Path) -> None:
    """A large random column, written as the format's numeric array, reads back equal with zarr."""
    import zarr

    from sds_jupyter.stack.write.encode import encode_element

    values = np.random.default_rng(3).random(200_000)
    zarr.open_group(tmp_path / "g.zarr", mode="w", zarr_format=3)
    for key, data in encode_element(values).items():  # the objects a version stores for the column
        target = tmp_path / "g.zarr" / "col" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    assert np.array_equal(zarr.open_group(tmp_path / "g.zarr", mode="r")["col"][:], values)


def test_without_isal_the_pieces_go_to_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzipped, "_fast_zlib", None)
    data = _payload(5 * PIECE_BYTES)
    assert gzip.decompress(gzip_chunk(data, 1)) == data
    assert gzipped._pool is not None, "the zlib path deflated the pieces on the pool"
