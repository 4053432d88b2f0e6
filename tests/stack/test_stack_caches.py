"""StackCaches: what the stack library remembers is owned by its caller, passed explicitly, and bounded.

Two owners share nothing (a manifest parsed under one is never served from the other,
clearing one leaves the other), a stack resolved with its own caches fills those and not
the process's, a session hands its caches to everything it opens, and every piece keeps
its bound. No module of the stack library keeps a cache of its own.
"""

from __future__ import annotations

import ast
import gc
import os
import zipfile
from pathlib import Path

import anndata
import numpy as np
import pandas as pd
import pytest
import zarr
from kit.stackkit import ROOT_DOC, chain, write_base, write_version

from sds_jupyter.limits import SCANS_CACHE_BYTES
from sds_jupyter.service import StackService
from sds_jupyter.stack import Stack, locator, open_stack
from sds_jupyter.stack.caches import (
    MAX_RESOLVED_STACKS,
    MAX_SCANS,
    OpenedRecords,
    StackCaches,
    TreeScans,
    default_caches,
)
from sds_jupyter.stack.listing import listing_fingerprint, scan_versions, version_listing
from sds_jupyter.stack.open import open_anndata
from sds_jupyter.stack.opened import opened_record
from sds_jupyter.stack.storage import zipindex


@pytest.fixture(autouse=True)
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written a moment ago are cached (tests cannot wait out the racy windows)."""
    monkeypatch.setattr(locator, "RACY_SECONDS", 0.0)
    monkeypatch.setattr(zipindex, "FRESH_SECONDS", 0.0)


@pytest.fixture
def top(datasets: Path) -> Path:
    base = write_base(datasets, "base", {"a/zarr.json": b"{}", "a/c/0": b"base"})
    return chain(datasets, 3, base)


def _real(path: object) -> str:
    return os.path.realpath(str(path))


def test_a_stack_resolved_with_its_own_caches_fills_those_and_not_the_default(top: Path) -> None:
    default = default_caches()
    default.clear()
    mine = StackCaches()
    first = Stack.resolve(top, caches=mine)
    assert len(mine.manifests) == 3 and len(mine.stacks) == 1
    assert len(default.manifests) == 0 and len(default.stacks) == 0
    assert Stack.resolve(top, caches=mine) is first and mine.stacks.hits == 1
    again = Stack.resolve(top)  # the process's caches knew nothing of it: walked and parsed again
    assert again is not first and again.top.manifest is not first.top.manifest
    assert len(default.stacks) == 1 and len(default.manifests) == 3
    assert open_stack(top, caches=mine).stack is first


def test_two_caches_share_nothing(top: Path) -> None:
    a, b = StackCaches(), StackCaches()
    from_a, from_b = Stack.resolve(top, caches=a), Stack.resolve(top, caches=b)
    assert from_a is not from_b
    for va, vb in zip(from_a.versions, from_b.versions, strict=True):
        assert va.manifest == vb.manifest and va.manifest is not vb.manifest  # each parsed its own
        path = _real(va.manifest_path)
        assert a.manifests.lookup(path)[0] is va.manifest  # type: ignore[index]
        assert b.manifests.lookup(path)[0] is vb.manifest  # type: ignore[index]
    a.clear()
    assert len(a.manifests) == 0 and len(a.stacks) == 0
    assert len(b.manifests) == 3 and Stack.resolve(top, caches=b) is from_b  # clearing one left the other
    assert Stack.resolve(top, caches=a) is not from_a


def test_listings_through_other_caches_parse_and_scan_again(datasets: Path, top: Path) -> None:
    a, b = StackCaches(), StackCaches()
    scan_a = scan_versions(datasets, caches=a)
    assert scan_versions(datasets, caches=a) is scan_a  # kept, proven unchanged
    scan_b = scan_versions(datasets, caches=b)
    assert scan_b is not scan_a
    assert [v.manifest for v in scan_b.versions] == [v.manifest for v in scan_a.versions]
    assert all(x.manifest is not y.manifest for x, y in zip(scan_a.versions, scan_b.versions, strict=True))
    assert listing_fingerprint(datasets, caches=a) == listing_fingerprint(datasets, caches=b)
    titles = version_listing(datasets, caches=StackCaches())[0]
    assert sorted(titles) == [(f"v{n}", f"version v{n}") for n in (1, 2, 3)]
    # opening through the caches that listed reuses the listing's parse
    assert (
        Stack.resolve(top, caches=a).top.manifest is next(v for v in scan_a.versions if v.dataset_id == "v3").manifest
    )
    b.clear()
    assert len(b.scans) == 0 and len(b.manifests) == 0 and len(a.scans) == 1


def test_a_zip_base_is_indexed_in_the_caches_given(datasets: Path) -> None:
    folder = datasets / "zbase"
    folder.mkdir()
    with zipfile.ZipFile(folder / "store.zarr.zip", "w") as archive:
        archive.writestr("zarr.json", ROOT_DOC)
        archive.writestr("a/zarr.json", b"{}")
    write_version(datasets, "zv", "cirro:::dataset:zbase/store.zarr.zip", {"b/zarr.json": b"{}"})
    default_caches().zip_indexes.clear()
    mine = StackCaches()
    stack = Stack.resolve(datasets / "zv", caches=mine)
    assert stack.base.kind == "zip" and len(mine.zip_indexes) == 1
    assert len(default_caches().zip_indexes) == 0
    other = StackCaches()
    again = Stack.resolve(datasets / "zv", caches=other)
    assert again.base.opened._index is not stack.base.opened._index  # read again under other caches
    assert Stack.resolve(folder / "store.zarr.zip", caches=mine).base.opened._index is stack.base.opened._index


def test_every_bound_defaults_to_its_one_home() -> None:
    caches = StackCaches()
    assert caches.manifests.budget == locator.CACHE_BYTES
    assert caches.zip_indexes.limit == zipindex.CACHED_INDEXES
    assert (caches.scans.max_scans, caches.scans.max_bytes) == (MAX_SCANS, SCANS_CACHE_BYTES)
    assert caches.stacks.limit == MAX_RESOLVED_STACKS


def test_the_bounds_still_hold(datasets: Path, top: Path, tmp_path: Path) -> None:
    sizes = [(datasets / f"v{n}" / "layer.json").stat().st_size for n in (1, 2, 3)]
    caches = StackCaches(manifest_bytes=2 * max(sizes), stacks=1, scans=2)
    Stack.resolve(top, caches=caches)
    assert len(caches.manifests) == 2 and caches.manifests.nbytes <= caches.manifests.budget
    Stack.resolve(datasets / "v2", caches=caches)
    assert len(caches.stacks) == 1  # the newest stack only
    folders = [datasets]
    for name in ("copy-1", "copy-2"):
        copy = tmp_path / name
        copy.mkdir()
        write_version(copy, "v1", "cirro:::dataset:base/store.zarr")
        folders.append(copy)
    for folder in folders:
        scan_versions(folder, caches=caches)
    assert [key[0] for key in caches.scans.kept()] == [_real(f) for f in folders[1:]]  # the oldest went
    hints: TreeScans[object] = TreeScans(max_hints=1)
    hints.note_under_data("a")
    hints.note_under_data("b")
    assert hints.under_data == {"a"}


def test_two_sessions_given_other_caches_share_nothing(datasets: Path, top: Path) -> None:
    a, b = StackCaches(), StackCaches()
    one, two = StackService(top, caches=a), StackService(top, caches=b)
    assert one.stack is not two.stack and one.session.caches is a and two.session.caches is b
    assert {n["dataset_id"] for n in one.tree()["nodes"]} == {"v1", "v2", "v3"}
    assert len(a.scans) == 1 and len(b.scans) == 0
    one.fingerprint()
    assert len(b.scans) == 0
    sibling = one.sibling(datasets / "v2")  # a version opened from this session keeps its caches
    assert sibling.session.caches is a and sibling.stack.depth == 2
    assert len(a.stacks) == 2 and len(b.stacks) == 1 and len(b.manifests) == 3  # b: only what two resolved
    assert StackService(top).session.caches is default_caches()


def _small_table_stack(datasets: Path) -> Path:
    base = datasets / "tbase" / "store.zarr"
    root = zarr.open_group(base, mode="w", zarr_format=3)
    adata = anndata.AnnData(
        X=np.arange(12, dtype="float32").reshape(4, 3),
        obs=pd.DataFrame({"n": np.arange(4.0)}, index=[f"c{i}" for i in range(4)]),
    )
    with anndata.settings.override(auto_shard_zarr_v3=False):
        anndata.io.write_elem(root.require_group("tables"), "table", adata)
    write_version(datasets, "tv", "cirro:::dataset:tbase/store.zarr")
    return datasets / "tv"


def test_an_open_is_remembered_in_the_caches_it_was_given(datasets: Path) -> None:
    folder = _small_table_stack(datasets)
    mine = StackCaches()
    stack = Stack.resolve(folder, caches=mine)
    adata = open_anndata(stack, caches=mine)
    assert opened_record(adata, stack, "table", mine) is not None
    assert opened_record(adata, stack, "table") is None  # the process's caches hold no record of it
    assert len(mine.opened) == 1
    del adata
    gc.collect()
    assert len(mine.opened) == 0  # the record went with its AnnData


def test_open_records_follow_the_object_not_its_id() -> None:
    class Unhashable:  # as AnnData: __eq__ without __hash__, so no WeakKeyDictionary
        __hash__ = None  # type: ignore[assignment]

    records: OpenedRecords[str] = OpenedRecords()
    first = Unhashable()
    records.remember(first, "first")
    assert records.get(first) == "first" and records.get(Unhashable()) is None
    records.remember(first, "again")
    assert records.get(first) == "again" and len(records) == 1
    del first
    gc.collect()
    assert len(records) == 0
    second = Unhashable()
    records.remember(second, "second")
    records.clear()
    assert records.get(second) is None


#: Module-level mutable state the stack library keeps on purpose, none of it a cache of reads.
NOT_CACHES = {
    ("caches", "_PROCESS_CACHES"),  # the process's default owner, used where a caller passes none
    ("manifest", "_PARSERS"),  # the parser of each manifest format, registered at import
    ("ops", "_NAME_CHARS_EXTRA"),  # a constant set of characters
    ("partial", "_HELD"),  # lock files this process holds open while it writes
    ("store", "_LIVE_STACKS"),  # live stacks, so that a pickle unpickled here shares its stack
    # a pure function's results (zarr's documents for a shape and dtype), no read behind them
    ("encode", "_numeric_documents"),
}
#: Decorators that give a function a cache of its own (found like module-level mutables).
_CACHING_DECORATORS = {"lru_cache", "cache", "cached_property"}
_MUTABLE_CALLS = {
    "dict",
    "set",
    "list",
    "OrderedDict",
    "defaultdict",
    "deque",
    "WeakValueDictionary",
    "WeakKeyDictionary",
    "StackCaches",
    "ParsedManifests",
    "ZipIndexes",
    "TreeScans",
    "ResolvedStacks",
    "OpenedRecords",
    "BoundedCache",
    "ByteLRU",
}


def _module_level_mutables(folder: Path) -> set[tuple[str, str]]:
    """(module, name) of each module-level dict, set, list or cache object in ``folder``'s modules (wings too)."""
    found = set()
    for path in sorted(folder.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _caching(node):
                found.add((path.stem, node.name))
                continue
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name) and t.id != "__all__"]
            value = node.value
            called = value.func if isinstance(value, ast.Call) else None
            call_name = (
                called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) else ""
            )
            mutable = isinstance(value, (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.SetComp, ast.ListComp))
            if mutable or call_name in _MUTABLE_CALLS:
                found |= {(path.stem, name) for name in names}
    return found


def _caching(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` is decorated with a cache (``functools.lru_cache(...)``, ``@cache``, ...)."""
    for decorator in function.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) else ""
        if name in _CACHING_DECORATORS:
            return True
    return False


def test_no_module_of_the_stack_library_keeps_a_cache() -> None:
    """Every module-level dict, set, list or cache object of sds_jupyter.stack is listed in NOT_CACHES."""
    assert _module_level_mutables(Path(locator.__file__).parent) == NOT_CACHES


#: The service's module-level tables that are not caches: registries and constant maps.
SERVICE_NOT_CACHES = {
    ("contract", "GENERATED"),  # the generated files and what writes each
    ("contract", "_SCALARS"),  # Python scalar types -> their JSON Schema and TypeScript
    ("layouts", "LAYOUTS"),  # each binary reply's buffer layout
    ("layouts_ts", "TYPED_ARRAYS"),  # element type -> TypeScript typed array
    ("export", "MEDIA_TYPES"),  # file suffix -> media type
    ("requests", "REQUESTS"),  # the request table
    ("requests", "_FALSE"),  # the words a query string says false with
    ("requests", "_TRUE"),  # and true
    ("results", "_META_TYPES"),  # a result's metadata fields -> their types
}


def test_no_module_of_the_service_keeps_a_cache() -> None:
    """What views are drawn from is kept in the session's StackCaches (``derived``), never in a module."""
    package = Path(locator.__file__).parent.parent
    found = _module_level_mutables(package / "service") | _module_level_mutables(package / "protocol")
    assert found == SERVICE_NOT_CACHES
