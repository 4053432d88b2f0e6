"""One StackService per opened path, reopened when a manifest changes.

The server answers many small requests per browser view; resolving the
stack and re-reading uns for each would repeat the same work. A service is
kept per (path, folder map) and dropped when any of its manifests or its base
changes on disk (a new download over an old one), or when it could not be
resolved (so attaching a missing parent is noticed on the next request).
"""

from __future__ import annotations

import os
from pathlib import Path

from sds_jupyter.limits import MAX_CACHED_SERVICES
from sds_jupyter.lru import ByteLRU
from sds_jupyter.server.confine import check_datasets_dir_inside, check_stack_inside, resolve_in_root
from sds_jupyter.service import StackService

__all__ = ["ServiceCache"]

Signature = tuple[tuple[str, int], ...]


def _signature(service: StackService) -> Signature | None:
    """Modification times of every manifest and the base; None when unresolved, unreadable or in object storage."""
    try:
        return service.stack.file_times()
    except (OSError, ValueError):
        return None


class ServiceCache:
    """Services by path under one server root; safe to use from worker threads."""

    def __init__(self, root_dir: str | os.PathLike[str], max_entries: int = MAX_CACHED_SERVICES) -> None:
        self.root_dir = os.path.realpath(root_dir)
        self._entries: ByteLRU[tuple[Signature | None, StackService]] = ByteLRU(None, max_entries=max_entries)

    @property
    def max_entries(self) -> int:
        """How many services are kept at most."""
        return self._entries.max_entries or 0

    def resolve(self, relative: str) -> Path:
        """The absolute path a request names (see :func:`resolve_in_root`)."""
        return resolve_in_root(self.root_dir, relative)

    def service(self, relative: str) -> StackService:
        """The service of the version at ``relative`` (checked to stay inside the root)."""
        path = self.resolve(relative)
        key = (str(path), os.environ.get("SDS_CIRRO_DATASETS", ""))
        cached = self._entries.get(key)  # now the most recently used: the least is dropped when full
        if cached is not None and cached[0] is not None and _signature(cached[1]) == cached[0]:
            return cached[1]
        check_datasets_dir_inside(path, self.root_dir)
        service = StackService(path, relative_to=self.root_dir)
        if service.error is None:
            check_stack_inside(service, self.root_dir)
        self._entries.put(key, (_signature(service), service))
        return service
