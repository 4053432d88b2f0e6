"""One stack, three places: a local folder base, a local ``.zarr.zip`` base, and S3.

The ``backend`` fixture builds stacks with :mod:`stackkit` in a local datasets
folder; :meth:`Backend.at` hands out the path (or, for S3, uploads the folder to
a fresh prefix of the moto server and hands out its URL). The same test then
runs against each backend, so the reader's behaviour cannot drift between them.
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kit.s3kit import upload
from kit.stackkit import write_base
from sds_jupyter import Stack, StackStore

BACKENDS = ("folder", "zip", "s3", "s3-zip")


@dataclass
class Backend:
    """Where a test's stack is read from; written locally first, always."""

    name: str
    datasets: Path
    s3: Any = None
    storage_options: dict[str, Any] | None = None

    @property
    def remote(self) -> bool:
        return self.name.startswith("s3")

    @property
    def zipped(self) -> bool:
        return self.name.endswith("zip")

    def base(self, dataset_id: str, files: Mapping[str, bytes], name: str = "store.zarr") -> str:
        """A base store in dataset ``dataset_id`` (a folder, or a stored zip of it); its reference."""
        ref = write_base(self.datasets, dataset_id, files, name)
        if not self.zipped:
            return ref
        folder = self.datasets / dataset_id / name
        with zipfile.ZipFile(f"{folder}.zip", "w", zipfile.ZIP_STORED) as archive:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(folder).as_posix())
        shutil.rmtree(folder)
        return f"{ref}.zip"

    def base_name(self, name: str = "store.zarr") -> str:
        return f"{name}.zip" if self.zipped else name

    def at(self, relative: str) -> str | Path:
        """What a reader is given for ``relative`` in the datasets folder: a path or a URL."""
        if not self.remote:
            return self.datasets / relative
        return f"{upload(self.s3, self.datasets)}/{relative}"

    def resolve(self, relative: str, **kwargs: Any) -> Stack:
        return Stack.resolve(self.at(relative), storage_options=self.storage_options, **kwargs)

    def open(self, relative: str, **kwargs: Any) -> StackStore:
        return StackStore(self.resolve(relative, **kwargs))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, datasets: Path) -> Backend:
    """The same stack, read from each backend in turn."""
    name: str = request.param
    if not name.startswith("s3"):
        return Backend(name, datasets)
    s3 = request.getfixturevalue("s3")
    return Backend(name, datasets, s3, request.getfixturevalue("storage_options"))
