"""Save a new version: the ops of the format, on a copy-on-write store, then commit.

The work is split by job: :mod:`~sds_jupyter.stack.write.encode` (values as the format
stores them), :mod:`~sds_jupyter.stack.write.ops` (the ops, staged),
:mod:`~sds_jupyter.stack.write.consolidate` (the root's consolidated index) and
:mod:`~sds_jupyter.stack.write.commit` (the overlay and ``layer.json``, renamed into
place). :class:`VersionWriter` puts them together.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sds_jupyter.errors import WriteRefusedError
from sds_jupyter.stack.caches import StackCaches, default_caches
from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.write.commit import APP_ID, commit_version
from sds_jupyter.stack.write.consolidate import consolidated_index
from sds_jupyter.stack.write.cow import CopyOnWriteStore
from sds_jupyter.stack.write.encode import STUDIO_KEY, encode_element, no_auto_sharding, studio_path
from sds_jupyter.stack.write.ops import VersionOps

__all__ = [
    "APP_ID",
    "STUDIO_KEY",
    "VersionWriter",
    "consolidated_index",
    "encode_element",
    "no_auto_sharding",
    "studio_path",
]


class VersionWriter(VersionOps):
    """Stages the changes of one new version over ``stack``; :meth:`commit` saves it.

    Example
    -------
    >>> writer = VersionWriter(Stack.resolve("datasets/<top version>"))
    >>> writer.set_obs("table", "regions", regions)            # doctest: +SKIP
    >>> writer.commit(title="Regions", message="Drawn by hand")  # doctest: +SKIP
    """

    def __init__(
        self, stack: Stack | str | os.PathLike[str], folders: Any = None, *, caches: StackCaches | None = None
    ) -> None:
        """``stack`` is a resolved stack, or a path resolved with ``folders`` and ``caches`` (see :meth:`Stack.resolve`)."""
        self.stack = stack if isinstance(stack, Stack) else Stack.resolve(stack, folders=folders, caches=caches)
        #: Where the commit finds the stack's root index decoded, and keeps the new one's.
        self.caches = default_caches(caches)
        if self.stack.base.path.as_local() is None:
            raise WriteRefusedError(
                f"{self.stack.base.path} is in object storage; versions are saved into local "
                "dataset folders beside their parents. Download the stack's datasets and save there"
            )
        if self.stack.base.zarr_format != 3:
            raise WriteRefusedError(
                f"the base store {self.stack.base.path} is Zarr v2; versions hold Zarr v3 objects. "
                "Rewrite the store with a current spatialdata (read_zarr, then write) and save on that"
            )
        super().__init__(CopyOnWriteStore(self.stack))

    def commit(
        self,
        dest: str | os.PathLike[str] | None = None,
        *,
        into: str | os.PathLike[str] | None = None,
        **details: str | None,
    ) -> Path:
        """Save the staged changes as a new version (into=, title=, message=, created_by=): see commit_version."""
        self._check_open()
        folder = commit_version(self.stack, self.store, self.changes, dest, into=into, caches=self.caches, **details)
        self._committed = True
        return folder
