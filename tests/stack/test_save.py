"""save_version: an edited AnnData back into a version, on stacks built by hand.

The base is an AnnData table written by anndata itself into a Zarr v3 store; the
version on it is written byte by byte (tests/stackkit.py), so the diff is tested
against objects our writer did not make.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import anndata
import numpy as np
import pandas as pd
import pytest
import zarr
from kit.stackkit import write_version

from sds_jupyter import check, open_anndata, save_version
from sds_jupyter.errors import StackError
from sds_jupyter.stack import Stack
from sds_jupyter.stack.manifest import read_manifest
from sds_jupyter.stack.opened import opened_record
from sds_jupyter.stack.write.writer import encode_element

N_OBS, N_VARS = 40, 6
FIGURE = {"kind": "chart", "title": "Markers", "result": "markers", "mark": "bar", "x": "score", "y": "gene"}


def _table() -> anndata.AnnData:
    rng = np.random.default_rng(1)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice(["t", "b", "nk"], N_OBS)),
            "n_counts": rng.poisson(100, N_OBS).astype("float64"),
            "keep": np.arange(N_OBS) % 3 == 0,
            "sample": [f"s{i % 2}" for i in range(N_OBS)],
        },
        index=[f"cell-{i}" for i in range(N_OBS)],
    )
    var = pd.DataFrame({"symbol": [f"G{j}" for j in range(N_VARS)]}, index=[f"gene-{j}" for j in range(N_VARS)])
    adata = anndata.AnnData(X=rng.standard_normal((N_OBS, N_VARS)).astype("float32"), obs=obs, var=var)
    adata.layers["counts"] = rng.poisson(3, (N_OBS, N_VARS)).astype("float32")
    adata.obsm["spatial"] = rng.uniform(0, 100, (N_OBS, 2))
    adata.obsp["distances"] = np.eye(N_OBS)
    markers = pd.DataFrame({"gene": ["G0", "G1"], "score": [2.0, 1.0]})
    adata.uns = {
        "notes": "drawn by hand",
        "params": {"resolution": 0.5, "method": "leiden"},
        "spatial_data_studio": {
            "figures": {"fig-a": json.dumps(FIGURE), "fig-b": json.dumps({**FIGURE, "title": "B"})},
            "results": {
                "markers": {"table": markers, "meta": json.dumps({"kind": "markers", "title": "Markers"})},
                "old": {"table": markers, "meta": json.dumps({"kind": "markers", "title": "Old"})},
            },
        },
    }
    return adata


@pytest.fixture(scope="session")
def hand_datasets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hand_stack``'s datasets folder, written once per worker (read only: each test copies it)."""
    datasets = tmp_path_factory.mktemp("hand") / "datasets"
    base = datasets / "base-1" / "store.zarr"
    root = zarr.open_group(base, mode="w", zarr_format=3)
    with anndata.settings.override(auto_shard_zarr_v3=False):  # one chunk file per array, as a reader expects
        anndata.io.write_elem(root.require_group("tables"), "table", _table())
    obs_doc = json.loads((base / "tables/table/obs/zarr.json").read_text())
    obs_doc["attributes"]["column-order"] = [*obs_doc["attributes"]["column-order"], "score"]
    files = {f"tables/table/obs/score/{k}": v for k, v in encode_element(np.linspace(0, 1, N_OBS)).items()}
    files["tables/table/obs/zarr.json"] = json.dumps(obs_doc).encode()
    write_version(datasets, "v-1", "cirro:::dataset:base-1/store.zarr", files, manifest={"depth": 1, "title": "Score"})
    return datasets


@pytest.fixture
def hand_stack(datasets: Path, hand_datasets: Path) -> Path:
    """A base with one table (written by anndata) and a version by hand adding obs 'score', in the
    test's own datasets folder (a copy: anndata's write takes seconds, the copy milliseconds)."""
    for dataset in ("base-1", "v-1"):
        shutil.copytree(hand_datasets / dataset, datasets / dataset)
    return datasets / "v-1"


def tree_hash(folder: Path) -> str:
    """One digest of every file's path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_every_op_round_trips(hand_stack: Path) -> None:
    datasets = hand_stack.parent
    parent_hash, base_hash = tree_hash(hand_stack), tree_hash(datasets / "base-1")
    adata = open_anndata(hand_stack)
    adata.obs["leiden"] = pd.Categorical(["0", "1"] * (N_OBS // 2))  # categorical, added
    adata.obs["n_counts"] = adata.obs["n_counts"] * 2  # numeric, changed
    adata.obs["flag"] = ~adata.obs["keep"].to_numpy()  # boolean, added
    adata.obs["label"] = [f"c{i}" for i in range(N_OBS)]  # string, added
    del adata.obs["sample"]
    adata.obsm["X_umap"] = np.ones((N_OBS, 2))
    adata.obsm["spatial"] = adata.obsm["spatial"] + 1
    adata.uns["params"] = {"resolution": 1.0, "method": "leiden"}
    adata.uns["added"] = np.arange(3)
    del adata.uns["notes"]
    studio = adata.uns["spatial_data_studio"]
    studio["figures"]["fig-new"] = {**FIGURE, "title": "New"}
    studio["figures"]["fig-a"] = json.dumps({**FIGURE, "title": "Changed"})
    del studio["figures"]["fig-b"]
    studio["results"]["markers"]["table"] = studio["results"]["markers"]["table"].head(1)
    studio["results"]["fresh"] = {"table": pd.DataFrame({"x": [1.0]}), "meta": json.dumps({"kind": "clusters"})}
    del studio["results"]["old"]

    top = save_version(hand_stack, adata, title="Everything", message="every op", created_by="me@example.org")

    assert top.parent == datasets
    manifest = read_manifest(top / "layer.json")
    assert manifest.title == "Everything" and manifest.message == "every op" and manifest.depth == 2
    assert manifest.parent == "cirro:::dataset:v-1/layer.json" and manifest.created_by == "me@example.org"
    ops = {(c["op"], c.get("column") or c.get("key") or c.get("figure")): c.get("kind") for c in manifest.changes}
    assert ops == {
        ("set-obs", "n_counts"): "numeric",
        ("set-obs", "leiden"): "categorical",
        ("set-obs", "flag"): "boolean",
        ("set-obs", "label"): "string",
        ("delete-obs", "sample"): None,
        ("set-obsm", "X_umap"): None,
        ("set-obsm", "spatial"): None,
        ("set-uns", "params"): None,
        ("set-uns", "added"): None,
        ("delete-uns", "notes"): None,
        ("set-figure", "fig-new"): None,
        ("set-figure", "fig-a"): None,
        ("delete-figure", "fig-b"): None,
        ("set-uns", "spatial_data_studio/results/markers"): "markers",
        ("set-uns", "spatial_data_studio/results/fresh"): "clusters",
        ("delete-uns", "spatial_data_studio/results/old"): None,
    }
    # only what changed: no X, var, layers, untouched columns or figures
    written = {entry.key.split("/c/")[0].removesuffix("/zarr.json") for entry in manifest.files}
    for untouched in ("X", "var", "layers", "obsp", "obs/cell_type", "obs/keep", "obs/score"):
        assert not any(w == f"tables/table/{untouched}" or w.startswith(f"tables/table/{untouched}/") for w in written)
    assert "tables/table/uns/spatial_data_studio/figures/fig-b/" in manifest.deleted

    saved = open_anndata(top)
    for column in adata.obs.columns:
        read, given = saved.obs[column], adata.obs[column]
        if _plain_strings(read) and _plain_strings(given):
            # pandas 3 reads strings back as its str dtype where the AnnData held objects
            read, given = read.astype(object), given.astype(object)
        pd.testing.assert_series_equal(read, given, check_categorical=True)
    assert set(saved.obs.columns) == set(adata.obs.columns)
    np.testing.assert_array_equal(saved.obsm["spatial"], adata.obsm["spatial"])
    assert saved.uns["params"]["resolution"] == 1.0 and "notes" not in saved.uns
    figures = saved.uns["spatial_data_studio"]["figures"]
    assert json.loads(figures["fig-a"])["title"] == "Changed" and json.loads(figures["fig-new"])["title"] == "New"
    assert "fig-b" not in figures and set(saved.uns["spatial_data_studio"]["results"]) == {"markers", "fresh"}
    assert len(saved.uns["spatial_data_studio"]["results"]["markers"]["table"]) == 1
    np.testing.assert_array_equal(saved.X, adata.X)
    report = check(top)
    assert report.ok, report.problems
    assert tree_hash(hand_stack) == parent_hash and tree_hash(datasets / "base-1") == base_hash

    # saving again from the new version finds nothing left to save
    with pytest.raises(StackError, match="nothing to save"):
        save_version(top, adata, title="again")


def _edit_x(a: anndata.AnnData) -> anndata.AnnData:
    a.X[0, 0] += 1
    return a


def _drop_obsm(a: anndata.AnnData) -> anndata.AnnData:
    del a.obsm["spatial"]
    return a


def _edit_layer(a: anndata.AnnData) -> anndata.AnnData:
    a.layers["counts"] = a.layers["counts"] * 2
    return a


def _edit_var(a: anndata.AnnData) -> anndata.AnnData:
    a.var["symbol"] = [s.lower() for s in a.var["symbol"]]
    return a


def _edit_obsp(a: anndata.AnnData) -> anndata.AnnData:
    a.obsp["connectivities"] = a.obsp["distances"]
    return a


def _several(a: anndata.AnnData) -> anndata.AnnData:
    a.obs["new"] = 1.0  # a change the format can hold does not make the rest pass
    return _drop_obsm(_edit_x(a))


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda a: a, "nothing to save"),
        (_edit_x, "X changed"),
        (_edit_layer, r"layers changed \('counts'\)"),
        (_edit_var, "var changed"),
        (_edit_obsp, r"obsp changed \('connectivities'\)"),
        (_drop_obsm, "obsm 'spatial' removed"),
        (lambda a: a[::-1].copy(), "cells reordered"),
        (lambda a: a[:10].copy(), r"cells added or removed \(40 in the version, 10 here\)"),
        (lambda a: anndata.concat([a, a[:1]], uns_merge="first", index_unique="-"), "cells added or removed"),
        (_several, "X changed; obsm 'spatial' removed"),
    ],
)
@pytest.mark.parametrize("opened", ["as opened", "a copy"])
def test_refusals_write_nothing(hand_stack: Path, edit: Any, words: str, opened: str) -> None:
    """Both ways of proving the rest unchanged: the fingerprints taken at open, and reading the store (a copy)."""
    datasets = hand_stack.parent
    before = tree_hash(datasets)
    adata = open_anndata(hand_stack)
    adata = edit(adata if opened == "as opened" else adata.copy())
    with pytest.raises(StackError, match=words) as info:
        save_version(hand_stack, adata, title="refused")
    assert "\n" not in str(info.value)
    assert tree_hash(datasets) == before
    assert sorted(p.name for p in datasets.iterdir()) == ["base-1", "v-1"]


def test_a_lazy_anndata_is_refused_with_what_to_do(hand_stack: Path) -> None:
    with pytest.raises(StackError, match=r"to_memory\(\)"):
        save_version(hand_stack, open_anndata(hand_stack, lazy=True), title="lazy")
    with pytest.raises(StackError, match="needs an AnnData"):
        save_version(hand_stack, {"obs": 1}, title="dict")


def test_a_result_without_meta_is_refused(hand_stack: Path) -> None:
    adata = open_anndata(hand_stack)
    adata.uns["spatial_data_studio"]["results"]["bare"] = {"table": pd.DataFrame({"x": [1]})}
    with pytest.raises(StackError, match="result 'bare' has no 'meta'"):
        save_version(hand_stack, adata, title="bare")


def test_saving_on_the_base_store_itself(hand_stack: Path) -> None:
    base = hand_stack.parent / "base-1" / "store.zarr"
    adata = open_anndata(base)
    adata.obs["first"] = np.zeros(N_OBS)
    top = save_version(base, adata, title="First")
    manifest = read_manifest(top / "layer.json")
    assert manifest.depth == 1 and manifest.parent == "cirro:::dataset:base-1/store.zarr"
    assert "first" in open_anndata(top).obs and "score" not in open_anndata(top).obs


@pytest.mark.parametrize(
    ("env", "given", "expected"),
    [
        ({"SDS_USER": "sds@example.org", "JUPYTERHUB_USER": "hub"}, None, "sds@example.org"),
        ({"JUPYTERHUB_USER": "hub-user"}, None, "hub-user"),
        ({"SDS_USER": "sds@example.org"}, "given@example.org", "given@example.org"),
    ],
)
def test_created_by_from_argument_then_environment(
    hand_stack: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], given: str | None, expected: str
) -> None:
    from sds_jupyter import __version__

    for name in ("SDS_USER", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    adata = open_anndata(hand_stack)
    adata.uns["who"] = "x"
    manifest = read_manifest(save_version(hand_stack, adata, title="who", created_by=given) / "layer.json")
    assert manifest.created_by == expected
    assert manifest.app == {"id": "sds-jupyter", "version": __version__}


def test_a_save_shows_no_warning(hand_stack: Path) -> None:
    """A notebook shows a warning as an error box; saving has nothing to warn about."""
    import warnings

    adata = open_anndata(hand_stack)
    adata.obs["quiet"] = np.ones(N_OBS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_version(hand_stack, adata, title="Quiet")
    assert [str(w.message) for w in caught] == []


def test_nullable_columns_keep_their_missing_values(hand_stack: Path) -> None:
    adata = open_anndata(hand_stack)
    adata.obs["count"] = pd.array([1, None] * (N_OBS // 2), dtype="Int64")
    adata.obs["checked"] = pd.array([True, None] * (N_OBS // 2), dtype="boolean")
    top = save_version(hand_stack, adata, title="Nullable")
    saved = open_anndata(top)
    assert str(saved.obs["count"].dtype) == "Int64" and saved.obs["count"].isna().sum() == N_OBS // 2
    assert str(saved.obs["checked"].dtype) == "boolean" and saved.obs["checked"].iloc[0]
    with pytest.raises(StackError, match="nothing to save"):  # read back exactly as saved
        save_version(top, adata, title="again")


def _plain_strings(series: pd.Series) -> bool:
    """A column of strings that is not categorical (its dtype differs between pandas 2 and 3)."""
    return not isinstance(series.dtype, pd.CategoricalDtype) and pd.api.types.is_string_dtype(series)


# -- in-place edits after open: the fingerprints taken at open must see them -----------------


def _in_place(code: str) -> Any:
    def edit(a: anndata.AnnData) -> None:
        exec(code, {"a": a, "np": np})  # the edit as an analyst types it (shown in the test id)

    return edit


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("a.X[3, 2] = 7", "X changed"),
        ("a.X[:] = a.X[::-1]", "X changed"),  # same bytes in another order
        ("a.layers['counts'][0, 0] += 1", r"layers changed \('counts'\)"),
        ("a.obsp['distances'][0, 1] = 0.5", r"obsp changed \('distances'\)"),
        ("a.var.iloc[0, 0] = 'other'", "var changed"),
        ("a.var_names = [f'g{i}' for i in range(a.n_vars)]", "var changed"),
        ("a.obs_names = list(a.obs_names[:-1]) + ['new-cell']", "cells renamed or replaced"),
    ],
)
def test_in_place_edits_after_open_are_refused(hand_stack: Path, code: str, words: str) -> None:
    datasets = hand_stack.parent
    before = tree_hash(datasets)
    adata = open_anndata(hand_stack)
    _in_place(code)(adata)
    with pytest.raises(StackError, match=words):
        save_version(hand_stack, adata, title="in place")
    assert tree_hash(datasets) == before


def test_the_cell_names_read_are_read_only_and_trusted_unchanged(hand_stack: Path) -> None:
    """An Index is immutable: the array it owns is made read-only at open (as pandas 3 does), so a
    save trusts that very array without comparing every name; a new Index is compared. (A pandas
    whose Index hands out no array of its own, as pandas 3 may, is always compared.)"""
    adata = open_anndata(hand_stack)
    record = opened_record(adata, Stack.resolve(hand_stack), "table")
    assert record is not None
    if record.held_names is not None:
        with pytest.raises(ValueError, match="read-only"):
            adata.obs_names.to_numpy()[0] = "renamed"
        assert record.same_names_held(adata.obs_names)
    adata.obs_names = [str(name) for name in adata.obs_names]  # the same names, a new array
    assert not record.same_names_held(adata.obs_names)
    adata.obs["n_counts"] = adata.obs["n_counts"] + 1
    top = save_version(hand_stack, adata, title="names compared")
    assert [c["op"] for c in read_manifest(top / "layer.json").changes] == ["set-obs"]


def test_the_names_array_made_writable_again_and_edited_is_refused(hand_stack: Path) -> None:
    """Trust in the array read lasts only while it stays read-only: made writable and edited, the
    names are compared and the save refused, writing nothing."""
    before = tree_hash(hand_stack.parent)
    adata = open_anndata(hand_stack)
    record = opened_record(adata, Stack.resolve(hand_stack), "table")
    if record is None or record.held_names is None:
        pytest.skip("this pandas hands out no array the Index owns: its names are always compared")
    names = adata.obs_names.to_numpy()
    names.flags.writeable = True
    names[0] = "renamed"
    assert not record.same_names_held(adata.obs_names)
    with pytest.raises(StackError, match="cells renamed or replaced"):
        save_version(hand_stack, adata, title="in place")
    assert tree_hash(hand_stack.parent) == before


@pytest.mark.parametrize(
    ("code", "change"),
    [
        ("a.obs.loc[a.obs_names[0], 'n_counts'] += 1", ("set-obs", "n_counts")),
        ("a.obs.loc[a.obs_names[0], 'keep'] = not a.obs['keep'].iloc[0]", ("set-obs", "keep")),
        ("a.obs.loc[a.obs_names[0], 'score'] = -1.0", ("set-obs", "score")),
        ("a.obs['cell_type'] = a.obs['cell_type'].cat.reorder_categories(['t', 'nk', 'b'])", ("set-obs", "cell_type")),
        ("a.obs.loc[a.obs_names[0], 'sample'] = 's9'", ("set-obs", "sample")),
        ("a.obsm['spatial'][0, 0] += 1", ("set-obsm", "spatial")),
        ("a.uns['params']['resolution'] = 9.0", ("set-uns", "params")),
    ],
)
def test_in_place_edits_after_open_are_saved(hand_stack: Path, code: str, change: tuple[str, str]) -> None:
    adata = open_anndata(hand_stack)
    _in_place(code)(adata)
    top = save_version(hand_stack, adata, title="in place")
    changes = read_manifest(top / "layer.json").changes
    assert [(c["op"], c.get("column") or c.get("key")) for c in changes] == [change]
    saved = open_anndata(top)
    column = change[1]
    if change[0] == "set-obs":
        assert list(saved.obs[column]) == list(adata.obs[column])
    elif change[0] == "set-uns":
        assert saved.uns[column] == adata.uns[column]
    else:
        np.testing.assert_array_equal(saved.obsm[column], adata.obsm[column])


def test_equal_floats_are_unchanged_whatever_their_bits(hand_stack: Path) -> None:
    """-0.0 equals 0.0 and every NaN equals every NaN, as the values compare: nothing to save."""
    adata = open_anndata(hand_stack)
    values = adata.obs["score"].to_numpy().copy()
    values[:3] = [0.0, np.nan, 0.0]
    adata.obs["score"] = values
    top = save_version(hand_stack, adata, title="zeros and NaN")
    again = open_anndata(top)
    other = again.obs["score"].to_numpy().copy()
    other[0] = -0.0
    other[1] = np.frombuffer(np.uint64(0x7FF8_0000_0000_0BAD).tobytes(), dtype=np.float64)[0]  # another NaN
    assert np.isnan(other[1]) and other.tobytes() != again.obs["score"].to_numpy().tobytes()
    again.obs["score"] = other
    with pytest.raises(StackError, match="nothing to save"):
        save_version(top, again, title="same values")


EDITS = [
    "a.obs['n_counts'] = a.obs['n_counts'] * 2",
    "a.obs['new'] = np.arange(a.n_obs)",
    "del a.obs['sample']",
    "a.obs['label'] = [str(i) for i in range(a.n_obs)]",
    "a.obsm['spatial'] = a.obsm['spatial'] + 1",
    "a.X[0, 0] = 99",
    "a.layers['counts'] = a.layers['counts'] * 0",
    "a.uns['params'] = {'resolution': 2.0}",
    "a.uns['params']['method'] = 'louvain'",
    "del a.uns['notes']",
    "a.uns['notes'] = 'drawn by hand, again'",
    "a.uns['spatial_data_studio']['figures']['fig-a'] = '{\"kind\": \"chart\"}'",
]


@pytest.mark.parametrize("code", EDITS)
def test_fingerprints_and_the_store_give_the_same_plan(hand_stack: Path, code: str) -> None:
    """The AnnData as opened (fingerprints) and a copy of it (compared with the store) plan alike."""
    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.opened import opened_record
    from sds_jupyter.stack.write.save import plan_save

    stack = Stack.resolve(hand_stack)
    adata = open_anndata(hand_stack)
    assert opened_record(adata, stack, "table") is not None
    _in_place(code)(adata)
    copy = adata.copy()
    assert opened_record(copy, stack, "table") is None
    recorded, read = plan_save(stack, adata), plan_save(stack, copy)
    assert recorded.summary == read.summary and recorded.refused == read.refused
    assert recorded.summary or recorded.refused


def test_an_uns_scalar_is_unchanged_by_identity_or_by_value(hand_stack: Path) -> None:
    """The very object printed at open is unchanged (scalars are immutable); an equal new object is
    compared by its print; another value is a change."""
    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.opened import fingerprint, opened_record, same_scalar_held
    from sds_jupyter.stack.write.save import plan_save

    stack = Stack.resolve(hand_stack)
    adata = open_anndata(hand_stack)
    record = opened_record(adata, stack, "table")
    assert record is not None
    known = record.prints["uns/notes"]
    assert same_scalar_held(known, adata.uns["notes"])
    equal = "".join(["drawn by", " hand"])
    assert equal == adata.uns["notes"] and not same_scalar_held(known, equal)
    assert fingerprint(equal) == known
    assert not same_scalar_held(record.prints["uns/params"], adata.uns["params"])  # a dict: printed again
    adata.uns["notes"] = equal
    assert plan_save(stack, adata).summary == []
    adata.uns["notes"] = "drawn by hand!"
    assert plan_save(stack, adata).summary == ["uns 'notes' changed"]


def test_a_record_applies_to_the_version_it_was_read_from_only(hand_stack: Path) -> None:
    """Opened from v-1 and saved on the base store: compared with the base, which lacks 'score'."""
    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.opened import opened_record

    base = hand_stack.parent / "base-1" / "store.zarr"
    adata = open_anndata(hand_stack)
    assert opened_record(adata, Stack.resolve(base), "table") is None
    assert opened_record(adata, Stack.resolve(hand_stack), "other") is None
    top = save_version(base, adata, title="score on the base")
    assert [(c["op"], c["column"]) for c in read_manifest(top / "layer.json").changes] == [("set-obs", "score")]
