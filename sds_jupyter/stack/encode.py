"""Encoding a value as a version stores it: anndata's encoding, in the format's layout.

Each op encodes its value with anndata (so the encodings are anndata's own), every
array as Zarr v3 in a single chunk with gzip. A plain array or a categorical (what
obs columns and most obsm entries are) is written so in one pass, its chunks named
to anndata; anything else anndata writes with its own chunks, which are then
re-encoded in the format's layout (a second pass, over small values in practice).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import zarr
from zarr.abc.store import Store
from zarr.codecs import GzipCodec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from sds_jupyter.stack.gzipped import gzip_chunk

__all__ = ["STUDIO_KEY", "encode_element", "no_auto_sharding", "studio_path"]

STUDIO_KEY = "spatial_data_studio"

#: gzip's fastest level: about 2.5 times quicker than zarr's default (5) on numeric
#: columns, for objects some 15 % larger; any level reads the same.
GZIP_LEVEL = 1

#: numpy's mark for native byte order, where native is little-endian (zarr's bytes codec here)
_NATIVE = "=" if sys.byteorder == "little" else "<"


def studio_path(table: str, *parts: str) -> str:
    """Store path of ``uns["spatial_data_studio"][parts...]`` in a table."""
    return "/".join([f"tables/{table}/uns/{STUDIO_KEY}", *parts])


def encode_element(value: Any) -> dict[str, bytes]:
    """Objects of ``value`` as anndata encodes it, keyed relative to the element.

    Arrays are rewritten as Zarr v3 with one chunk and gzip (bytes, or vlen-utf8
    for strings), the layout the format asks of every version's arrays.
    """
    import anndata  # heavy: loaded when a version is first written

    direct = _encode_direct(anndata, value)
    if direct is not None:
        return direct
    return _encode_rechunked(anndata, value)


def _encode_rechunked(anndata: Any, value: Any) -> dict[str, bytes]:
    """Any value: anndata's encoding uncompressed, then every array copied in one gzip chunk."""
    written = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    _write_elem(anndata, written, value)
    target = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    _copy_rechunked(written["e"], target, "e")
    return _objects(target.store)


def _encode_direct(anndata: Any, value: Any) -> dict[str, bytes] | None:
    """A non-empty numeric array or a categorical encoded in one pass, or None for other values.

    The second pass of ``_encode_rechunked`` (read back, compress, write again) costs
    more than the encoding itself for a column of 200,000 values; here anndata writes
    each array once, compressed, with its one chunk given.
    """
    import pandas as pd

    group = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    if _one_pass_array(value):
        _write_one_chunk(anndata, group, "e", value)
    elif (
        isinstance(value, pd.Categorical)
        and _one_pass_array(value.codes)
        and _one_pass_array(categories := value.categories.to_numpy())
    ):
        # anndata's write_categorical, with each of its two arrays given its own chunk.
        element = group.create_group("e")
        element.attrs["ordered"] = bool(value.ordered)
        _write_one_chunk(anndata, element, "codes", value.codes)
        _write_one_chunk(anndata, element, "categories", categories)
        element.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0"})
    else:
        return None
    objects = _objects(group.store)
    return objects if _every_chunk_written(objects) else None


def _every_chunk_written(objects: dict[str, bytes]) -> bool:
    """Whether each array has its one chunk object.

    anndata reopens an array before filling it, so zarr's ``write_empty_chunks`` does
    not reach the write: a chunk holding only the fill value (say a column of zeros) is
    left out. The format stores it; such a value goes the two-pass way instead.
    """
    for key, raw in objects.items():
        if key.rsplit("/", 1)[-1] != "zarr.json":
            continue
        doc = json.loads(raw)
        if doc.get("node_type") != "array":
            continue
        node = key[: -len("zarr.json")]
        if f"{node}c/{'/'.join('0' * len(doc['shape']))}" not in objects:
            return False
    return True


def _one_pass_array(value: Any) -> bool:
    """Arrays anndata writes as one Zarr array with the dataset options it is given."""
    import numpy as np

    return (type(value) is np.ndarray and value.ndim >= 1 and value.size > 0 and value.dtype.kind in "biuf") or (
        type(value) is np.ndarray
        and value.ndim == 1
        and value.size > 0
        and value.dtype.kind == "O"
        and all(type(item) is str for item in value)
    )


def _write_one_chunk(anndata: Any, group: zarr.Group, name: str, value: Any) -> None:
    options = {"chunks": tuple(value.shape), "compressors": [GzipCodec(level=GZIP_LEVEL)]}
    if value.dtype.kind in "biuf" and value.dtype.byteorder in ("<", "|", _NATIVE):
        _write_numeric(group, name, value, options)
        return
    with no_auto_sharding():
        anndata.io.write_elem(group, name, value, dataset_kwargs=options)


def _write_numeric(group: zarr.Group, name: str, value: Any, options: dict[str, Any]) -> None:
    """What anndata's write_basic writes for a numeric array, its chunk compressed here.

    zarr's write of one chunk (a copy into its buffer, the codecs run on a worker
    thread behind the event loop) costs a few milliseconds over the gzip itself; the
    chunk is the array's bytes in C order, little-endian, then gzip, as zarr makes it
    (deflated on several threads when large: see :mod:`~sds_jupyter.stack.gzipped`).
    """
    import numpy as np

    attributes: dict[str, Any] = {"encoding-type": "array", "encoding-version": "0.2.0"}
    group.create_array(name, shape=value.shape, dtype=value.dtype, attributes=attributes, **options)
    data = gzip_chunk(np.ascontiguousarray(value).data, GZIP_LEVEL)
    key = f"{group.path}/{name}/c/{'/'.join('0' * value.ndim)}".lstrip("/")
    sync(group.store.set(key, default_buffer_prototype().buffer.from_bytes(data)))


def _objects(store: Store) -> dict[str, bytes]:
    """Every object under the element ``e`` of an in-memory store, keyed relative to it."""
    objects: dict[str, bytes] = {}
    for key in sync(_collect(store, "e/")):
        buffer = sync(store.get(key, default_buffer_prototype()))
        if buffer is not None:
            objects[key[len("e/") :]] = buffer.to_bytes()
    return objects


@contextmanager
def no_auto_sharding() -> Iterator[None]:
    """anndata writes Zarr v3 without shards here, and says nothing about it.

    Left at its default (None) anndata warns on every array that autosharding
    will become the default: a warning about its future a user of this package
    cannot act on. Versions hold one chunk per array, so shards are not wanted.
    """
    import anndata  # heavy: loaded when a version is first written

    settings = anndata.settings
    if not hasattr(settings, "auto_shard_zarr_v3"):
        yield
        return
    previous = settings.auto_shard_zarr_v3
    settings.auto_shard_zarr_v3 = False
    try:
        yield
    finally:
        settings.auto_shard_zarr_v3 = previous


def _write_elem(anndata: Any, group: zarr.Group, value: Any) -> None:
    # Uncompressed: these bytes are only read back once, by the re-chunking copy, which compresses.
    with no_auto_sharding(), _nullable_strings_written(anndata):
        anndata.io.write_elem(group, "e", value, dataset_kwargs={"compressors": None})


@contextmanager
def _nullable_strings_written(anndata: Any) -> Iterator[None]:
    """Let anndata write pandas' nullable strings (its nullable-string-array, read since anndata 0.11).

    anndata asks for an opt-in only so that files stay readable by older releases; without
    it such a column would be refused, or reach the store as text where values were missing.
    """
    settings = anndata.settings
    if not hasattr(settings, "allow_write_nullable_strings"):
        yield
        return
    with settings.override(allow_write_nullable_strings=True):
        yield


async def _collect(store: Store, prefix: str) -> list[str]:
    return [key async for key in store.list_prefix(prefix)]


def _copy_rechunked(node: zarr.Group | zarr.Array, target: zarr.Group, name: str) -> None:
    attributes = dict(node.attrs)
    if isinstance(node, zarr.Array):
        data = node[...]
        chunks = tuple(max(1, n) for n in node.shape)
        array = target.create_array(
            name,
            shape=node.shape,
            dtype=node.dtype,
            chunks=chunks,
            compressors=[GzipCodec(level=GZIP_LEVEL)],
            fill_value=node.fill_value,
            attributes=attributes,
            config={"write_empty_chunks": True},
        )
        array[...] = data
        return
    group = target.create_group(name, attributes=attributes)
    for child_name, child in node.members():
        _copy_rechunked(child, group, child_name)
