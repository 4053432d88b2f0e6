"""Cirro references and the folder map: pure parsing (the locator turns them into locations).

A version names its parent with a Cirro reference,
``cirro:<tenant>:<project>:dataset:<dataset id>/<path>``. Where the datasets
were downloaded (or mounted, in a workspace), each one is a folder of the
datasets folder, named by its ID or by the folder map ``{id: folder name}``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from sds_jupyter.errors import ReferenceError_, UnsafePathError
from sds_jupyter.jsontext import JSONRefused, loads_bounded
from sds_jupyter.stack.storage.paths import MANIFEST_NAME, check_dataset_id, check_relative_path

__all__ = [
    "FOLDER_MAP_ENV",
    "CirroRef",
    "FolderMap",
    "parse_folder_map",
]

#: In a Cirro workspace this variable holds the folder map as a JSON object.
FOLDER_MAP_ENV = "SDS_CIRRO_DATASETS"


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
                f"reference {text!r} is not a Cirro reference (expected cirro:<tenant>:<project>:dataset:<id>/<path>)"
            )
        parts = text[len("cirro:") :].split(":", 3)
        if len(parts) != 4 or parts[2] != "dataset" or "/" not in parts[3]:
            raise ReferenceError_(f"reference {text!r} does not follow cirro:<tenant>:<project>:dataset:<id>/<path>")
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
            self._entries[dataset_id] = check_relative_path(folder, f"folder map entry for {dataset_id}")

    def __getitem__(self, key: str) -> str:
        return self._entries[key]

    def __contains__(self, key: object) -> bool:
        # Mapping's own asks __getitem__ and catches KeyError: a deep walk asks once a version
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def name_of(self, dataset_id: str | None) -> str | None:
        """What people call ``dataset_id``: its folder's name in the map (e.g. "Xenium breast section"), else None.

        Why: a workspace's folder map is the one place that names a dataset for people; an ID is a UUID.
        """
        folder = self._entries.get(dataset_id) if dataset_id is not None else None
        return folder.rstrip("/").rsplit("/", 1)[-1] if folder else None

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
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UnsafePathError('the folder map must be a JSON object of strings, {"<dataset id>": "<folder>"}')
    return FolderMap(value)
