"""Transcripts: the demo's points element, the spatial index over it, and its tiles through the service.

Every element here is written by spatialdata (the Xenium-like base's transcripts, the blobs
demo's points); the answers are checked against the same element read back by spatialdata.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zarr

from sds_jupyter.errors import ElementError
from sds_jupyter.protocol.buffers import named_buffers
from sds_jupyter.protocol.layouts import LAYOUTS
from sds_jupyter.service import StackService
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.requests import dispatch
from sds_jupyter.studio.pointindex import IndexSizes, PointIndex, build_point_index
from sds_jupyter.studio.pointparts import PointBatch, open_points, point_batches

SMALL = IndexSizes(tile_points=500, full_tile_points=800, bucket_points=3_000)


@pytest.fixture(scope="module")
def transcripts(xenium_root: zarr.Group) -> pd.DataFrame:
    """The transcripts of the 500-cell Xenium-like base, as spatialdata reads them."""
    import spatialdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdata = spatialdata.read_zarr(xenium_root.store.root)
    frame: pd.DataFrame = sdata.points["transcripts"].compute()
    return frame


@pytest.fixture(scope="module")
def index(xenium_root: zarr.Group) -> PointIndex:
    return build_point_index(point_batches(xenium_root, open_points(xenium_root, "transcripts")), sizes=SMALL)


def test_demo_writes_transcripts_and_nuclei_with_spatialdata(
    xenium_root: zarr.Group, transcripts: pd.DataFrame
) -> None:
    """About 30 transcripts a cell, genes from the panel, each inside its own cell; nucleus outlines beside the cells."""
    import spatialdata

    from sds_jupyter.demo.transcripts import TRANSCRIPTS_PER_CELL

    sdata = spatialdata.read_zarr(xenium_root.store.root)
    cells = sdata.shapes["cell_boundaries"]
    assert len(transcripts) == TRANSCRIPTS_PER_CELL * len(cells)
    assert sdata.points["transcripts"].attrs["spatialdata_attrs"]["feature_key"] == "gene"
    assert set(transcripts["gene"].astype(str)) <= set(sdata.tables["table"].var_names)
    sample = transcripts.iloc[:: max(1, len(transcripts) // 2000)]
    owners = cells.loc[sample["cell_id"].to_numpy(), "geometry"]
    import shapely

    inside = shapely.contains_xy(owners.to_numpy(), sample["x"].to_numpy(), sample["y"].to_numpy())
    assert inside.all()
    nuclei = sdata.shapes["nucleus_boundaries"]
    assert len(nuclei) == len(cells) and (nuclei.area.to_numpy() < cells.area.to_numpy()).all()


def _finest_tiles(index: PointIndex, genes: list[str] | None = None) -> pd.DataFrame:
    side = 1 << index.level
    rows = []
    for row in range(side):
        for column in range(side):
            tile = index.tile(index.level, column, row, genes)
            assert not tile.sampled and tile.total == len(tile.x)
            x0, y0, x1, y1 = tile.bounds
            rows.append(
                pd.DataFrame(
                    {
                        "x": x0 + tile.x / 65535 * (x1 - x0),
                        "y": y0 + tile.y / 65535 * (y1 - y0),
                        "gene": np.asarray(index.genes)[tile.gene],
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def test_finest_tiles_hold_every_point_once(index: PointIndex, transcripts: pd.DataFrame) -> None:
    """No sampling at full zoom: the finest tiles together are the element, each point once, with its gene."""
    assert index.level >= 2 and index.block_level >= 1  # several levels and sort blocks on this little data
    assert index.n_points == len(transcripts)
    from scipy.spatial import cKDTree

    got = _finest_tiles(index)
    want = transcripts[["x", "y"]].astype(np.float64).assign(gene=transcripts["gene"].astype(str))
    names = {name: code for code, name in enumerate(index.genes)}

    def places(frame: pd.DataFrame) -> np.ndarray:  # a gene apart is far apart: matches stay within a gene
        return np.column_stack([frame["x"], frame["y"], frame["gene"].map(names).to_numpy() * 1e6])

    step = index.side / (1 << index.level) / 65535
    distance, match = cKDTree(places(want)).query(places(got))
    assert distance.max() <= step and len(np.unique(match)) == len(want)


def test_a_gene_tile_has_exactly_that_gene(index: PointIndex, transcripts: pd.DataFrame) -> None:
    gene = transcripts["gene"].astype(str).value_counts().index[3]
    got = _finest_tiles(index, [gene])
    assert set(got["gene"]) == {gene}
    assert len(got) == int((transcripts["gene"].astype(str) == gene).sum())


def test_coarse_tiles_are_an_even_sample_that_says_so(index: PointIndex, transcripts: pd.DataFrame) -> None:
    """Level 0 holds every point; it sends at most tile_points of them, spread over the tissue, and the true total."""
    tile = index.tile(0, 0, 0)
    assert tile.sampled and tile.total == len(transcripts) and len(tile.x) <= index.tile_points
    assert len(tile.x) >= index.tile_points - 2
    x = tile.bounds[0] + tile.x / 65535 * index.side
    assert x.min() < np.percentile(transcripts["x"], 10) and x.max() > np.percentile(transcripts["x"], 90)
    # the sample keeps each gene's share
    share = pd.Series(np.asarray(index.genes)[tile.gene]).value_counts(normalize=True)
    truth = transcripts["gene"].astype(str).value_counts(normalize=True)
    assert abs(share.iloc[0] - truth[share.index[0]]) < 0.02


def test_tiles_off_the_index_and_unknown_genes_are_refused(index: PointIndex) -> None:
    with pytest.raises(ElementError, match="not in this index"):
        index.tile(index.level + 1, 0, 0)
    with pytest.raises(ElementError, match="outside level 1"):
        index.tile(1, 2, 0)
    with pytest.raises(ElementError, match="No gene 'NOT-A-GENE'"):
        index.tile(0, 0, 0, ["NOT-A-GENE"])


def test_the_index_files_go_when_it_does(xenium_root: zarr.Group) -> None:
    built = build_point_index(point_batches(xenium_root, open_points(xenium_root, "transcripts")), sizes=SMALL)
    folder = built.folder
    assert folder.is_dir() and not list(folder.glob("block-*")) and not (folder / "raw.bin").exists()
    del built
    gc.collect()
    assert not folder.exists()


def _long_gene_points(path: Path, name_bytes: int) -> zarr.Group:
    """200 points written by spatialdata, each gene named by ``name_bytes`` bytes of text."""
    import dask.dataframe as dd
    import spatialdata
    from spatialdata.models import PointsModel

    genes = [f"{i:03d}" + "g" * (name_bytes - 3) for i in range(200)]
    frame = pd.DataFrame({"x": np.arange(200, dtype=np.float32), "y": np.ones(200, np.float32), "gene": genes})
    points = PointsModel.parse(
        dd.from_pandas(frame, npartitions=1), coordinates={"x": "x", "y": "y"}, feature_key="gene"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(points={"long": points}).write(path)
    return zarr.open_group(str(path), mode="r")


def test_row_groups_are_held_to_the_chunk_rule_before_they_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gene column claiming more than limits.chunk_bound's bytes a text value is refused by name, unread."""
    from sds_jupyter import limits

    monkeypatch.setattr(limits, "MAX_CHUNK_BYTES", 1024)  # the floor for small arrays, lowered to see the rule
    short = _long_gene_points(tmp_path / "short.zarr", 40)
    assert sum(len(b.x) for b in point_batches(short, open_points(short, "long"))) == 200
    long = _long_gene_points(tmp_path / "long.zarr", 3 * limits.MAX_TEXT_VALUE_BYTES)
    with pytest.raises(ElementError, match=r"column 'gene' of a row group .* decompresses to [\d,]+ bytes, more than"):
        next(point_batches(long, open_points(long, "long")))


# ------------------------------------------------------------------------------ the service


@pytest.fixture
def service(demo_top: Path) -> StackService:
    return StackService(demo_top)


def test_points_request_lists_and_indexes_the_blobs_points(service: StackService) -> None:
    import spatialdata

    answer = dispatch(service, "points").data
    assert answer == {"elements": ["blobs_points"], "index": None}
    info = dispatch(service, "points", {"element": "blobs_points"}).data["index"]
    truth = spatialdata.read_zarr(_base_path(service)).points["blobs_points"].compute()
    assert info["n_points"] == len(truth)
    counts = truth["genes"].astype(str).value_counts()
    assert {g["name"]: g["count"] for g in info["genes"]} == counts.to_dict()
    again = dispatch(service, "points", {"element": "blobs_points"}).data["index"]
    assert again["key"] == info["key"]


def _base_path(service: StackService) -> Path:
    local = service.stack.base.path.as_local()
    assert local is not None
    return Path(local)


def test_points_tile_reply_follows_its_layout_and_is_named(service: StackService) -> None:
    info = dispatch(service, "points", {"element": "blobs_points"}).data["index"]
    gene = info["genes"][0]["name"]
    params = {"element": "blobs_points", "key": info["key"], "level": 0, "x": 0, "y": 0, "genes": gene}
    reply = dispatch(service, "points_tile", params)
    buffers = named_buffers("points_tile", LAYOUTS["points_tile"], reply.data, reply.buffers)
    genes = np.frombuffer(buffers["gene"], dtype="<u2")
    assert reply.data["n"] == info["genes"][0]["count"] == len(genes)
    assert set(genes.tolist()) == {[g["name"] for g in info["genes"]].index(gene)}
    assert reply.addressed and reply.etag
    with pytest.raises(RequestError, match="ask points again"):
        dispatch(service, "points_tile", {**params, "key": "0" * 32})
    with pytest.raises(RequestError, match="No gene"):
        dispatch(service, "points_tile", {**params, "genes": "nope"})
    with pytest.raises(RequestError, match="No points element"):
        dispatch(service, "points", {"element": "blobs_labels"})


# ------------------------------------------------------------------------------ the spec's layer


@pytest.fixture(scope="module")
def xenium_top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Xenium-like demo: transcripts, nuclei and the figure saved with its transcripts shown."""
    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("points-demo"), n_cells=400, side=256)


def test_a_saved_transcripts_layer_round_trips_through_the_spec(xenium_top: Path) -> None:
    """The demo's figure saves its layer; the canvas payload carries it to the view, and its genes' tiles answer."""
    from sds_jupyter.demo.xenium import TRANSCRIPT_GENES

    service = StackService(xenium_top)
    (spec,) = [f["spec"] for f in service.figures(None)["figures"] if f["id"] == "fig-transcripts"]
    saved = dispatch(service, "canvas", {"figure": "fig-transcripts"}).data["points"]
    assert saved == spec["points"] == {"element": "transcripts", "genes": list(TRANSCRIPT_GENES), "radius": 1.5}
    assert dispatch(service, "canvas", {"figure": "fig-cell-types"}).data["points"] is None
    info = dispatch(service, "points", {"element": saved["element"]}).data["index"]
    params = {
        "element": "transcripts",
        "key": info["key"],
        "level": 0,
        "x": 0,
        "y": 0,
        "genes": ",".join(saved["genes"]),
    }
    tile = dispatch(service, "points_tile", params)
    names = [g["name"] for g in info["genes"]]
    shown = {names[code] for code in np.frombuffer(tile.buffers[2], dtype="<u2").tolist()}
    assert shown and shown <= set(TRANSCRIPT_GENES)


def test_the_demos_transcripts_figure_outlines_the_nuclei_and_its_view_loads_their_tiles(xenium_top: Path) -> None:
    """Issue 39: opening the demo's transcripts figure (as `make bench` does) loads nucleus tiles: the canvas
    carries the layer shown, and the tiles under its saved view hold nuclei inside that view."""
    from sds_jupyter.demo.xenium import NUCLEI

    service = StackService(xenium_top)
    canvas = dispatch(service, "canvas", {"figure": "fig-transcripts"}).data
    assert [(layer["element"], layer["visible"]) for layer in canvas["shape_layers"]] == [(NUCLEI, True)]
    index = dispatch(service, "shapes", {"element": NUCLEI}).data["index"]
    grid, (x, y) = index["grid"], canvas["viewport"]["target"]
    column, row = int((x - grid["x0"]) // grid["size"]), int((y - grid["y0"]) // grid["size"])
    params = {"element": NUCLEI, "key": index["key"], "column": column, "row": row}
    tile = dispatch(service, "shapes_tile", params).data
    assert tile["n_shapes"] > 0 and tile["box"][0] <= x <= tile["box"][2]


def test_a_bad_transcripts_layer_in_a_spec_is_named() -> None:
    from sds_jupyter.studio.figurespecs import parse_figure

    base = {"kind": "canvas", "title": "t", "table": "table"}
    assert parse_figure("ok", {**base, "points": {"element": "transcripts"}}).kind == "canvas"
    for bad in ({"genes": ["A"]}, {"element": "t", "radius": -1}, {"element": "t", "colour": "red"}):
        parsed = parse_figure("bad", {**base, "points": bad})
        assert parsed.kind == "unsupported" and parsed.reason and "points" in parsed.reason


def test_an_export_draws_the_saved_transcripts_with_their_legend(xenium_top: Path, tmp_path: Path) -> None:
    """The figure's transcripts are in its export: the region's points of its genes, coloured as the view colours them."""
    from sds_jupyter.demo.xenium import TRANSCRIPT_GENES
    from sds_jupyter.service.export import render_export
    from sds_jupyter.studio.pointparts import GENE_COLORS, export_points

    service = StackService(xenium_top)
    root = service.table_view(None).root
    region = (0.0, 0.0, 30.0, 30.0)
    drawn = export_points(root, "transcripts", list(TRANSCRIPT_GENES), region, 1.5)
    assert drawn.total == len(drawn.x) > 0
    assert ((drawn.x >= 0) & (drawn.x <= 30) & (drawn.y >= 0) & (drawn.y <= 30)).all()
    assert drawn.legend == [(gene, GENE_COLORS[i]) for i, gene in enumerate(TRANSCRIPT_GENES)]
    assert set(drawn.colors) <= set(GENE_COLORS[: len(TRANSCRIPT_GENES)])
    svg = render_export(service, None, "fig-transcripts", ".svg", 72, "whole").data.decode()
    assert "Transcripts" in svg and all(gene in svg for gene in TRANSCRIPT_GENES)
    plain = render_export(service, None, "fig-cell-types", ".svg", 72, "whole").data.decode()
    assert "Transcripts" not in plain


def test_the_offsets_stay_bounded_for_a_large_gene_panel() -> None:
    """Many genes: fewer sort blocks, so the offsets (a row of genes a block) keep within OFFSETS_BYTES."""
    from sds_jupyter.studio.pointindex import MAX_LEVEL, OFFSETS_BYTES, _levels

    histogram = np.full(4**MAX_LEVEL, 1000, dtype=np.int64)  # a billion points spread evenly: many blocks wanted
    _, few_genes = _levels(histogram, 32_768, 4_000_000, 300)
    _, many_genes = _levels(histogram, 32_768, 4_000_000, 60_000)
    assert few_genes > many_genes
    assert 4**many_genes * 60_001 * 8 <= OFFSETS_BYTES and 4**few_genes * 301 * 8 <= OFFSETS_BYTES


def _batches(x: np.ndarray, y: np.ndarray, genes: np.ndarray, names: list[str], rows: int = 700) -> list[PointBatch]:
    return [
        PointBatch(x[i : i + rows], y[i : i + rows], genes[i : i + rows].astype(np.int32), names)
        for i in range(0, len(x), rows)
    ]


@pytest.mark.parametrize("spread", ["clustered", "one spot", "one spot, one gene"])
def test_the_sort_holds_at_most_a_bucket_whatever_a_block_holds(monkeypatch: pytest.MonkeyPatch, spread: str) -> None:
    """A bucket of 100 points, blocks of thousands: the sort splits them, and the index is the one a big bucket makes."""
    import sds_jupyter.studio.pointindex as pointindex

    rng = np.random.default_rng(4)
    n, names = 5_000, ["A", "B", "C", "D"]
    if spread == "clustered":  # most points in one corner: one block far denser than the rest
        x, y = np.where(rng.random(n) < 0.8, rng.normal(5, 1, (2, n)), rng.uniform(0, 100, (2, n)))
    else:
        x, y = np.full(n, 7.0), np.full(n, 3.0)
    genes = rng.integers(0, 1 if spread.endswith("one gene") else 4, n)
    sorted_at_once: list[int] = []
    by_key = pointindex._by_key
    monkeypatch.setattr(pointindex, "_by_key", lambda r: sorted_at_once.append(len(r)) or by_key(r))
    small = build_point_index(_batches(x, y, genes, names), sizes=IndexSizes(400, 600, bucket_points=100))
    assert max(sorted_at_once, default=0) <= 100
    big = build_point_index(_batches(x, y, genes, names), sizes=IndexSizes(400, 600, bucket_points=10**6))
    assert (small.level, small.n_points) == (big.level, n) and small.block_level > big.block_level
    # each block's run of a gene is in Z-order (what the tiles' binary searches need) ...
    for block, row in enumerate(small.offsets):
        for gene in range(len(small.genes)):
            codes = np.asarray(small.codes[row[gene] : row[gene + 1]])
            assert (np.diff(codes.astype(np.int64)) >= 0).all(), (block, gene)

    # ... and it holds the same points as the index sorted in one go, with the same tiles
    def points(index: PointIndex) -> list[tuple[int, float, float]]:
        return sorted(zip(np.asarray(index.codes).tolist(), index.x.tolist(), index.y.tolist(), strict=True))

    assert points(small) == points(big)
    column, row = (int(v / small.side * (1 << small.level)) for v in (x[0] - small.origin[0], y[0] - small.origin[1]))
    a, b = small.tile(small.level, column, row), big.tile(big.level, column, row)
    assert a.total == b.total > 0
    assert sorted(zip(a.x, a.y, a.gene, strict=True)) == sorted(zip(b.x, b.y, b.gene, strict=True))
    assert not [p for p in small.folder.iterdir() if p.name.startswith("block-")]


def test_the_packed_sort_orders_as_a_stable_sort_by_gene_then_code() -> None:
    """Gene and code packed beside each record's position: the widest genes and codes, and ties, in file order."""
    import sds_jupyter.studio.pointindex as pointindex

    rng = np.random.default_rng(5)
    records = np.empty(20_000, dtype=pointindex._BUCKET)
    records["gene"] = rng.choice([0, 1, 7, 65_534], len(records))
    records["code"] = rng.choice([0, 5, (1 << 20) - 1], len(records))  # many ties of (gene, code)
    records["x"], records["y"] = rng.random(len(records)), np.arange(len(records))  # y: the record's place
    expected = records[np.argsort(pointindex._keys(records), kind="stable")]
    assert pointindex._by_key(records).tobytes() == expected.tobytes()
