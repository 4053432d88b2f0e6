"""Build stacks by hand, byte by byte, the way another writer would.

The reader is tested on these rather than only on what our own writer makes, so
a writer bug cannot hide a reader bug.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT_DOC = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}).encode()


def write_base(datasets: Path, dataset_id: str, files: Mapping[str, bytes], name: str = "store.zarr") -> str:
    """A folder base inside dataset ``dataset_id``; returns its Cirro reference."""
    root = datasets / dataset_id / name
    root.mkdir(parents=True, exist_ok=True)
    for key, data in {"zarr.json": ROOT_DOC, **files}.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return f"cirro:::dataset:{dataset_id}/{name}"


def write_version(
    datasets: Path,
    dataset_id: str,
    parent: str,
    files: Mapping[str, bytes] | None = None,
    deleted: Sequence[str] = (),
    *,
    under_data: bool = False,
    overlay: str = "overlay",
    manifest: Mapping[str, Any] | None = None,
    folder_name: str | None = None,
) -> str:
    """A version folder with the given overlay; returns the reference to its layer.json."""
    folder = datasets / (folder_name or dataset_id)
    data_dir = folder / "data" if under_data else folder
    data_dir.mkdir(parents=True, exist_ok=True)
    files = dict(files or {})
    for key, data in files.items():
        path = data_dir / overlay / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    doc: dict[str, Any] = {
        "format": "spatial-data-studio.layer",
        "format_version": 1,
        "parent": parent,
        "title": f"version {dataset_id}",
        "overlay": overlay,
        "files": [{"key": k, "size": len(v)} for k, v in files.items()],
        "deleted": list(deleted),
        "changes": [],
    }
    doc.update(manifest or {})
    (data_dir / "layer.json").write_text(json.dumps(doc))
    return f"cirro:::dataset:{dataset_id}/layer.json"


def chain(datasets: Path, depth: int, base_ref: str, prefix: str = "v") -> Path:
    """``depth`` versions, each adding one key ``layer/<i>``; returns the top folder."""
    parent = base_ref
    for i in range(1, depth + 1):
        parent = write_version(datasets, f"{prefix}{i}", parent, {f"layer/{i}": str(i).encode()})
    return datasets / f"{prefix}{depth}"
