"""Fetching the manifests of a deep stack in object storage at once, not one round trip each.

Each manifest names its parent, so a walk down the chain waits for one response
before it can ask for the next: 500 versions at 20 ms a request are 10 s. When
the chain turns out deep and the datasets folder can be listed, one listing
names every dataset folder, and their manifests are fetched concurrently
(:data:`THREADS` at a time); the walk then goes on in memory.

A fetch here is the same ranged read the walk would make, at the same place
(``<folder>/layer.json``, else ``<folder>/data/layer.json``), so the walk trusts
an answer from here as it would its own: a manifest found, or no manifest at
either place. Folders whose names are no plain relative path are skipped, as is
the whole prefetch when the folder holds more datasets than
:data:`MAX_FOLDERS` (fetching them all would cost more than the walk saves).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from zarr.abc.store import RangeByteRequest

from sds_jupyter.errors import StackError
from sds_jupyter.stack.manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES
from sds_jupyter.stack.storage.location import Location
from sds_jupyter.stack.storage.paths import dataset_places

__all__ = ["AFTER", "MAX_FOLDERS", "THREADS", "ManifestPrefetch"]

#: Prefetch once the walk has followed this many parent references one by one: a
#: shallow stack costs no listing and no fetch it does not need.
AFTER = 8
#: Requests in flight at once.
THREADS = 32
#: No prefetch in a datasets folder of more dataset folders than this.
MAX_FOLDERS = 2000

_RANGE = RangeByteRequest(0, MAX_MANIFEST_BYTES + 1)


class ManifestPrefetch:
    """The manifests of every dataset folder of one datasets folder, fetched concurrently.

    :meth:`answer` says what a fetch at a location gave: the bytes, ``None``
    (no manifest there), or :data:`UNKNOWN` (not fetched here).
    """

    UNKNOWN = object()

    def __init__(self, datasets_dir: Location, known: set[str]) -> None:
        self._answers: dict[str, bytes | None] = {}
        folders = self._folders(datasets_dir)
        if folders is None:
            return
        with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="sds-manifests") as pool:
            for found in pool.map(lambda f: self._fetch(f, known), folders):
                self._answers.update(found)

    @staticmethod
    def _folders(datasets_dir: Location) -> list[Location] | None:
        try:
            names = [name for name, is_folder in datasets_dir.list_folder() if is_folder]
        except (OSError, StackError):
            return None  # not listable (no permission, plain HTTP): the walk goes on one by one
        if len(names) > MAX_FOLDERS:
            return None
        folders = []
        for name in names:
            try:
                folders.append(datasets_dir.join(name, "dataset folder"))
            except StackError:
                continue  # a name no reference could lead to
        return folders

    @staticmethod
    def _fetch(folder: Location, known: set[str]) -> dict[str, bytes | None]:
        """The top manifest place, then ``data/``: as far as the walk would look."""
        places = tuple(folder.join(relative) for relative in dataset_places(MANIFEST_NAME))
        answers: dict[str, bytes | None] = {}
        if any(str(place) in known for place in places):
            return answers  # the walk read this one already
        for place in places:
            try:
                data = place.read_object("", _RANGE)
            except (OSError, StackError):
                return answers  # left unknown: the walk asks again and words the error
            answers[str(place)] = data
            if data is not None:
                break
        return answers

    def answer(self, location: Location) -> bytes | object | None:
        return self._answers.get(str(location), self.UNKNOWN)

    def __len__(self) -> int:
        return len(self._answers)
