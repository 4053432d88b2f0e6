"""The stack library: versions of a SpatialData store, with no Jupyter in sight.

This module is its one front door. Code outside ``sds_jupyter/stack/`` imports the library only
from here (an import-linter contract): the storage wing (``stack/storage/``), the write wing
(``stack/write/``) and the floor's modules can then be rearranged, or storage change kind,
without a caller noticing. What a caller needs that only the storage knows (is a place on this
disk, inside a root, listable) is a question asked of a :class:`Stack`, never of a location's kind.
"""

from __future__ import annotations

# Versions: resolve a chain, read it as a zarr store or an AnnData, describe and check it.
from sds_jupyter.stack.caches import StackCaches, default_caches
from sds_jupyter.stack.exchange import (
    PROJECT_ENV,
    AlreadyInCirro,
    confirm_in_cirro,
    fetch_missing,
    list_projects,
    plan_upload,
    upload_version,
)
from sds_jupyter.stack.flatcopy import flatten
from sds_jupyter.stack.identity import node_identity
from sds_jupyter.stack.inspect import check, describe

# Finding versions: the datasets folder's listing, the tree's scan, the workspace's folders.
from sds_jupyter.stack.listing import (
    FoundVersion,
    PartialChain,
    listing_fingerprint,
    scan_versions,
    version_listing,
)
from sds_jupyter.stack.manifest import FileEntry, Manifest, parse_manifest, read_manifest
from sds_jupyter.stack.open import open_anndata, open_spatialdata, open_table_group
from sds_jupyter.stack.refs import CirroRef, FolderMap, parse_folder_map
from sds_jupyter.stack.stack import (
    MAX_DEPTH,
    BaseInfo,
    Stack,
    Version,
    depth_above_missing,
    is_version,
    parents_inside,
)
from sds_jupyter.stack.storage.location import Location, RemotePath, is_url, location_of

# The per-user cache folder's rules (owner-only, no links), for other records kept on disk (points indexes).
from sds_jupyter.stack.storage.ondisk import (
    cache_dir,
    map_private_array,
    open_private,
    own_regular,
    read_private_json,
)
from sds_jupyter.stack.storage.paths import DATA_DIR, is_within
from sds_jupyter.stack.store import LayerIndex, StackStore, open_stack
from sds_jupyter.stack.workspace import in_cirro, listed_beside

# Writing: a new version from an edited AnnData (save), or op by op (the writer).
from sds_jupyter.stack.write.save import SavePlan, commit_plan, obs_column_plan, save_version
from sds_jupyter.stack.write.writer import VersionWriter, no_auto_sharding

__all__ = [
    "DATA_DIR",
    "MAX_DEPTH",
    "PROJECT_ENV",
    "AlreadyInCirro",
    "BaseInfo",
    "CirroRef",
    "FileEntry",
    "FolderMap",
    "FoundVersion",
    "LayerIndex",
    "Location",
    "Manifest",
    "PartialChain",
    "RemotePath",
    "SavePlan",
    "Stack",
    "StackCaches",
    "StackStore",
    "Version",
    "VersionWriter",
    "cache_dir",
    "check",
    "commit_plan",
    "confirm_in_cirro",
    "default_caches",
    "depth_above_missing",
    "describe",
    "fetch_missing",
    "flatten",
    "in_cirro",
    "is_url",
    "is_version",
    "is_within",
    "list_projects",
    "listed_beside",
    "listing_fingerprint",
    "location_of",
    "map_private_array",
    "no_auto_sharding",
    "node_identity",
    "obs_column_plan",
    "open_anndata",
    "open_private",
    "open_spatialdata",
    "open_stack",
    "open_table_group",
    "own_regular",
    "parents_inside",
    "parse_folder_map",
    "parse_manifest",
    "plan_upload",
    "read_manifest",
    "read_private_json",
    "save_version",
    "scan_versions",
    "upload_version",
    "version_listing",
]
