"""Issue 24, items 1-7: saves keep every value anndata writes, exactly as anndata reads it back,
or refuse it by name before anything is written; what they publish passes check and flatten.

The tables come from anndata's own generator (``gen_adata``) and are compared with its own
``assert_equal`` against what anndata itself reads back after writing the same AnnData.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import anndata
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import zarr
from anndata.tests.helpers import assert_equal, gen_adata

from sds_jupyter import check, flatten, open_anndata, save_version
from sds_jupyter.errors import StackError

pytest.importorskip("awkward", reason="anndata's gen_adata makes awkward arrays")
from anndata.compat import AwkArray  # noqa: E402 - needs awkward

N_OBS, N_VARS = 24, 6
ALIGNED = (np.ndarray, pd.DataFrame, sp.csr_matrix, AwkArray)
OBS_DTYPES = (
    pd.CategoricalDtype(ordered=False),
    pd.CategoricalDtype(ordered=True),
    np.dtype("int64"),
    np.dtype("float64"),
    np.dtype("uint8"),
    np.dtype("bool"),
    pd.BooleanDtype(),
    pd.Int32Dtype(),
    pd.UInt8Dtype(),
    pd.StringDtype(),
)


def _generated(seed: int) -> anndata.AnnData:
    return gen_adata(
        (N_OBS, N_VARS),
        obs_dtypes=OBS_DTYPES,
        obsm_types=ALIGNED,
        varm_types=ALIGNED,
        layers_types=(np.ndarray,),
        random_state=np.random.default_rng(seed),
    )


def _write_table(store: zarr.Group | Path, adata: anndata.AnnData) -> None:
    root = store if isinstance(store, zarr.Group) else zarr.open_group(store, mode="w", zarr_format=3)
    with anndata.settings.override(auto_shard_zarr_v3=False, allow_write_nullable_strings=True):
        anndata.io.write_elem(root.require_group("tables"), "table", adata)


def _as_anndata_reads_it(adata: anndata.AnnData) -> anndata.AnnData:
    """``adata`` written by anndata and read back by it: what a save must give back."""
    group = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    with anndata.settings.override(allow_write_nullable_strings=True):
        anndata.io.write_elem(group, "t", adata)
    return anndata.io.read_elem(group["t"])


def _written_once(tmp_path_factory: pytest.TempPathFactory, name: str, adata: anndata.AnnData) -> Path:
    """``adata`` written by anndata into a store of this worker's run (session scope: read only, copied)."""
    folder = tmp_path_factory.mktemp(name) / "store.zarr"
    _write_table(folder, adata)
    return folder


@pytest.fixture(scope="session")
def generated_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generator's table written once per worker (anndata's write takes seconds; a copy, milliseconds)."""
    return _written_once(tmp_path_factory, "generated", _generated(1))


@pytest.fixture(params=["folder", "zip"])
def generated_base(request: pytest.FixtureRequest, datasets: Path, generated_store: Path) -> Path:
    """A base store (a folder, or a .zarr.zip of it) whose table anndata's generator made."""
    folder = Path(shutil.copytree(generated_store, datasets / "base-1" / "store.zarr"))
    if request.param == "folder":
        return folder
    zipped = folder.with_name("store.zarr.zip")
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_STORED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(folder).as_posix())
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()
    return zipped


def _edit(adata: anndata.AnnData, seed: int) -> None:
    """New obs columns of every dtype anndata writes, new obsm entries and uns entries, from the generator."""
    other = _generated(seed)
    for column in other.obs.columns:
        adata.obs[f"s{seed}_{column}"] = other.obs[column].array
    adata.obs[f"s{seed}_missing_text"] = pd.array(["a", None, "c"] * (N_OBS // 3), dtype="string")
    adata.obs[f"s{seed}_unused_categories"] = pd.Categorical(["a"] * N_OBS, categories=["a", "b", "c"])
    for key, value in other.obsm.items():
        adata.obsm[f"s{seed}_{key}"] = value
    for key, value in other.uns.items():
        adata.uns[f"s{seed}_{key}"] = value
    # gen_adata puts no categorical in uns: one with an unused category, one ordered
    adata.uns[f"s{seed}_categorical"] = pd.Categorical(["a", "b", "a"], categories=["a", "b", "c"])
    adata.uns[f"s{seed}_ordered"] = pd.Categorical(["y", "x"], categories=["y", "x"], ordered=True)


def test_generated_tables_round_trip_through_chains_of_saves(generated_base: Path, tmp_path: Path) -> None:
    top: Path | os.PathLike[str] = generated_base
    for seed in (2, 3):
        adata = open_anndata(top)
        _edit(adata, seed)
        expected = _as_anndata_reads_it(adata)
        top = save_version(top, adata, title=f"edit {seed}")
        saved = open_anndata(top)
        assert_equal(saved, expected)
        assert str(saved.obs[f"s{seed}_missing_text"].dtype) == "string"
        assert saved.obs[f"s{seed}_missing_text"].isna().sum() == N_OBS // 3
        assert check(top).problems == []
        flatten(top, tmp_path / f"flat-{seed}")
        assert_equal(anndata.read_zarr(tmp_path / f"flat-{seed}" / "tables" / "table"), expected)
        # What was read back is what was saved: nothing to save again (awkward and categorical uns included).
        with pytest.raises(StackError, match="nothing to save"):
            save_version(top, saved, title="again")


def _folder_state(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _refused(base: Path, adata: anndata.AnnData, words: str, **details: object) -> None:
    datasets = base.parents[1]
    before = _folder_state(datasets)
    with pytest.raises(StackError, match=words):
        save_version(base, adata, **{"title": "refused", **details})  # type: ignore[arg-type]
    assert _folder_state(datasets) == before


@pytest.fixture(scope="session")
def plain_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    adata = _generated(1)
    adata.obs.index.name = "cell_id"  # anndata then stores the cell names as obs/cell_id
    return _written_once(tmp_path_factory, "plain", adata)


@pytest.fixture
def plain_base(datasets: Path, plain_store: Path) -> Path:
    """The generator's table (its index named) in a base of the test's own datasets folder."""
    return Path(shutil.copytree(plain_store, datasets / "base-1" / "store.zarr"))


def test_a_mixed_type_column_is_refused_by_name(plain_base: Path) -> None:
    adata = open_anndata(plain_base)
    adata.obs["mixed"] = ["a", 1] * (N_OBS // 2)
    _refused(plain_base, adata, "obs column 'mixed' holds int values among its strings")


def test_names_that_collide_once_stored_are_refused(plain_base: Path) -> None:
    adata = open_anndata(plain_base)
    adata.obs[1] = np.arange(N_OBS)
    adata.obs["1"] = np.zeros(N_OBS)
    _refused(plain_base, adata, r"obs column 1 is named by a int, stored as '1'")
    adata = open_anndata(plain_base)
    adata.obs["cell_id"] = [f"x{i}" for i in range(N_OBS)]
    _refused(plain_base, adata, "'cell_id' has the name the version stores its cell names under")
    adata = open_anndata(plain_base)
    adata.obsm["zarr.json"] = np.zeros((N_OBS, 2))
    _refused(plain_base, adata, "'zarr.json' is the name of a store's metadata document")
    adata = open_anndata(plain_base)
    adata.uns[".zattrs"] = "x"
    _refused(plain_base, adata, "'.zattrs' is the name of a store's metadata document")
    adata = open_anndata(plain_base)
    adata.obs = pd.concat([adata.obs, adata.obs.iloc[:, :1]], axis=1)
    _refused(plain_base, adata, "obs has two columns named")


def test_reordered_obs_columns_are_refused_not_dropped(plain_base: Path) -> None:
    adata = open_anndata(plain_base)
    adata.obs = adata.obs[list(reversed(adata.obs.columns))]
    _refused(plain_base, adata, "obs columns reordered")


@pytest.mark.parametrize("details", [{"title": 3}, {"title": "t", "message": ["a"]}, {"title": {"a": 1}}])
def test_manifest_details_are_checked_as_a_reader_checks_them(plain_base: Path, details: dict[str, object]) -> None:
    adata = open_anndata(plain_base)
    adata.obs["new"] = np.ones(N_OBS)
    _refused(plain_base, adata, "must be a string|not plain JSON", **details)


def test_a_sparse_obsm_entry_is_saved(plain_base: Path) -> None:
    adata = open_anndata(plain_base)
    adata.obsm["sparse"] = sp.random(N_OBS, 5, density=0.3, format="csr", random_state=1)
    top = save_version(plain_base, adata, title="sparse")
    saved = open_anndata(top)
    assert sp.issparse(saved.obsm["sparse"]) and (saved.obsm["sparse"] != adata.obsm["sparse"]).nnz == 0
    doc = json.loads((top / "layer.json").read_text())
    assert doc["changes"] == [{"op": "set-obsm", "table": "table", "key": "sparse", "shape": [N_OBS, 5]}]


def test_names_inside_values_that_a_store_document_takes_are_refused(plain_base: Path) -> None:
    """Issue 24, item 6: a data frame column or a nested key named ``zarr.json`` would share its node's file."""
    adata = open_anndata(plain_base)
    adata.obsm["frame"] = pd.DataFrame({"zarr.json": np.arange(N_OBS)}, index=adata.obs_names)
    _refused(plain_base, adata, r"obsm 'frame' has a column 'zarr.json', the name of a store's metadata document")
    adata = open_anndata(plain_base)
    adata.uns["nested"] = {"inner": {"ZARR.JSON": 1}}
    _refused(plain_base, adata, r"uns 'nested'\['inner'\] holds a key 'ZARR.JSON'")
    adata = open_anndata(plain_base)
    adata.uns["table"] = pd.DataFrame({"zarr.json": [1, 2]})
    _refused(plain_base, adata, r"uns 'table' has a column 'zarr.json'")


def test_replacing_an_entry_by_another_kind_gives_a_version_check_and_flatten_accept(
    plain_base: Path, tmp_path: Path
) -> None:
    """Issue 24, item 6: a dense obsm entry replaced by a sparse one or a frame, an uns value by a group."""
    first = open_anndata(plain_base)
    first.obsm["dense"] = np.ones((N_OBS, 2))
    first.uns["value"] = 1
    top = save_version(plain_base, first, title="first")
    adata = open_anndata(top)
    adata.obsm["dense"] = sp.random(N_OBS, 2, density=0.5, format="csr", random_state=2)
    adata.obsm["frame_now"] = pd.DataFrame({"c": np.arange(N_OBS)}, index=adata.obs_names)
    adata.uns["value"] = {"c": np.arange(3), "d": {"e": "f"}}
    expected = _as_anndata_reads_it(adata)
    top = save_version(top, adata, title="second")
    assert check(top).problems == []
    assert_equal(open_anndata(top), expected)
    flatten(top, tmp_path / "flat")
    assert_equal(anndata.read_zarr(tmp_path / "flat" / "tables" / "table"), expected)


def test_a_commit_whose_objects_clash_with_their_folders_writes_nothing(datasets: Path) -> None:
    """Issue 24, item 6: an object that is also another's folder is refused before the partial folder is made."""
    from kit.stackkit import write_base

    from sds_jupyter import VersionWriter
    from sds_jupyter.errors import WriteRefusedError

    write_base(datasets, "base", {})
    writer = VersionWriter(datasets / "base" / "store.zarr")
    writer.store.write_raw("g/zarr.json", b"{}")
    writer.store.write_raw("g/zarr.json/c", b"1")
    before = _folder_state(datasets)
    with pytest.raises(WriteRefusedError, match="'g/zarr.json' would be both an object and a group"):
        writer.commit(title="clash")
    assert _folder_state(datasets) == before


def test_spatialdata_blobs_survive_a_chain_of_saves(tmp_path: Path) -> None:
    """Done when: spatialdata's own dataset (``blobs``) saved twice with generated columns, then flattened,
    reads back with spatialdata as the same object with the edited table (its own identity check)."""
    import warnings

    import spatialdata
    from spatialdata.testing import assert_spatial_data_objects_are_identical

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        original = spatialdata.datasets.blobs()
        base = tmp_path / "datasets" / "blobs-1" / "blobs.zarr"
        base.parent.mkdir(parents=True)
        original.write(base)
        top: Path | os.PathLike[str] = base
        for seed in (2, 3):
            adata = open_anndata(top)
            other = gen_adata((adata.n_obs, 2), obs_dtypes=OBS_DTYPES, random_state=np.random.default_rng(seed))
            for column in other.obs.columns:
                adata.obs[f"s{seed}_{column}"] = other.obs[column].array
            adata.uns["_index"], adata.obsm["_index"] = seed, np.full((adata.n_obs, 2), seed)  # issue 38, item 14
            expected = _as_anndata_reads_it(adata)
            top = save_version(top, adata, title=f"edit {seed}")
            assert check(top).problems == []
        flatten(top, tmp_path / "flat.zarr")
        flat = spatialdata.read_zarr(tmp_path / "flat.zarr")
    assert_equal(flat.tables["table"], expected)
    original.tables["table"] = flat.tables["table"]
    assert_spatial_data_objects_are_identical(flat, original)


# -- issue 38, items 11-14 -------------------------------------------------------------------

#: The nullable dtypes anndata's generator makes, each with missing values (item 12).
NULLABLE_DTYPES = (pd.Int64Dtype(), pd.UInt16Dtype(), pd.Int8Dtype(), pd.BooleanDtype(), pd.StringDtype())


def _anndata_writes(adata: anndata.AnnData) -> bool:
    """Whether anndata itself can write ``adata`` (its own rule: a value it has no encoding for is refused)."""
    try:
        _as_anndata_reads_it(adata)
    except Exception as exc:  # noqa: BLE001 - anndata's IORegistryError, by name below
        assert type(exc).__name__ == "IORegistryError", exc
        return False
    return True


def test_a_categorical_of_mixed_type_categories_is_refused_by_name(plain_base: Path) -> None:
    """Item 11: [1, '1', 1.5] as categories would be stored as text, '1' twice: nothing is written."""
    adata = open_anndata(plain_base)
    adata.obs["mixed"] = pd.Categorical([1, "1", 1.5] * (N_OBS // 3))
    _refused(plain_base, adata, r"obs column 'mixed' is categorical with categories of mixed types \(float, int, str\)")
    in_uns = open_anndata(plain_base)
    in_uns.uns["mixed"] = pd.Categorical([1, "1"])
    _refused(plain_base, in_uns, r"uns 'mixed' is categorical with categories of mixed types \(int, str\)")
    adata.obs["mixed"] = adata.obs["mixed"].cat.rename_categories(["1", "1.5", "1 (text)"])
    expected = _as_anndata_reads_it(adata)
    assert_equal(open_anndata(save_version(plain_base, adata, title="one type")), expected)


def test_nullable_columns_keep_their_dtype_and_missing_values(plain_base: Path) -> None:
    """Item 12: what anndata's generator makes (Int*, UInt*, boolean, string, with NA) comes back exactly."""
    adata = open_anndata(plain_base)
    generated = gen_adata((N_OBS, 2), obs_dtypes=NULLABLE_DTYPES, random_state=np.random.default_rng(4))
    assert generated.obs.isna().any().all(), "every generated column has missing values"
    for column in generated.obs.columns:
        adata.obs[f"n_{column}"] = generated.obs[column].array
    expected = _as_anndata_reads_it(adata)
    saved = open_anndata(save_version(plain_base, adata, title="nullable"))
    assert_equal(saved, expected)
    for column in generated.obs.columns:
        assert saved.obs[f"n_{column}"].dtype == generated.obs[column].dtype, column
        assert saved.obs[f"n_{column}"].isna().tolist() == generated.obs[column].isna().tolist(), column


@pytest.mark.parametrize("dtype", ["Float64", "Float32"])
def test_a_nullable_float_column_round_trips_or_is_refused_by_name(plain_base: Path, dtype: str) -> None:
    """Item 12: a nullable Float64 never comes back as float64 with NaN for NA. anndata 0.12 cannot
    write one (its generator makes none): then the save is refused naming the column, nothing written."""
    adata = open_anndata(plain_base)
    adata.obs["nullable_float"] = pd.array([1.5, None] * (N_OBS // 2), dtype=dtype)
    if _anndata_writes(adata):
        saved = open_anndata(save_version(plain_base, adata, title="nullable float"))
        assert_equal(saved, _as_anndata_reads_it(adata))
        assert str(saved.obs["nullable_float"].dtype) == dtype
        return
    _refused(plain_base, adata, rf"obs column 'nullable_float' holds {dtype} values, which this anndata cannot store")


def test_the_obs_index_name_survives_saves_and_alone_is_a_change(plain_base: Path, tmp_path: Path) -> None:
    """Item 13: anndata round-trips obs.index.name; so does a save, and renaming it alone saves a version."""
    adata = open_anndata(plain_base)
    assert adata.obs.index.name == "cell_id"
    adata.obs["edited"] = np.arange(N_OBS)
    top = save_version(plain_base, adata, title="edited")
    assert open_anndata(top).obs.index.name == "cell_id"
    for name in ("barcode", None):
        adata = open_anndata(top)
        adata.obs.index.name = name
        expected = _as_anndata_reads_it(adata)
        top = save_version(top, adata, title=f"index {name}")
        saved = open_anndata(top)
        assert saved.obs.index.name == name
        assert_equal(saved, expected)
        changes = json.loads((top / "layer.json").read_text())["changes"]
        assert changes == [{"op": "set-obs", "table": "table", "column": name or "_index", "kind": "index"}]
        assert check(top).problems == []
        with pytest.raises(StackError, match="nothing to save"):
            save_version(top, saved, title="again")
    flatten(top, tmp_path / "flat")
    assert_equal(anndata.read_zarr(tmp_path / "flat" / "tables" / "table"), expected)
    adata = open_anndata(top)
    adata.obs.index.name = "edited"  # a column's name: anndata refuses it too
    _refused(plain_base, adata, "obs index name 'edited' is also the name of an obs column")


def test_uns_and_obsm_keys_named_index_are_saved(plain_base: Path, tmp_path: Path) -> None:
    """Item 14: anndata writes and reads uns['_index'] and obsm['_index']; a save does too (an obs column
    named _index stays refused: anndata keeps the cell names there)."""
    adata = open_anndata(plain_base)
    adata.uns["_index"] = {"_index": np.arange(3)}
    adata.obsm["_index"] = np.ones((N_OBS, 2))
    expected = _as_anndata_reads_it(adata)
    top = save_version(plain_base, adata, title="index keys")
    assert_equal(open_anndata(top), expected)
    assert check(top).problems == []
    flatten(top, tmp_path / "flat")
    assert_equal(anndata.read_zarr(tmp_path / "flat" / "tables" / "table"), expected)
    adata = open_anndata(top)
    adata.obs["_index"] = np.zeros(N_OBS)
    _refused(plain_base, adata, "obs column '_index' is not a valid name")
