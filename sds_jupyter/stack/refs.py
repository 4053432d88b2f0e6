"""Cirro references and the folder map: the one place a reference becomes a path.

A version names its parent with a Cirro reference,
``cirro:<tenant>:<project>:dataset:<dataset id>/<path>``. Where the datasets
were downloaded (or mounted, in a workspace), each one is a folder of the
datasets folder, named by its ID or by the folder map ``{id: folder name}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sds_jupyter.errors import MissingDatasetError, ReferenceError_, UnsafePathError
from sds_jupyter.stack.jsontext import JSONRefused, loads_bounded
from sds_jupyter.stack.paths import (
    check_dataset_id,
    check_relative_path,
    contained_path,
)

__all__ = [
    "FOLDER_MAP_ENV",
    "CirroRef",
    "DatasetLocator",
    "FolderMap",
    "parse_folder_map",
]

#: In a Cirro workspace this variable holds the folder map as a JSON object.
FOLDER_MAP_ENV = "SDS_CIRRO_DATASETS"
MANIFEST_NAME = "layer.json"


@dataclass(frozen=True)
class CirroRef:
    """A parsed ``cirro:`` reference; ``path`` is relative to the data directory."""

    dataset_id: str
    path: str
    tenant: str = ""
    project: str = ""

    @classmethod
    def parse(cls, text: object) -> CirroRef:
        if not isinstance(text, str) or not text.startswith("cirro:"):
            raise ReferenceError_(
                f"reference {text!r} is not a Cirro reference "
                "(expected cirro:<tenant>:<project>:dataset:<id>/<path>)"
            )
        parts = text[len("cirro:"):].split(":", 3)
        if len(parts) != 4 or parts[2] != "dataset" or "/" not in parts[3]:
            raise ReferenceError_(
                f"reference {text!r} does not follow cirro:<tenant>:<project>:dataset:<id>/<path>"
            )
        tenant, project, _, rest = parts
        if "/" in tenant or "/" in project:
            raise ReferenceError_(f"reference {text!r} has a '/' in its tenant or project")
        dataset_id, path = rest.split("/", 1)
        return cls(
            dataset_id=check_dataset_id(dataset_id),
            path=check_relative_path(path, f"path of reference {text!r}"),
            tenant=tenant,
            project=project,
        )

    @property
    def names_manifest(self) -> bool:
        """A reference to a ``layer.json`` names a version; anything else a store."""
        return self.path.rsplit("/", 1)[-1] == MANIFEST_NAME

    def __str__(self) -> str:
        return f"cirro:{self.tenant}:{self.project}:dataset:{self.dataset_id}/{self.path}"


class FolderMap(Mapping[str, str]):
    """``{dataset id: folder name}``, each name a safe relative path."""

    def __init__(self, entries: Mapping[str, str] | None = None) -> None:
        self._entries: dict[str, str] = {}
        for dataset_id, folder in (entries or {}).items():
            check_dataset_id(dataset_id)
            self._entries[dataset_id] = check_relative_path(
                folder, f"folder map entry for {dataset_id}"
            )

    def __getitem__(self, key: str) -> str:
        return self._entries[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def id_for_folder(self, folder_name: str) -> str | None:
        """The dataset ID whose folder is ``folder_name``, if the map names one."""
        for dataset_id, name in self._entries.items():
            if name.rstrip("/") == folder_name:
                return dataset_id
        return None


def parse_folder_map(value: str | Mapping[str, str] | None) -> FolderMap:
    """Accept a folder map as a mapping or JSON text; ``None`` reads the environment."""
    if value is None:
        value = os.environ.get(FOLDER_MAP_ENV) or None
        if value is None:
            return FolderMap()
    if isinstance(value, str):
        try:
            value = loads_bounded(value)
        except JSONRefused as exc:
            raise UnsafePathError(
                f'the folder map is not valid JSON ({exc}); give an object like {{"<dataset id>": "<folder>"}}'
            ) from None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise UnsafePathError(
            'the folder map must be a JSON object of strings, {"<dataset id>": "<folder>"}'
        )
    return FolderMap(value)


class DatasetLocator:
    """Finds datasets, by ID, in one datasets folder, and never outside it."""

    def __init__(self, datasets_dir: Path, folders: FolderMap) -> None:
        self.datasets_dir = Path(os.path.realpath(datasets_dir))
        self.folders = folders
        self._found: dict[str, Path] = {}

    def dataset_folder(self, dataset_id: str) -> Path:
        """The folder holding ``dataset_id``; refuses one outside the datasets folder."""
        if dataset_id in self._found:
            return self._found[dataset_id]
        names = [self.folders[dataset_id]] if dataset_id in self.folders else []
        names.append(dataset_id)
        for name in names:
            folder = contained_path(self.datasets_dir, name, f"folder of dataset {dataset_id}")
            if folder == self.datasets_dir:
                raise UnsafePathError(
                    f"the folder of dataset {dataset_id} is the datasets folder itself; "
                    "map it to a folder inside it"
                )
            if folder.is_dir():
                self._found[dataset_id] = folder
                return folder
        hint = f" (looked for {', '.join(repr(n) for n in dict.fromkeys(names))})"
        raise MissingDatasetError(
            f"dataset {dataset_id} is not in {self.datasets_dir}{hint}; "
            "download or attach it, or give its folder in the folder map",
            dataset_id,
        )

    def resolve(self, ref: CirroRef) -> Path:
        """The real path a reference names: under the dataset folder or its ``data/``."""
        folder = self.dataset_folder(ref.dataset_id)
        for relative in (ref.path, f"data/{ref.path}"):
            target = contained_path(folder, relative, f"reference {ref}")
            if target.exists():
                return target
        raise ReferenceError_(
            f"dataset {ref.dataset_id} has no {ref.path!r} (reference {ref}); "
            "the download may be incomplete"
        )

    # -- the rest of what Stack.resolve asks of a locator (RemoteLocator has the same) --

    def manifest_location(self, dataset_folder: Path, data_dir: Path) -> Path:
        """The real path of the ``layer.json`` in ``data_dir``, a folder of ``dataset_folder``.

        The opened version is confined like a parent: its ``layer.json`` (and so
        its ``data/`` and overlay) must resolve inside its own dataset folder.
        """
        relative = os.path.relpath(data_dir / MANIFEST_NAME, dataset_folder).replace(os.sep, "/")
        root = Path(os.path.realpath(dataset_folder))
        return contained_path(root, relative, f"the manifest of {dataset_folder.name}")

    def read_manifest(self, location: Path):  # type: ignore[no-untyped-def]  # -> Manifest
        from sds_jupyter.stack.manifest import read_manifest

        return read_manifest(location)

    def contained(self, root: Path, relative: str, what: str) -> Path:
        return contained_path(root, relative, what)

    def probe_store(self, target: Path, where: str) -> tuple[str, int]:
        """``(kind, zarr format)`` of the store at ``target``: ``"folder"`` or ``"zip"``."""
        from sds_jupyter.stack.sources import open_source, zarr_format_of

        source = open_source(target)
        try:
            zarr_format = zarr_format_of(source, where)
        finally:
            source.close()
        return ("folder" if target.is_dir() else "zip"), zarr_format

    def hint_base(self, base: str | None) -> None:
        """Nothing to prefetch on a local disk."""

    def opened_source(self, target: Path) -> None:
        """Local sources hold open files: each store opens its own."""
        return None

    def close(self) -> None:
        pass
