"""The stack library: versions of a SpatialData store, with no Jupyter in sight."""

from __future__ import annotations

from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.location import Location, RemotePath, is_url, location_of
from sds_jupyter.stack.manifest import FileEntry, Manifest, parse_manifest, read_manifest
from sds_jupyter.stack.refs import CirroRef, FolderMap, parse_folder_map
from sds_jupyter.stack.stack import MAX_DEPTH, BaseInfo, Stack, Version
from sds_jupyter.stack.store import LayerIndex, StackStore, open_stack

__all__ = [
    "MAX_DEPTH",
    "BaseInfo",
    "CirroRef",
    "FileEntry",
    "FolderMap",
    "LayerIndex",
    "Location",
    "Manifest",
    "RemotePath",
    "Stack",
    "StackCaches",
    "StackStore",
    "Version",
    "is_url",
    "location_of",
    "open_stack",
    "parse_folder_map",
    "parse_manifest",
    "read_manifest",
]
