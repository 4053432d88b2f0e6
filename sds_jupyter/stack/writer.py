"""Save a new version: the ops of the format, on a copy-on-write store, then commit.

Each op encodes its value with anndata (so the encodings are anndata's own),
re-encodes every array as Zarr v3 in a single chunk with gzip, stages the
objects, and keeps the parent group's index (``column-order``) right. Commit
rebuilds the root's consolidated index, writes ``overlay/`` and ``layer.json``
into a temporary folder, and renames it into place.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.errors import StackError, WriteRefusedError
from sds_jupyter.stack.cow import CopyOnWriteStore
from sds_jupyter.stack.manifest import FORMAT, MANIFEST_NAME
from sds_jupyter.stack.paths import check_dataset_id, is_within
from sds_jupyter.stack.stack import Stack

__all__ = ["APP_ID", "VersionWriter", "consolidated_index", "encode_element", "studio_path"]

APP_ID = "sds-jupyter"
STUDIO_KEY = "spatial_data_studio"
_ROOT = "zarr.json"


def studio_path(table: str, *parts: str) -> str:
    """Store path of ``uns["spatial_data_studio"][parts...]`` in a table."""
    return "/".join([f"tables/{table}/uns/{STUDIO_KEY}", *parts])


# -- encoding ------------------------------------------------------------------------------


def encode_element(value: Any) -> dict[str, bytes]:
    """Objects of ``value`` as anndata encodes it, keyed relative to the element.

    Arrays are rewritten as Zarr v3 with one chunk and gzip (bytes, or vlen-utf8
    for strings), the layout the format asks of every version's arrays.
    """
    import anndata

    written = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    _write_elem(anndata, written, value)
    target = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    _copy_rechunked(written["e"], target, "e")
    objects: dict[str, bytes] = {}
    store = target.store
    keys = zarr.core.sync.sync(_collect(store, "e/"))
    for key in keys:
        buffer = zarr.core.sync.sync(store.get(key, zarr.core.buffer.default_buffer_prototype()))
        objects[key[len("e/"):]] = buffer.to_bytes()
    return objects


@contextmanager
def no_auto_sharding() -> Iterator[None]:
    """anndata writes Zarr v3 without shards here, and says nothing about it.

    Left at its default (None) anndata warns on every array that autosharding
    will become the default: a warning about its future a user of this package
    cannot act on. Versions hold one chunk per array, so shards are not wanted.
    """
    import anndata

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
    with no_auto_sharding():
        anndata.io.write_elem(group, "e", value)


async def _collect(store: zarr.abc.store.Store, prefix: str) -> list[str]:
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
            compressors=[zarr.codecs.GzipCodec()],
            fill_value=node.fill_value,
            attributes=attributes,
            config={"write_empty_chunks": True},
        )
        array[...] = data
        return
    group = target.create_group(name, attributes=attributes)
    for child_name, child in node.members():
        _copy_rechunked(child, group, child_name)


# -- consolidated metadata -----------------------------------------------------------------


def _depth_then_path(path: str) -> tuple[int, str]:
    return (path.count("/"), path)


def consolidated_index(store: CopyOnWriteStore) -> dict[str, Any]:
    """Every node of the composed store, by path, sorted by depth then path.

    When the stack below already keeps an index, it is carried forward with this
    version's changes applied (nodes it removed dropped, documents it wrote put
    in); otherwise every ``zarr.json`` of the store is read. Groups carry an
    empty nested index, as zarr writes them.
    """
    below = json.loads(store.below.read_raw(_ROOT) or b"{}").get("consolidated_metadata")
    if isinstance(below, dict) and isinstance(below.get("metadata"), dict):
        entries = {
            path: doc for path, doc in below["metadata"].items() if store.exists_raw(f"{path}/zarr.json")
        }
        written = (k for k in store.staged if k.endswith("/zarr.json"))
    else:
        entries = {}
        written = (k for k in store.keys_raw("") if k.endswith("/zarr.json"))
    for key in written:
        entries[key[: -len("/zarr.json")]] = _index_entry(store.read_raw(key) or b"{}")
    return {path: entries[path] for path in sorted(entries, key=_depth_then_path)}


def _index_entry(raw: bytes) -> dict[str, Any]:
    doc = json.loads(raw)
    doc.pop("consolidated_metadata", None)
    if doc.get("node_type") == "group":
        doc["consolidated_metadata"] = {"kind": "inline", "must_understand": False, "metadata": {}}
    return doc


# -- the writer ----------------------------------------------------------------------------


class VersionWriter:
    """Stages the changes of one new version over ``stack``; :meth:`commit` saves it.

    Example
    -------
    >>> writer = VersionWriter(Stack.resolve("datasets/<top version>"))
    >>> writer.set_obs("table", "regions", regions)            # doctest: +SKIP
    >>> writer.commit(title="Regions", message="Drawn by hand")  # doctest: +SKIP
    """

    def __init__(self, stack: Stack | str | os.PathLike[str], folders: Any = None) -> None:
        self.stack = stack if isinstance(stack, Stack) else Stack.resolve(stack, folders=folders)
        if not isinstance(self.stack.base.path, Path):
            raise WriteRefusedError(
                f"{self.stack.base.path} is in object storage; versions are saved into local "
                "dataset folders beside their parents. Download the stack's datasets and save there"
            )
        if self.stack.base.zarr_format != 3:
            raise WriteRefusedError(
                f"the base store {self.stack.base.path} is Zarr v2; versions hold Zarr v3 objects. "
                "Rewrite the store with a current spatialdata (read_zarr, then write) and save on that"
            )
        self.store = CopyOnWriteStore(self.stack)
        self.changes: list[dict[str, Any]] = []
        self._committed = False

    # -- reading the composed store ---------------------------------------------------

    def _group(self, path: str) -> zarr.Group:
        try:
            node = zarr.open_group(self.store, mode="r", use_consolidated=False, path=path)
        except (KeyError, FileNotFoundError, zarr.errors.GroupNotFoundError):
            raise StackError(f"this version has no group {path!r}") from None
        return node

    def _doc(self, key: str) -> dict[str, Any]:
        raw = self.store.read_raw(key)
        if raw is None:
            raise StackError(f"this version has no {key!r}")
        return json.loads(raw)

    def _table(self, table: str) -> str:
        path = f"tables/{table}"
        if not self.store.exists_raw(f"{path}/zarr.json"):
            tables = self.store.children_raw("tables")
            raise StackError(
                f"this version has no table {table!r}; its tables are: {', '.join(tables) or 'none'}"
            )
        return path

    def n_obs(self, table: str) -> int:
        obs = f"{self._table(table)}/obs"
        index_name = self._doc(f"{obs}/zarr.json").get("attributes", {}).get("_index", "_index")
        doc = self._doc(f"{obs}/{index_name}/zarr.json")
        if doc.get("node_type") == "group":  # nullable-string-array index
            doc = self._doc(f"{obs}/{index_name}/values/zarr.json")
        return int(doc["shape"][0])

    def obs_columns(self, table: str) -> list[str]:
        attrs = self._doc(f"{self._table(table)}/obs/zarr.json").get("attributes", {})
        return list(attrs.get("column-order", []))

    # -- staging --------------------------------------------------------------------------

    def _put(self, path: str, value: Any) -> None:
        """Replace the node at ``path`` with ``value`` encoded as anndata would."""
        objects = encode_element(value)
        self.store.delete_node(path)
        for key, data in objects.items():
            self.store.write_raw(f"{path}/{key}", data)

    def _ensure_dict_group(self, path: str) -> None:
        """Create ``path`` and its missing parents as anndata ``dict`` groups."""
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            node = "/".join(parts[:end])
            if not self.store.exists_raw(f"{node}/zarr.json"):
                doc = {
                    "attributes": {"encoding-type": "dict", "encoding-version": "0.1.0"},
                    "zarr_format": 3,
                    "node_type": "group",
                }
                self.store.write_raw(f"{node}/zarr.json", json.dumps(doc, indent=2).encode())

    def _record(self, change: dict[str, Any]) -> None:
        self._check_open()
        self.changes.append(change)

    def _check_open(self) -> None:
        if self._committed:
            raise WriteRefusedError("this version was committed already; start a new VersionWriter")

    # -- the ops ------------------------------------------------------------------------

    def set_obs(self, table: str, column: str, values: Any) -> None:
        """Add or replace an obs column (``set-obs``)."""
        self._check_open()
        _check_name(column, "obs column")
        series = pd.Series(values).reset_index(drop=True) if not isinstance(values, pd.Series) else values.reset_index(drop=True)
        n_obs = self.n_obs(table)
        if len(series) != n_obs:
            raise StackError(f"obs column {column!r} has {len(series)} values; table {table!r} has {n_obs} rows")
        columns = self.obs_columns(table)
        _check_unique_name(column, columns, "obs column")
        obs = f"{self._table(table)}/obs"
        self._put(f"{obs}/{column}", series.to_numpy() if not isinstance(series.dtype, pd.CategoricalDtype) else series.array)
        if column not in columns:
            self._set_column_order(obs, [*columns, column])
        self._record({"op": "set-obs", "table": table, "column": column, "kind": _kind_of(series)})

    def delete_obs(self, table: str, column: str) -> None:
        """Remove an obs column (``delete-obs``)."""
        self._check_open()
        columns = self.obs_columns(table)
        if column not in columns:
            raise StackError(f"table {table!r} has no obs column {column!r}; its columns are: {', '.join(columns)}")
        keys = self._doc(f"{self._table(table)}/zarr.json").get("attributes", {})
        if column in (keys.get("region_key"), keys.get("instance_key")):
            raise StackError(
                f"obs column {column!r} is the table's region or instance key, which ties it to "
                "its spatial elements; keep it (replace its values with set_obs instead)"
            )
        obs = f"{self._table(table)}/obs"
        self.store.delete_node(f"{obs}/{column}")
        self._set_column_order(obs, [c for c in columns if c != column])
        self._record({"op": "delete-obs", "table": table, "column": column})

    def set_obsm(self, table: str, key: str, value: Any) -> None:
        """Add or replace an obsm entry (``set-obsm``), e.g. an embedding."""
        self._check_open()
        _check_name(key, "obsm key")
        array = value if isinstance(value, pd.DataFrame) else np.asarray(value)
        n_obs = self.n_obs(table)
        if array.shape[0] != n_obs:
            raise StackError(f"obsm {key!r} has {array.shape[0]} rows; table {table!r} has {n_obs}")
        path = f"{self._table(table)}/obsm"
        self._ensure_dict_group(path)
        self._put(f"{path}/{key}", array)
        self._record({"op": "set-obsm", "table": table, "key": key, "shape": list(array.shape)})

    def set_uns(self, table: str, key: str, value: Any) -> None:
        """Add or replace a top-level uns entry (``set-uns``)."""
        self._check_open()
        _check_name(key, "uns key")
        path = f"{self._table(table)}/uns"
        self._ensure_dict_group(path)
        self._put(f"{path}/{key}", value)
        self._record({"op": "set-uns", "table": table, "key": key})

    def delete_uns(self, table: str, key: str) -> None:
        """Remove a top-level uns entry (``delete-uns``)."""
        self._check_open()
        path = f"{self._table(table)}/uns/{key}"
        if not self.store.exists_raw(f"{path}/zarr.json"):
            raise StackError(f"table {table!r} has no uns entry {key!r}")
        self.store.delete_node(path)
        self._record({"op": "delete-uns", "table": table, "key": key})

    def set_figure(self, table: str, figure_id: str, spec: Mapping[str, Any] | str) -> None:
        """Save a figure spec (``set-figure``) as a JSON string in uns."""
        self._check_open()
        _check_name(figure_id, "figure ID")
        text = spec if isinstance(spec, str) else json.dumps(spec)
        title = None if isinstance(spec, str) else spec.get("title")
        self._table(table)
        self._ensure_dict_group(studio_path(table, "figures"))
        self._put(studio_path(table, "figures", figure_id), text)
        self._record({"op": "set-figure", "table": table, "figure": figure_id, "title": title})

    def delete_figure(self, table: str, figure_id: str) -> None:
        """Remove a figure (``delete-figure``)."""
        self._check_open()
        path = studio_path(table, "figures", figure_id)
        if not self.store.exists_raw(f"{path}/zarr.json"):
            raise StackError(f"table {table!r} has no figure {figure_id!r}")
        self.store.delete_node(path)
        self._record({"op": "delete-figure", "table": table, "figure": figure_id})

    def set_result(
        self,
        table: str,
        result_id: str,
        tables: Mapping[str, pd.DataFrame],
        meta: Mapping[str, Any],
    ) -> None:
        """Save an analysis result: its tables (``"table"`` first) and its ``meta``.

        Recorded as a ``set-uns`` of ``spatial_data_studio/results/<id>``.
        """
        self._check_open()
        _check_name(result_id, "result ID")
        if "table" not in tables:
            raise StackError("a result needs its main table under the name 'table'")
        if "meta" in tables:
            raise StackError("'meta' is reserved for the result's metadata; rename that table")
        self._table(table)
        self._ensure_dict_group(studio_path(table, "results"))
        content: dict[str, Any] = {name: frame for name, frame in tables.items()}
        content["meta"] = json.dumps(dict(meta))
        self._put(studio_path(table, "results", result_id), content)
        self._record(
            {
                "op": "set-uns",
                "table": table,
                "key": f"{STUDIO_KEY}/results/{result_id}",
                "result": result_id,
                "kind": meta.get("kind"),
            }
        )

    def _set_column_order(self, obs: str, columns: list[str]) -> None:
        doc = self._doc(f"{obs}/zarr.json")
        doc.setdefault("attributes", {})["column-order"] = columns
        self.store.write_raw(f"{obs}/zarr.json", json.dumps(doc, indent=2).encode())

    # -- commit ---------------------------------------------------------------------------

    def commit(
        self,
        dest: str | os.PathLike[str] | None = None,
        *,
        title: str | None = None,
        message: str | None = None,
        created_by: str | None = None,
    ) -> Path:
        """Write the new version and return its folder.

        ``dest`` defaults to a new folder, named by a fresh dataset ID, beside the
        top version in the datasets folder, where a reader will look for its parent.
        It must not exist and must not lie inside any folder of the stack.
        """
        self._check_open()
        if not self.changes and not self.store.staged and not self.store.whiteouts:
            raise StackError("nothing to save: make a change before committing")
        dest_path = Path(os.path.abspath(dest)) if dest else self.stack.datasets_dir / str(uuid.uuid4())
        self._check_destination(dest_path)
        self._write_root_index()
        manifest = self._manifest(title, message, created_by)
        tmp = dest_path.parent / f".{dest_path.name}.partial-{uuid.uuid4().hex[:8]}"
        try:
            overlay = tmp / "overlay"
            for key, data in sorted(self.store.staged.items()):
                target = overlay / key
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "xb") as handle:
                    handle.write(data)
            with open(tmp / MANIFEST_NAME, "x", encoding="utf-8") as handle:
                json.dump(manifest, handle, indent=2)
                handle.write("\n")
            if dest_path.exists():
                raise WriteRefusedError(f"{dest_path} appeared while saving; choose another folder")
            os.rename(tmp, dest_path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._committed = True
        return dest_path

    def _write_root_index(self) -> None:
        root = json.loads(self.store.read_raw(_ROOT) or b"{}")
        root["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": consolidated_index(self.store),
        }
        self.store.write_raw(_ROOT, json.dumps(root, indent=2).encode())

    def _manifest(self, title: str | None, message: str | None, created_by: str | None) -> dict[str, Any]:
        from sds_jupyter import __version__

        top = self.stack.top
        if top is not None:
            parent_id = _dataset_id_of(top.dataset_id, "the parent version")
            parent = f"cirro:::dataset:{parent_id}/{MANIFEST_NAME}"
            base = top.manifest.base or self.stack.base.reference
        else:
            base_id = _dataset_id_of(self.stack.base.dataset_id or "", "the base store's folder")
            parent = base = f"cirro:::dataset:{base_id}/{self.stack.base.path.name}"
        return {
            "format": FORMAT,
            "format_version": 1,
            "parent": parent,
            "base": base or self.stack.base.reference,
            "depth": self.stack.depth + 1,
            "title": title,
            "message": message,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "created_by": created_by or _user(),
            "app": {"id": APP_ID, "version": __version__},
            "overlay": "overlay",
            "files": [{"key": k, "size": len(v)} for k, v in sorted(self.store.staged.items())],
            "deleted": self.store.whiteouts,
            "changes": self.changes,
        }

    def _check_destination(self, dest: Path) -> None:
        if dest.exists() or dest.is_symlink():
            raise WriteRefusedError(f"{dest} exists; a new version needs a new folder")
        real = os.path.realpath(dest)
        protected = [self.stack.base.path] + [p for v in self.stack.versions for p in (v.folder, v.data_dir)]
        for folder in protected:
            if is_within(real, os.path.realpath(folder)):
                raise WriteRefusedError(
                    f"{dest} is inside {folder}, part of the stack; versions and bases are never "
                    "written to: save the new version in its own folder"
                )


def _dataset_id_of(value: str, what: str) -> str:
    try:
        return check_dataset_id(value)
    except StackError:
        raise WriteRefusedError(
            f"{what} is in a folder named {value!r}, which is not a dataset ID "
            "(letters, digits, hyphens); rename it or give a folder map"
        ) from None


def _user() -> str | None:
    try:
        return os.environ.get("SDS_USER") or getpass.getuser()
    except (KeyError, OSError):
        return None


def _kind_of(series: pd.Series) -> str:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(series.dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(series.dtype):
        return "numeric"
    return "string"


_NAME_CHARS_EXTRA = set("-_.")


def _check_name(name: str, what: str) -> None:
    """The SpatialData naming rules for element, column and key names."""
    if (
        not isinstance(name, str)
        or name in ("", ".", "..", "_index")
        or name.startswith("__")
        or not all(ch.isalnum() or ch in _NAME_CHARS_EXTRA for ch in name)
    ):
        raise StackError(
            f"{what} {name!r} is not a valid name: use letters, digits, '-', '_' and '.', "
            "not starting with '__' (and not '_index')"
        )


def _check_unique_name(name: str, existing: list[str], what: str) -> None:
    for other in existing:
        if other != name and other.lower() == name.lower():
            raise StackError(f"{what} {name!r} differs from existing {other!r} only in case; pick another name")
