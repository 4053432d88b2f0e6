"""A stack: the chain of versions from an opened one down to its base store.

:meth:`Stack.resolve` is the one place that walks ``parent`` references. It reads
each manifest once, checks it, and records where every version's overlay and the
base store are, so that readers never follow a reference again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sds_jupyter.errors import (
    ManifestError,
    MissingDatasetError,
    StackCycleError,
    StackError,
    StackTooDeepError,
    WriteRefusedError,
)
from sds_jupyter.stack.manifest import MANIFEST_NAME, MAX_STACK_MANIFEST_BYTES, Manifest
from sds_jupyter.stack.paths import is_within
from sds_jupyter.stack.refs import CirroRef, DatasetLocator, FolderMap, parse_folder_map
from sds_jupyter.stack.sources import open_source, zarr_format_of
from sds_jupyter.stack.tree import PartialChain, find_manifest

__all__ = ["MAX_DEPTH", "BaseInfo", "Stack", "Version"]

#: The longest chain of versions a reader follows.
MAX_DEPTH = 500


@dataclass(frozen=True)
class Version:
    """One version of the stack: its manifest and where its objects are."""

    dataset_id: str
    folder: Path
    """The dataset's folder (what a download names by the dataset ID)."""
    data_dir: Path
    """The folder holding ``layer.json``: the dataset folder or its ``data/``."""
    overlay_dir: Path
    manifest: Manifest
    depth: int
    """1 for the version directly on the base, counting up to the top."""

    @property
    def manifest_path(self) -> Path:
        return self.data_dir / MANIFEST_NAME

    # Every manifest field, straight from the version, for convenience.
    title = property(lambda self: self.manifest.title)
    message = property(lambda self: self.manifest.message)
    created_at = property(lambda self: self.manifest.created_at)
    created_by = property(lambda self: self.manifest.created_by)
    app = property(lambda self: self.manifest.app)
    parent = property(lambda self: self.manifest.parent)
    base_reference = property(lambda self: self.manifest.base)
    files = property(lambda self: self.manifest.files)
    deleted = property(lambda self: self.manifest.deleted)
    changes = property(lambda self: self.manifest.changes)

    @property
    def label(self) -> str:
        """What a person calls this version: its title, else its dataset ID."""
        return self.manifest.title or self.dataset_id


@dataclass(frozen=True)
class BaseInfo:
    """The store at the bottom of the stack."""

    dataset_id: str | None
    path: Path
    reference: str | None
    kind: str
    """``"folder"`` or ``"zip"``."""
    zarr_format: int
    opened: Any = field(default=None, compare=False, repr=False)
    """A source the resolve already opened and that may be shared (a zip in object
    storage, with its central directory read), so a store need not open it again."""


@dataclass(frozen=True)
class Stack:
    """Versions top first, then the base they all sit on."""

    versions: tuple[Version, ...]
    base: BaseInfo
    datasets_dir: Path
    folders: FolderMap = field(default_factory=FolderMap)

    @classmethod
    def resolve(
        cls,
        path: str | os.PathLike[str],
        folders: str | Mapping[str, str] | None = None,
        *,
        storage_options: Mapping[str, Any] | None = None,
    ) -> Stack:
        """Open the stack whose top is the version at ``path``.

        ``path`` is a version's folder (``layer.json`` at its top or under
        ``data/``), its ``layer.json``, or a store (a stack of no versions).
        Parents are looked up in the folder holding the version's folder, by the
        folder map ``folders`` (``{dataset id: folder}``, a mapping or JSON text;
        when ``None``, the ``SDS_CIRRO_DATASETS`` variable) or else by their ID.

        ``path`` may be a URL in object storage (``s3://bucket/prefix/<dataset
        folder>``, or any fsspec URL but ``file://``); ``storage_options`` go to
        the fsspec filesystem. Nothing is listed: each manifest is fetched once.

        Raises
        ------
        StackError
            For anything that cannot be followed safely: the message says what.
        """
        folder_map = parse_folder_map(folders)
        from sds_jupyter.stack.remote import LOCAL_SCHEMES, RemotePath, is_url

        if is_url(path) or isinstance(path, RemotePath):
            from sds_jupyter.stack.remote import resolve_remote

            return resolve_remote(path, folder_map, storage_options)  # type: ignore[arg-type]
        if isinstance(path, str) and path.startswith(LOCAL_SCHEMES):
            path = path.split("://", 1)[1]
        top = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
        located = _locate_version(top)
        if located is None:
            return cls._store_only(top, folder_map)
        dataset_folder, data_dir = located
        datasets_dir = dataset_folder.parent
        locator = DatasetLocator(datasets_dir, folder_map)
        top_id = folder_map.id_for_folder(dataset_folder.name) or dataset_folder.name
        return _walk(top_id, dataset_folder, data_dir, locator, folder_map)

    @classmethod
    def _store_only(cls, path: Path, folder_map: FolderMap) -> Stack:
        if not path.exists():
            raise StackError(
                f"{path} does not exist; give a version folder (with layer.json) or a store"
            )
        source = open_source(path)
        try:
            zarr_format = zarr_format_of(source, str(path))
        except StackError:
            raise StackError(
                f"{path} holds no layer.json and is not a Zarr store; "
                "give a version folder, its layer.json, or a store"
            ) from None
        finally:
            source.close()
        dataset_folder = path.parent
        base = BaseInfo(
            dataset_id=folder_map.id_for_folder(dataset_folder.name) or dataset_folder.name,
            path=Path(os.path.realpath(path)),
            reference=None,
            kind="folder" if path.is_dir() else "zip",
            zarr_format=zarr_format,
        )
        return cls(versions=(), base=base, datasets_dir=dataset_folder.parent, folders=folder_map)

    # -- views --------------------------------------------------------------------------

    @property
    def protected_folders(self) -> list[Path]:
        """Every local folder of the stack: the base and each version's folder, data and overlay.

        Nothing sds-jupyter writes (a new version, a flattened store, an exported
        figure) may land inside one of them.
        """
        folders = [self.base.path] + [
            p for v in self.versions for p in (v.folder, v.data_dir, v.overlay_dir)
        ]
        return [folder for folder in folders if isinstance(folder, Path)]

    def refuse_output_inside(self, out: Path, what: str) -> None:
        """Raise WriteRefusedError if ``out`` (followed through links) lies inside the stack."""
        real_out = os.path.realpath(out)
        for folder in self.protected_folders:
            if is_within(real_out, os.path.realpath(folder)):
                raise WriteRefusedError(
                    f"{out} is inside {folder}, part of the stack; versions and bases are never "
                    f"written to: write the {what} outside them"
                )

    @property
    def depth(self) -> int:
        """How many versions sit on the base (0 for a store alone)."""
        return len(self.versions)

    @property
    def top(self) -> Version | None:
        return self.versions[0] if self.versions else None

    def at(self, selector: int | str) -> Stack:
        """The stack whose top is one of this stack's versions.

        ``selector`` is a depth (0 is the base alone), a dataset ID or a title.
        """
        depth = self.depth_of(selector)
        return Stack(
            versions=self.versions[self.depth - depth :],
            base=self.base,
            datasets_dir=self.datasets_dir,
            folders=self.folders,
        )

    def depth_of(self, selector: int | str) -> int:
        """The depth a selector names; refuses one that names nothing here."""
        if isinstance(selector, bool):
            raise StackError(f"no version {selector!r} in this stack")
        if isinstance(selector, int):
            if 0 <= selector <= self.depth:
                return selector
            raise StackError(
                f"no version at depth {selector}: this stack has depths 0 (the base) to {self.depth}"
            )
        if isinstance(selector, str):
            if selector.isdigit():
                return self.depth_of(int(selector))
            for version in self.versions:
                if selector in (version.dataset_id, version.manifest.title):
                    return version.depth
            if selector in ("base", self.base.dataset_id):
                return 0
        raise StackError(
            f"no version {selector!r} in this stack; give a depth, a dataset ID or a title"
        )


def _is_entry(path: Path) -> bool:
    """Whether something that is not a folder sits at ``path`` (a FIFO too, so the reader refuses it)."""
    return os.path.lexists(path) and not path.is_dir()


def _locate_version(path: Path) -> tuple[Path, Path] | None:
    """``(dataset folder, data dir)`` of the version at ``path``, or None for a store."""
    if path.name == MANIFEST_NAME and _is_entry(path):
        data_dir = path.parent
        folder = data_dir.parent if data_dir.name == "data" else data_dir
        return folder, data_dir
    if path.is_dir():
        if _is_entry(path / MANIFEST_NAME):
            # A dataset's data/ folder opened directly: the dataset is its parent.
            return (path.parent if path.name == "data" else path), path
        if _is_entry(path / "data" / MANIFEST_NAME):
            return path, path / "data"
    return None


def _walk(
    top_id: str,
    dataset_folder: Path,
    data_dir: Path,
    locator: DatasetLocator,
    folder_map: FolderMap,
) -> Stack:
    """Follow parents from the version in ``data_dir`` down to the base.

    ``locator`` is a :class:`DatasetLocator` on a local disk, or a
    :class:`~sds_jupyter.stack.remote.RemoteLocator` in object storage: the same walk.
    """
    try:
        return _walk_chain(top_id, dataset_folder, data_dir, locator, folder_map)
    finally:
        locator.close()


def _walk_chain(
    top_id: str,
    dataset_folder: Path,
    data_dir: Path,
    locator: DatasetLocator,
    folder_map: FolderMap,
) -> Stack:
    chain: list[tuple[str, Path, Path, Path, Manifest]] = []
    seen: set[str] = set()
    manifest_bytes = 0
    dataset_id = top_id
    manifest_path = locator.manifest_location(dataset_folder, data_dir)
    while True:
        if str(manifest_path) in seen:
            raise StackCycleError(
                f"the parent chain comes back to {dataset_id} ({manifest_path}); "
                "the versions' parent references form a loop"
            )
        if len(chain) == MAX_DEPTH:
            raise StackTooDeepError(
                f"the parent chain runs more than {MAX_DEPTH} versions deep; "
                "flatten a lower version and build on that"
            )
        seen.add(str(manifest_path))
        manifest = locator.read_manifest(manifest_path)
        manifest_bytes += manifest.source_bytes
        if manifest_bytes > MAX_STACK_MANIFEST_BYTES:
            raise ManifestError(
                f"the manifests of this stack add up to more than {MAX_STACK_MANIFEST_BYTES} bytes "
                f"(reached at {dataset_id}); no real stack has manifests this large"
            )
        if not chain:
            locator.hint_base(manifest.base)
        real_data_dir = manifest_path.parent
        overlay_dir = locator.contained(real_data_dir, manifest.overlay, f"overlay folder of {dataset_id}")
        chain.append((dataset_id, dataset_folder, real_data_dir, overlay_dir, manifest))
        ref = CirroRef.parse(manifest.parent)
        try:
            target = locator.resolve(ref)
        except MissingDatasetError as exc:
            # keep what did resolve: a browser still shows it, down to the break
            exc.partial = PartialChain(_versions(chain), locator.datasets_dir, folder_map, exc.dataset_id)
            raise
        if not ref.names_manifest:
            base = _base_info(ref, target, locator)
            break
        dataset_id = ref.dataset_id
        dataset_folder = locator.dataset_folder(ref.dataset_id)
        manifest_path = target  # resolve() gave its real location already
    return Stack(versions=_versions(chain), base=base, datasets_dir=locator.datasets_dir, folders=folder_map)


def _versions(chain: list[tuple[str, Path, Path, Path, Manifest]]) -> tuple[Version, ...]:
    """The walked chain as Versions, top first, the lowest at depth 1."""
    depth = len(chain)
    return tuple(
        Version(
            dataset_id=dataset_id,
            folder=folder,
            data_dir=data,
            overlay_dir=overlay,
            manifest=manifest,
            depth=depth - index,
        )
        for index, (dataset_id, folder, data, overlay, manifest) in enumerate(chain)
    )


def _base_info(ref: CirroRef, target: Path, locator: DatasetLocator) -> BaseInfo:
    kind, zarr_format = locator.probe_store(target, f"the base store {ref}")
    return BaseInfo(
        dataset_id=ref.dataset_id,
        path=target,
        reference=str(ref),
        kind=kind,
        zarr_format=zarr_format,
        opened=locator.opened_source(target),
    )
