"""Where a save may write, and where else a version's parents may be: the Cirro workspace rules.

In a Cirro workspace every attached dataset is a read-only mount under
``$HOME/datasets``. A version saved on one of them cannot go beside its parent, so
it goes into a writable *versions folder* that outlives a workspace restart
(``$HOME/sds-versions``, or ``$SDS_VERSIONS_DIR``, or the ``into=`` of the save).
Its parent reference still names the parent's Cirro dataset ID, so it stays valid
once it is uploaded; reading it back then needs parents looked up outside its own
folder. :func:`parent_roots` is the one statement of that order.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path

from sds_jupyter.errors import UnsafePathError, WriteRefusedError
from sds_jupyter.stack.refs import FOLDER_MAP_ENV
from sds_jupyter.stack.storage.location import LocalLocation, Location, location_of
from sds_jupyter.stack.storage.paths import check_dataset_id

__all__ = [
    "DATASETS_DIR_ENV",
    "FETCHED_DIR_ENV",
    "UPLOADS_DIR",
    "VERSIONS_DIR_ENV",
    "can_write",
    "fetched_dir",
    "in_cirro",
    "in_workspace",
    "listed_beside",
    "parent_roots",
    "prepare_folder",
    "uploaded_id",
    "version_destination",
    "versions_dir",
    "workspace_datasets_dir",
    "workspace_key",
]

#: The writable folder for versions whose parents' folder is read-only.
VERSIONS_DIR_ENV = "SDS_VERSIONS_DIR"
#: The workspace's (read-only) datasets folder; ``$HOME/datasets`` by default, as Cirro mounts it.
DATASETS_DIR_ENV = "SDS_DATASETS_DIR"
#: Where ``sds-jupyter fetch`` puts datasets downloaded from Cirro, each in a folder named by its ID.
FETCHED_DIR_ENV = "SDS_CIRRO_CACHE"


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def versions_dir() -> Path:
    """The writable versions folder: ``$SDS_VERSIONS_DIR``, else ``$HOME/sds-versions``."""
    return Path(os.path.abspath(os.environ.get(VERSIONS_DIR_ENV) or _home() / "sds-versions"))


def workspace_datasets_dir() -> Path:
    """The workspace's datasets folder: ``$SDS_DATASETS_DIR``, else ``$HOME/datasets``."""
    return Path(os.path.abspath(os.environ.get(DATASETS_DIR_ENV) or _home() / "datasets"))


def fetched_dir() -> Path:
    """Datasets fetched from Cirro: ``$SDS_CIRRO_CACHE``, else ``$XDG_CACHE_HOME/sds-jupyter/datasets``."""
    configured = os.environ.get(FETCHED_DIR_ENV)
    if configured:
        return Path(os.path.abspath(configured))
    cache = os.environ.get("XDG_CACHE_HOME") or _home() / ".cache"
    return Path(os.path.abspath(cache)) / "sds-jupyter" / "datasets"


def in_workspace() -> bool:
    """A Cirro workspace sets the folder map; ``SDS_DATASETS_DIR`` says the same by hand."""
    return bool(os.environ.get(FOLDER_MAP_ENV) or os.environ.get(DATASETS_DIR_ENV))


def can_write(folder: str | os.PathLike[str]) -> bool:
    """Whether new entries can be made in ``folder`` (a read-only mount answers no, even to root)."""
    return os.access(folder, os.W_OK | os.X_OK)


def prepare_folder(folder: Path, why: str) -> None:
    """Make ``folder`` if needed; refuse, in one line, one that cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteRefusedError(f"cannot save a version into {folder}: {exc.strerror or exc}; {why}") from None
    if not folder.is_dir() or not can_write(folder):
        raise WriteRefusedError(f"cannot save a version into {folder}: it is not a writable folder; {why}")


_CHOOSE = f"set {VERSIONS_DIR_ENV} or pass into= a writable folder"


def version_destination(beside: Path, dest: str | os.PathLike[str] | None, into: str | os.PathLike[str] | None) -> Path:
    """The new folder a version is saved as.

    ``dest`` is that folder itself. Otherwise a fresh ID names it, in ``into`` if
    given, else beside its parent when that folder can be written, else in the
    versions folder: a read-only mount is never written to.
    """
    if dest:
        dest_path = Path(os.path.abspath(dest))
        prepare_folder(dest_path.parent, "choose another destination")
        return dest_path
    if into is not None:
        folder = Path(os.path.abspath(os.path.expanduser(into)))
        prepare_folder(folder, "give into= a writable folder")
    elif can_write(beside):
        folder = Path(beside)
    else:
        folder = versions_dir()
        prepare_folder(folder, f"{beside} is read-only; {_CHOOSE}")
    return folder / str(uuid.uuid4())


def parent_roots(own: Location) -> tuple[LocalLocation, ...]:
    """Where parents are looked up after the version's own datasets folder ``own``, in order.

    The versions folder (a version saved there may sit on another one saved there),
    the workspace's datasets folder (in a workspace: the parents a version saved on
    a read-only mount names), then the fetched datasets. Only folders that exist,
    and none twice; nothing for a stack in object storage.
    """
    own_local = own.as_local()
    if own_local is None:
        return ()
    candidates = [versions_dir()]
    if in_workspace():
        candidates.append(workspace_datasets_dir())
    candidates.append(fetched_dir())
    seen = {own_local.real_path()}
    roots: list[LocalLocation] = []
    for folder in candidates:
        if not folder.is_dir():
            continue
        root = location_of(folder).real().as_local()
        if root is not None and root.real_path() not in seen:
            seen.add(root.real_path())
            roots.append(root)
    return tuple(roots)


def workspace_key() -> tuple[str, ...]:
    """What :func:`parent_roots` depends on, without touching the disk: part of a resolved stack's cache key."""
    return (str(versions_dir()), str(workspace_datasets_dir()) if in_workspace() else "", str(fetched_dir()))


def listed_beside(datasets_dir: Path) -> list[Path]:
    """The folders whose versions a tree lists beside ``datasets_dir``'s: in a workspace, the
    versions folder and the mounted datasets (whichever ``datasets_dir`` is not), when they exist."""
    if not in_workspace():
        return []
    own = os.path.realpath(datasets_dir)
    found: list[Path] = []
    for folder in (workspace_datasets_dir(), versions_dir()):
        real = os.path.realpath(folder)
        if real != own and os.path.isdir(real) and Path(real) not in found:
            found.append(Path(real))
    return found


#: The folder, beside uploaded versions, that records each one's Cirro ID (``<local ID>.json``).
UPLOADS_DIR = ".sds-uploaded"


def uploaded_id(holder: Path, local_id: str) -> str | None:
    """The Cirro ID recorded for the version ``local_id`` uploaded from folder ``holder``, if any."""
    try:
        record = json.loads((holder / UPLOADS_DIR / f"{local_id}.json").read_text())
    except (OSError, ValueError):
        return None
    found = record.get("dataset_id") if isinstance(record, dict) else None
    try:
        return check_dataset_id(found)
    except UnsafePathError:
        return None


def in_cirro(dataset_id: str, folders: Mapping[str, str], holder: Path | None = None) -> bool:
    """Whether a version is a Cirro dataset as far as this workspace knows.

    Outside a workspace, always. In one, the folder map names every attached dataset,
    and the fetch folder holds datasets fetched from Cirro by their IDs; a version
    elsewhere whose ID the map does not name was saved here (or copied by hand: only
    Cirro can tell, when an upload asks it): it is in Cirro once its upload (or Cirro's
    answer that it is a copy) is recorded beside it in ``holder``.
    """
    if not in_workspace() or dataset_id in folders:
        return True
    if holder is None:
        return False
    if os.path.realpath(holder) == os.path.realpath(fetched_dir()):
        return True
    return uploaded_id(holder, dataset_id) is not None
