"""Encoding a value as a version stores it: anndata's encoding, in the format's layout.

Each op encodes its value with anndata (so the encodings are anndata's own), every
array as Zarr v3 in a single chunk with gzip. A plain array or a categorical (what
obs columns and most obsm entries are) is written so in one pass, its chunks named
to anndata; anything else anndata writes with its own chunks, which are then
re-encoded in the format's layout (a second pass, over small values in practice).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import zarr
from zarr.abc.store import Store
from zarr.codecs import GzipCodec
from zarr.core.buffer import Buffer, default_buffer_prototype

from sds_jupyter.stack.storage.gzipped import gzip_chunk

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
    held: dict[str, Buffer] = {}
    target = zarr.open_group(zarr.storage.MemoryStore(store_dict=held), mode="w", zarr_format=3)
    _copy_rechunked(written["e"], target, "e")
    return _element_objects(held)


def _encode_direct(anndata: Any, value: Any) -> dict[str, bytes] | None:
    """A non-empty numeric array or a categorical encoded in one pass, or None for other values.

    The second pass of ``_encode_rechunked`` (read back, compress, write again) costs
    more than the encoding itself for a column of 200,000 values; here anndata writes
    each array once, compressed, with its one chunk given.
    """
    import pandas as pd

    # The in-memory store's own dict: its objects are taken from it without a trip through
    # zarr's event loop per key (each such trip waits for another thread, long on a busy machine).
    held: dict[str, Buffer] = {}
    store = zarr.storage.MemoryStore(store_dict=held)
    if _one_pass_array(value) and _numeric(value):
        _write_numeric(store, held, "e", value)  # no group needed: only what lies under "e" is kept
    elif _one_pass_array(value):
        _write_one_chunk(anndata, zarr.open_group(store, mode="w", zarr_format=3), "e", value, held)
    elif (
        isinstance(value, pd.Categorical)
        and _one_pass_array(value.codes)
        and _one_pass_array(categories := value.categories.to_numpy())
    ):
        # anndata's write_categorical, with each of its two arrays given its own chunk.
        element = zarr.open_group(store, mode="w", zarr_format=3).create_group("e")
        element.attrs["ordered"] = bool(value.ordered)
        _write_one_chunk(anndata, element, "codes", value.codes, held)
        _write_one_chunk(anndata, element, "categories", categories, held)
        element.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0"})
    else:
        return None
    objects = _element_objects(held)
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


def _numeric(value: Any) -> bool:
    """A numeric array whose bytes are the chunk zarr's bytes codec makes (little-endian or one byte)."""
    return bool(value.dtype.kind in "biuf" and value.dtype.byteorder in ("<", "|", _NATIVE))


def _write_one_chunk(anndata: Any, group: zarr.Group, name: str, value: Any, held: dict[str, Buffer]) -> None:
    """``value`` as array ``name`` of ``group``, in one gzip chunk; ``held`` is the group's store's dict."""
    if _numeric(value):
        _write_numeric(group.store, held, f"{group.path}/{name}".lstrip("/"), value)
        return
    with no_auto_sharding():
        anndata.io.write_elem(group, name, value, dataset_kwargs=_one_chunk(value))


def _one_chunk(value: Any) -> dict[str, Any]:
    return {"chunks": tuple(value.shape), "compressors": [GzipCodec(level=GZIP_LEVEL)]}


def _write_numeric(store: Store, held: dict[str, Buffer], path: str, value: Any) -> None:
    """What anndata's write_basic writes for a numeric array at ``path``, its chunk compressed here.

    zarr's write of one chunk (a copy into its buffer, the codecs run on a worker
    thread behind the event loop) costs a few milliseconds over the gzip itself; the
    chunk is the array's bytes in C order, little-endian, then gzip, as zarr makes it
    (deflated on several threads when large: see :mod:`~sds_jupyter.stack.storage.gzipped`),
    put in the store's dict ``held`` as zarr's ``set`` would. The array's documents are
    zarr's own, made once per path, shape and type (:func:`_numeric_documents`).
    """
    import numpy as np

    buffer = default_buffer_prototype().buffer
    documents = _numeric_documents(path, tuple(value.shape), value.dtype.str)
    own = f"{path}/zarr.json"
    if own in held:  # an array or group already there: zarr's own call says so, as before
        zarr.create_array(store, name=path, shape=value.shape, dtype=value.dtype, attributes=dict(_ARRAY_ATTRIBUTES))
    for key, raw in documents:
        if key == own:
            held[key] = buffer.from_bytes(raw)
        else:  # a parent group zarr made implicitly: one already there is kept, as zarr keeps it
            held.setdefault(key, buffer.from_bytes(raw))
    data = gzip_chunk(np.ascontiguousarray(value).data, GZIP_LEVEL)
    held[f"{path}/c/{'/'.join('0' * value.ndim)}"] = default_buffer_prototype().buffer.from_bytes(data)


#: The attributes anndata's write_basic gives a numeric array (read-only: zarr is given copies).
_ARRAY_ATTRIBUTES: Mapping[str, Any] = MappingProxyType({"encoding-type": "array", "encoding-version": "0.2.0"})


@functools.lru_cache(maxsize=64)
def _numeric_documents(path: str, shape: tuple[int, ...], dtype: str) -> tuple[tuple[str, bytes], ...]:
    """The documents ``zarr.create_array`` writes for a one-chunk gzip array at ``path``, by key.

    Why kept: they depend on nothing but these arguments (and the constants above), and
    zarr's call costs about a millisecond of CPU and a wait for its event loop's thread (issue
    42: a twentieth of a one-column save at depth 500); a later save of a column of the same
    length and type (an element is encoded at path ``e``) reuses them. Checked against zarr's
    own call by the writer's tests (one pass and two passes write the same objects).
    """
    import numpy as np

    held: dict[str, Buffer] = {}
    zarr.create_array(
        zarr.storage.MemoryStore(store_dict=held),
        name=path,
        shape=shape,
        dtype=np.dtype(dtype),
        attributes=dict(_ARRAY_ATTRIBUTES),
        chunks=shape,
        compressors=[GzipCodec(level=GZIP_LEVEL)],
    )
    return tuple((key, held[key].to_bytes()) for key in sorted(held))


def _element_objects(held: dict[str, Buffer]) -> dict[str, bytes]:
    """Every object under the element ``e`` of an in-memory store's dict, keyed relative to it."""
    return {key[len("e/") :]: buffer.to_bytes() for key, buffer in held.items() if key.startswith("e/")}


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
