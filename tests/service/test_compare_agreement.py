"""Clusterings compared as a biologist reads them, and genes found as a person types them (issue 28).

The agreement scores are checked against textbook formulas written out here
(pairs of cells counted one by one, entropies label by label), the moved cells
against a best matching found by trying every pairing of the demo's labels.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sds_jupyter.demo import demo_dataset_id
from sds_jupyter.demo.xenium import build_xenium_demo
from sds_jupyter.service import RequestError, StackService, branches, dispatch
from sds_jupyter.service.agreement import adjusted_rand_index, agreement, crosstab, normalized_mutual_info
from sds_jupyter.service.celldiff import NEW_CELL, RENAMED, UNCHANGED, obs_change, transition_labels
from sds_jupyter.stack.open import open_anndata
from sds_jupyter.stack.stack import Stack

# ------------------------------------------------------------------ reference formulas


def _rand_by_pairs(a: list[Any], b: list[Any]) -> float:
    """The adjusted Rand index from every pair of cells (Hubert & Arabie), no contingency table."""
    n = len(a)
    together = sum(1 for i, j in itertools.combinations(range(n), 2) if a[i] == a[j] and b[i] == b[j])
    in_a = sum(math.comb(c, 2) for c in pd.Series(a).value_counts())
    in_b = sum(math.comb(c, 2) for c in pd.Series(b).value_counts())
    expected = in_a * in_b / math.comb(n, 2)
    return (together - expected) / ((in_a + in_b) / 2 - expected)


def _nmi_by_labels(a: list[Any], b: list[Any]) -> float:
    """Mutual information over the arithmetic mean of the entropies, summed label by label."""
    n = len(a)
    pa, pb = pd.Series(a).value_counts() / n, pd.Series(b).value_counts() / n
    joint = pd.Series(list(zip(a, b, strict=True))).value_counts() / n
    mi = sum(p * math.log(p / (pa[x] * pb[y])) for (x, y), p in joint.items())
    ha = -sum(p * math.log(p) for p in pa)
    hb = -sum(p * math.log(p) for p in pb)
    return mi / ((ha + hb) / 2)


def _scores(a: list[Any], b: list[Any]) -> dict[str, Any]:
    table = crosstab(np.array(a, dtype=object), np.array(b, dtype=object))
    assert table is not None
    return dict(agreement(table))


def test_a_pure_renaming_agrees_fully() -> None:
    a = ["0", "0", "1", "1", "1", "2", "2", "2", "2"]
    rename = {"0": "T cells", "1": "B cells", "2": "tumour"}
    scores = _scores(a, [rename[x] for x in a])
    assert (scores["ari"], scores["nmi"], scores["n_moved"]) == (1.0, 1.0, 0)
    assert scores["matched"] == [
        {"a": "2", "b": "tumour", "count": 4},
        {"a": "1", "b": "B cells", "count": 3},
        {"a": "0", "b": "T cells", "count": 2},
    ]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]),
        ([0, 0, 1, 1, 2, 2, 2, 3], [1, 1, 0, 0, 0, 2, 2, 2]),
        ([5, 5, 5, 5, 6, 6, 7, 7, 7, 8], [1, 2, 1, 2, 1, 2, 1, 2, 1, 2]),
    ],
)
def test_scores_match_the_textbook_formulas(a: list[int], b: list[int]) -> None:
    scores = _scores([str(x) for x in a], [str(x) for x in b])
    assert scores["ari"] == pytest.approx(_rand_by_pairs(a, b), abs=1e-12)
    assert scores["nmi"] == pytest.approx(_nmi_by_labels(a, b), abs=1e-12)


def test_one_group_on_both_sides_agrees_and_one_side_split_shares_nothing() -> None:
    one = np.array([[7]])
    assert adjusted_rand_index(one) == 1.0 and normalized_mutual_info(one) == 1.0
    split = np.array([[3, 4]])  # A one group, B two: no information shared
    assert normalized_mutual_info(split) == 0.0 and adjusted_rand_index(split) == 0.0


def test_merged_clusters_move_only_the_smaller_side_and_missing_is_a_group() -> None:
    a = pd.Series(pd.Categorical(["0"] * 5 + ["1"] * 3 + ["2"] * 2 + [None]))
    b = pd.Series(pd.Categorical(["x"] * 5 + ["x"] * 3 + ["y"] * 2 + ["y"]))
    change = obs_change("leiden", a, b)
    assert change is not None and change["n_changed"] == 11  # every label text differs
    scores = change["agreement"]
    assert scores["n_moved"] == 4  # the 3 cells of "1" merged into x, the missing one into y
    assert scores["matched"] == [{"a": "0", "b": "x", "count": 5}, {"a": "2", "b": "y", "count": 2}]
    table = change["contingency"]
    assert table["a"][:2] == ["0", "2"] and table["b"] == ["x", "y"]  # matched pairs on the diagonal
    assert None in table["a"] and sum(map(sum, table["counts"])) == 11


def test_the_heatmap_axes_run_in_the_labels_order_and_b_follows_the_matching() -> None:
    """Issue 40, item 7: a few moved cells read 0, 1, 2, …, 10 on both axes, not by the size of the pairs."""
    labels = [str(i) for i in range(11)]
    sizes = [50, 40, 30, 200, 20, 15, 12, 10, 8, 6, 5]  # "3" the largest: a size order would put it first
    before = np.repeat(labels, sizes)
    after = before.copy()
    after[:3] = "1"  # three cells of "0" move to "1"
    change = obs_change("leiden", pd.Series(pd.Categorical(before)), pd.Series(pd.Categorical(after)))
    assert change is not None
    table = change["contingency"]
    assert table["a"] == labels and table["b"] == labels
    # a renaming: the new names in their natural order, the old ones beside their new names
    renamed = np.array([{"3": "T cells", "10": "B cells"}.get(x, x) for x in before], dtype=object)
    change = obs_change("leiden", pd.Series(pd.Categorical(before)), pd.Series(pd.Categorical(renamed)))
    assert change is not None
    table = change["contingency"]
    assert table["b"] == [*(x for x in labels if x not in ("3", "10")), "B cells", "T cells"]
    assert table["a"] == [*(x for x in labels if x not in ("3", "10")), "10", "3"]


# ------------------------------------------------------------------ the demo: v6 against the branch


@pytest.fixture(scope="module")
def xenium(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("xenium"), n_cells=1500, side=4096)


def _best_matching_by_trying_all(crossed: pd.DataFrame) -> int:
    """The most cells any one-to-one pairing of labels keeps, found by trying every pairing."""
    rows, cols = list(crossed.index), list(crossed.columns)
    if len(rows) > len(cols):
        crossed, rows, cols = crossed.T, cols, rows
    return max(
        sum(int(crossed.loc[r, c]) for r, c in zip(rows, chosen, strict=True))
        for chosen in itertools.permutations(cols, len(rows))
    )


def test_v6_against_the_branch_counts_the_cells_that_moved(xenium: Path) -> None:
    branch_id = demo_dataset_id("xenium-Coarser clusters")
    service = StackService(xenium)
    comparison = json.loads(json.dumps(dispatch(service, "compare", {"a": 6, "b": branch_id}).data))
    leiden = next(c for c in comparison["obs"]["changed"] if c["column"] == "leiden")
    a = open_anndata(Stack.resolve(xenium)).obs["leiden"].astype(str)
    b = open_anndata(Stack.resolve(xenium.parent / branch_id)).obs["leiden"].astype(str)
    crossed = pd.crosstab(a, b.loc[a.index])
    kept = _best_matching_by_trying_all(crossed)
    scores = leiden["agreement"]
    assert scores["n_moved"] == len(a) - kept > 0
    assert sum(p["count"] for p in scores["matched"]) == kept
    assert leiden["n_changed"] == int((a != b.loc[a.index]).sum())  # labels that differ, as before
    assert 0 < scores["ari"] < 1 and 0 < scores["nmi"] < 1
    table = leiden["contingency"]
    assert sum(map(sum, table["counts"])) == len(a)
    diagonal = [(table["a"][i], table["b"][i], table["counts"][i][i]) for i in range(len(scores["matched"]))]
    assert sorted(diagonal, key=str) == sorted(((p["a"], p["b"], p["count"]) for p in scores["matched"]), key=str)


def test_a_branch_added_after_the_first_compare_is_found(xenium: Path, tmp_path: Path) -> None:
    """The tree's folders are cached by the listing's fingerprint: a new version is seen at once."""
    datasets = tmp_path / "datasets"
    shutil.copytree(xenium.parent, datasets, symlinks=True)
    service = StackService(datasets / xenium.name)
    branch_id = demo_dataset_id("xenium-Coarser clusters")
    assert dispatch(service, "compare", {"a": 6, "b": branch_id}).data["b"] >= 1
    manifest = json.loads((datasets / branch_id / "layer.json").read_text())
    copy_id = "copy-of-the-branch-5555"
    shutil.copytree(datasets / branch_id, datasets / copy_id)
    manifest["dataset_id"] = copy_id
    (datasets / copy_id / "layer.json").write_text(json.dumps(manifest))
    again = dispatch(service, "compare", {"a": 6, "b": copy_id}).data
    leiden = next(c for c in again["obs"]["changed"] if c["column"] == "leiden")
    first = next(
        c
        for c in dispatch(service, "compare", {"a": 6, "b": branch_id}).data["obs"]["changed"]
        if c["column"] == "leiden"
    )
    assert leiden["agreement"] == first["agreement"]


def test_repeated_compares_against_a_branch_build_the_tree_once(xenium: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's slow path (121 ms against 6 ms) was a tree() per branch lookup: now one per listing."""
    branch_id = demo_dataset_id("xenium-Coarser clusters")
    service = StackService(xenium)
    built: list[int] = []
    tree = branches.tree

    def counted(session: Any) -> Any:
        built.append(1)
        return tree(session)

    monkeypatch.setattr(branches, "tree", counted)  # the one place that builds a tree for a branch lookup
    answers = [dispatch(service, "compare", {"a": a, "b": branch_id}).data for a in (6, 5, 6)]
    assert all(answer["b"] >= 1 for answer in answers) and answers[0] == answers[2]
    assert len(built) == 1
    (xenium.parent / branch_id / "layer.json").touch()  # the listing changed: the tree is built again
    dispatch(service, "compare", {"a": 6, "b": branch_id})
    assert len(built) == 2


def test_every_request_of_a_version_reads_a_branch_by_its_dataset_id(xenium: Path) -> None:
    """The B of a side-by-side is named by dataset ID: figures, canvas, cells and colours come from its own folder."""
    branch_id = demo_dataset_id("xenium-Coarser clusters")
    here, there = StackService(xenium), StackService(xenium.parent / branch_id)
    figures = dispatch(here, "figures", {"version": branch_id}).data
    assert figures == dispatch(there, "figures").data and figures["figures"]
    figure = next(f["id"] for f in figures["figures"] if f["kind"] == "canvas")
    for name, params in (
        ("canvas", {"figure": figure}),
        ("color_values", {"figure": figure, "column": "leiden"}),
        ("cells", {"figure": figure}),
    ):
        routed, own = dispatch(here, name, {**params, "version": branch_id}), dispatch(there, name, params)
        assert routed.data == own.data, name
        assert [bytes(b) for b in routed.buffers] == [bytes(b) for b in own.buffers], name
    # the branch's leiden is not the chain's: the colours really are the branch's
    mine = dispatch(here, "color_values", {"figure": figure, "column": "leiden"})
    assert [bytes(b) for b in mine.buffers] != [
        bytes(b) for b in dispatch(there, "color_values", {"figure": figure, "column": "leiden"}).buffers
    ]
    # a dataset ID nowhere in the tree is refused as before, naming it
    error = dispatch(here, "figures", {"version": "no-such-version"}).data["error"]
    assert "no-such-version" in error["message"]


# ------------------------------------------------------------------ genes


@pytest.mark.parametrize("typed", ["Epcam", "epcam", "EPCAM"])
def test_a_gene_is_found_in_any_case(xenium: Path, typed: str) -> None:
    service = StackService(xenium)
    data = dispatch(service, "color_values", {"figure": "fig-leiden", "gene": typed}).data
    assert data["column"] == "EPCAM" and data["mode"] == "continuous"
    names = dispatch(service, "genes", {}).data
    assert "EPCAM" in names["names"] and names["symbols"] is None


def test_a_wrong_gene_name_is_answered_with_the_nearest(xenium: Path) -> None:
    with pytest.raises(RequestError, match=r"Gene 'Epcm' is not among .* Nearest: .*EPCAM"):
        dispatch(StackService(xenium), "color_values", {"figure": "fig-leiden", "gene": "Epcm"})


def test_three_genes_color_by_their_mean(xenium: Path) -> None:
    service = StackService(xenium)
    reply = dispatch(service, "color_values", {"figure": "fig-leiden", "gene": "epcam, krt8,KRT18"})
    assert reply.data["column"] == "mean of EPCAM, KRT8, KRT18"
    x = open_anndata(Stack.resolve(xenium)).to_df()[["EPCAM", "KRT8", "KRT18"]]
    np.testing.assert_allclose(np.frombuffer(reply.buffers[0], dtype=np.float32), x.mean(axis=1), rtol=1e-6)
    with pytest.raises(RequestError, match="up to 3"):
        dispatch(service, "color_values", {"figure": "fig-leiden", "gene": "EPCAM,KRT8,KRT18,CD3E"})


def test_a_dot_plot_is_the_fraction_expressing_and_the_mean_per_group(xenium: Path) -> None:
    data = dispatch(StackService(xenium), "dot_plot", {"gene": "EPCAM,cd3e", "groupby": "leiden"}).data
    adata = open_anndata(Stack.resolve(xenium))
    frame = adata.to_df()[["EPCAM", "CD3E"]].assign(group=adata.obs["leiden"].astype(str).to_numpy())
    assert data["genes"] == ["EPCAM", "CD3E"] and data["groups"] == list(adata.obs["leiden"].cat.categories)
    for row in data["rows"]:
        cells = frame.loc[frame["group"] == row["group"], row["gene"]]
        assert row["n_cells"] == len(cells)
        assert row["fraction"] == pytest.approx((cells > 0).mean())
        assert row["mean"] == pytest.approx(cells.mean(), rel=1e-6)
    with pytest.raises(RequestError, match="not a grouping"):
        dispatch(StackService(xenium), "dot_plot", {"gene": "EPCAM", "groupby": "hypoxia_score"})


# ------------------------------------------------------------------ moved cells on the tissue


def test_on_the_tissue_a_renaming_moves_no_cell() -> None:
    names = pd.Index([f"c{i}" for i in range(6)])
    a = pd.Series(pd.Categorical(["0", "0", "1", "1", "2", "2"]), index=names)
    renamed = pd.Series(pd.Categorical(["x", "x", "y", "y", "2", "2"]), index=names)
    labels = transition_labels("leiden", a, renamed, moved_only=True)
    assert list(labels) == [RENAMED] * 4 + [UNCHANGED] * 2
    # one cell of group "1" joins group "2": it alone moved, and says from where to where
    moved = pd.Series(pd.Categorical(["x", "x", "y", "2", "2", "2"]), index=names)
    labels = transition_labels("leiden", a, moved, moved_only=True)
    assert list(labels) == [RENAMED, RENAMED, RENAMED, "1 → 2", UNCHANGED, UNCHANGED]
    assert list(labels.cat.categories) == ["1 → 2", RENAMED, UNCHANGED]
    # without moved_only, every label that differs is a transition, as the compare tables count them
    assert list(transition_labels("leiden", a, moved))[:4] == ["0 → x", "0 → x", "1 → y", "1 → 2"]


def test_show_on_tissue_colors_the_cells_that_moved(xenium: Path) -> None:
    branch_id = demo_dataset_id("xenium-Coarser clusters")
    service = StackService(xenium)
    leiden = next(c for c in service.compare(branch_id, 6)["obs"]["changed"] if c["column"] == "leiden")
    reply = dispatch(service, "color_values", {"figure": "fig-leiden", "column": "leiden", "against": branch_id})
    codes = np.frombuffer(
        reply.buffers[0], dtype=reply.data.get("codes", "uint16")
    )  # a byte a cell up to 256 categories
    categories = reply.data["categories"]
    moved = [k for k, name in enumerate(categories) if name not in (RENAMED, UNCHANGED, NEW_CELL)]
    assert int(np.isin(codes, moved).sum()) == leiden["agreement"]["n_moved"] > 0
    assert reply.data["colors"][categories.index(UNCHANGED)] != reply.data["colors"][moved[0]]


def test_a_gene_is_found_by_its_symbol_when_var_holds_ids(tmp_path: Path) -> None:
    import anndata
    import spatialdata
    from spatialdata.models import TableModel

    adata = anndata.AnnData(
        X=np.array([[0, 1, 2], [3, 0, 1], [1, 1, 0]], dtype=np.float32),
        obs=pd.DataFrame({"group": pd.Categorical(["a", "b", "a"])}, index=["c1", "c2", "c3"]),
        var=pd.DataFrame({"gene_symbols": ["EPCAM", "KRT8", "CD3E"]}, index=["ENSG01", "ENSG02", "ENSG03"]),
    )
    path = tmp_path / "ids.sdata.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(tables={"table": TableModel.parse(adata)}).write(path)
    service = StackService(path)
    names = dispatch(service, "genes", {}).data
    assert names["names"] == ["ENSG01", "ENSG02", "ENSG03"]
    assert (names["symbol_column"], names["symbols"]) == ("gene_symbols", ["EPCAM", "KRT8", "CD3E"])
    plot = dispatch(service, "dot_plot", {"gene": "epcam,Ensg03", "groupby": "group"}).data
    assert plot["genes"] == ["ENSG01", "ENSG03"]
    row = next(r for r in plot["rows"] if r["group"] == "a" and r["gene"] == "ENSG01")
    assert (row["fraction"], row["mean"], row["n_cells"]) == (0.5, 0.5, 2)
    with pytest.raises(RequestError, match=r"Nearest: .*EPCAM"):
        dispatch(service, "dot_plot", {"gene": "epcan", "groupby": "group"})
