"""Text chunks through zstd, blosc and lz4: checked for their value count, decompressed once.

Why: numcodecs' vlen decoders allocate the value count a text chunk's first four decoded bytes
claim, so the stack's store decodes such a chunk to check it (``inflate.bounded_decode``); zarr
then decoding the stored chunk again would decompress every text chunk twice. These tests read
real zarr arrays written by zarr through a stack and count, through the real numcodecs codecs,
how often each stored chunk is decompressed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs.numcodecs as zn
from kit.stackkit import write_version
from numcodecs.compat import ensure_bytes
from zarr.codecs import BloscCodec, ZstdCodec

from sds_jupyter.errors import InflationError
from sds_jupyter.stack import Stack, StackStore

CODECS: dict[tuple[int, str], Callable[[], Any]] = {
    (2, "zstd"): lambda: numcodecs.Zstd(3),
    (2, "blosc"): lambda: numcodecs.Blosc(),
    (2, "lz4"): lambda: numcodecs.LZ4(),
    (3, "zstd"): lambda: ZstdCodec(),
    (3, "blosc"): lambda: BloscCodec(),
    (3, "lz4"): lambda: zn.LZ4(),
}
#: The real codec classes both the check and zarr (v2 and v3 alike) decompress with.
REAL = (numcodecs.Zstd, numcodecs.Blosc, numcodecs.LZ4)
NAMES = np.array([f"cell-{i}-" + "ab" * (i % 5) for i in range(3_000)], dtype=object)


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Counter[bytes]:
    """Every input the real codecs' ``decode`` is given, counted (each call goes on to the codec)."""
    inputs: Counter[bytes] = Counter()
    for codec in REAL:

        def counting(self: Any, buf: Any, out: Any = None, _real: Any = codec.decode) -> Any:
            inputs[ensure_bytes(buf)] += 1
            return _real(self, buf, out)

        monkeypatch.setattr(codec, "decode", counting)
    return inputs


def _text_stack(tmp_path: Path, fmt: int, codec: str, values: np.ndarray, chunk: int) -> tuple[zarr.Group, list[bytes]]:
    """A stack over a base holding text array ``t`` written by zarr; its stored chunks' bytes."""
    root = zarr.open_group(tmp_path / "base-1111" / "store.zarr", mode="w", zarr_format=fmt)
    compressor = CODECS[fmt, codec]()
    options = {"compressor": compressor} if fmt == 2 else {"compressors": [compressor]}
    root.create_array("t", shape=values.shape, chunks=(chunk,), dtype=str, **options)[:] = values
    folder = tmp_path / "base-1111" / "store.zarr" / "t"
    chunks = [
        p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith((".z", "zarr"))
    ]
    write_version(tmp_path, "top-2222", "cirro:::dataset:base-1111/store.zarr")
    return zarr.open_group(StackStore(Stack.resolve(tmp_path / "top-2222")), mode="r"), chunks


@pytest.mark.parametrize(("fmt", "codec"), list(CODECS), ids=lambda value: str(value))
def test_a_text_chunk_is_checked_and_decompressed_once(
    tmp_path: Path, fmt: int, codec: str, decoded: Counter[bytes]
) -> None:
    group, chunks = _text_stack(tmp_path, fmt, codec, NAMES, 1_000)
    assert len(chunks) == 3
    assert list(group["t"][:]) == list(NAMES)
    assert [decoded[chunk] for chunk in chunks] == [1, 1, 1]
    assert list(group["t"][1_500:1_600]) == list(NAMES[1_500:1_600])  # a second read, one chunk
    assert [decoded[chunk] for chunk in chunks] == [1, 2, 1]


@pytest.mark.parametrize(("fmt", "codec"), list(CODECS), ids=lambda value: str(value))
def test_a_text_chunk_claiming_more_values_is_still_refused(tmp_path: Path, fmt: int, codec: str) -> None:
    """The chunk decoded once for its check is the one checked: a count past the chunk's is refused."""
    group, _ = _text_stack(tmp_path, fmt, codec, np.array(["x"] * 5_000, dtype=object), 5_000)
    meta = tmp_path / "base-1111" / "store.zarr" / "t" / (".zarray" if fmt == 2 else "zarr.json")
    doc = json.loads(meta.read_text())
    doc["shape"] = [3]
    if fmt == 2:
        doc["chunks"] = [3]
    else:
        doc["chunk_grid"]["configuration"]["chunk_shape"] = [3]
    meta.write_text(json.dumps(doc))
    group = zarr.open_group(StackStore(Stack.resolve(tmp_path / "top-2222")), mode="r")
    with pytest.raises(InflationError, match="claims 5,000 values; its chunks hold 3"):
        group["t"][:]
