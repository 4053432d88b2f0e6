"""Shared fixtures: the demo stack (built once per run) and empty datasets folders."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import zarr
from kit.backends import backend  # noqa: F401 - the local, zip and S3 backends
from kit.s3kit import requests, s3, s3_server, storage_options  # noqa: F401 - fixtures for every module


@pytest.fixture(scope="session", autouse=True)
def _no_user_caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Session and module fixtures (set up before any test's own folders below) keep nothing in the
    user's caches either: their stack records, points indexes and cell geometry go to the run's folder."""
    shared = tmp_path_factory.mktemp("session-caches")
    with pytest.MonkeyPatch.context() as patch:
        for env, leaf in (
            ("SDS_STACK_CACHE", "stacks"),
            ("SDS_POINTS_CACHE", "points"),
            ("SDS_GEOMETRY_CACHE", "geometry"),
        ):
            patch.setenv(env, str(shared / leaf))
        yield


@pytest.fixture(scope="session")
def demo_top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo stack's top version folder, built by spatialdata and our writer."""
    from sds_jupyter.demo import build_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_demo(tmp_path_factory.mktemp("demo"), small=True)


@pytest.fixture(scope="session")
def xenium_top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Xenium-like demo (1,500 cells; a 2,048 px, 3-channel pyramid in 1,024 px chunks; canvas
    figures over it; six versions, ``X_pca`` saved by "Leiden clusters"): its top version's folder.

    Built once per run for the requests that read it (tiles, embeddings); a test that writes copies it.
    """
    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("xenium"), n_cells=1500, side=2048)


@pytest.fixture
def datasets(tmp_path: Path) -> Path:
    """An empty datasets folder, as a download of several Cirro datasets lays out."""
    folder = tmp_path / "datasets"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def _no_folder_map_from_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tests set SDS_CIRRO_DATASETS themselves when they mean to; no workspace folder of the machine is read
    (nor the user's records of resolved stacks, their points indexes or their cell geometry)."""
    monkeypatch.delenv("SDS_CIRRO_DATASETS", raising=False)
    monkeypatch.delenv("SDS_DATASETS_DIR", raising=False)
    monkeypatch.setenv("SDS_VERSIONS_DIR", str(tmp_path / "sds-versions"))
    monkeypatch.setenv("SDS_CIRRO_CACHE", str(tmp_path / "cirro-cache"))
    # Records of resolved stacks: the test's own, beside tmp_path rather than in it, so tests that
    # check what a folder holds see only what they wrote.
    monkeypatch.setenv("SDS_STACK_CACHE", str(tmp_path_factory.mktemp("stack-cache")))
    # Points indexes kept on disk: the test's own folder too (made 0700 on first use).
    monkeypatch.setenv("SDS_POINTS_CACHE", str(tmp_path_factory.mktemp("points-cache") / "points"))
    # Cell geometry kept on disk: likewise the test's own (so no test maps another's entry).
    monkeypatch.setenv("SDS_GEOMETRY_CACHE", str(tmp_path_factory.mktemp("geometry-cache") / "geometry"))


@pytest.fixture(scope="session")
def xenium_root(tmp_path_factory: pytest.TempPathFactory) -> zarr.Group:
    """A small Xenium-like base: a 4,096 px, 3-channel pyramid (4096, 2048, ...) in micrometres."""
    from sds_jupyter.demo.tissue import make_tissue
    from sds_jupyter.demo.xenium import _write_base

    path = tmp_path_factory.mktemp("xenium") / "x.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _write_base(make_tissue(n_cells=500, side=4096), path)
    return zarr.open_group(str(path), mode="r")
