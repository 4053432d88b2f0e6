"""The JSON payloads of the browser protocol (docs/service-protocol.md), typed once.

The single source, with the canvas payloads of :mod:`sds_jupyter.protocol.payloads`:
``make types`` generates the JSON Schema and the TypeScript the browser app imports
(``js/src/app/shared/payloads.gen.ts``) from these TypedDicts and the aliases beside them;
nothing restates them by hand.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, get_args, get_type_hints

from sds_jupyter.errors import ErrorKind
from sds_jupyter.protocol.payloads import Bounds, CanvasShapes, ChannelInfo, ImageLevel, OutlineTiles

__all__ = [
    "OPEN_PAYLOADS",
    "Agreement",
    "AnnotateData",
    "BaseSummary",
    "CellOutlinesData",
    "CellQuantum",
    "CellRow",
    "CellsData",
    "Change",
    "ChangesData",
    "ChannelsData",
    "Column",
    "ColumnKind",
    "ColumnSummary",
    "Comparison",
    "ContentsData",
    "Contingency",
    "Delta",
    "DotPlot",
    "DotRow",
    "ElementKind",
    "ElementSummary",
    "EmbeddingData",
    "ErrorInfo",
    "ErrorKind",
    "FigureChange",
    "FigureSummary",
    "FiguresData",
    "Fingerprint",
    "GeneNames",
    "Histogram",
    "HistoryData",
    "ImageLevel",
    "ImageRegionData",
    "ImageTileData",
    "KeyEntry",
    "KeySize",
    "LabelsData",
    "LabelsTileData",
    "MatchedPair",
    "NumericSummary",
    "ObsChange",
    "ObsDelta",
    "ObsmChange",
    "OpDetail",
    "OpenAdataData",
    "OpenVersionData",
    "PartStatus",
    "PointsData",
    "PointsGene",
    "PointsInfo",
    "PointsTileData",
    "ResultChange",
    "ResultCsv",
    "ResultMeta",
    "ResultPage",
    "ResultSummary",
    "ResultTableSummary",
    "ResultsData",
    "ShapesData",
    "ShapesIndex",
    "ShapesTileData",
    "StoreKeyData",
    "TableContents",
    "Transition",
    "TreeData",
    "TreeNode",
    "UnsChange",
    "ValueCount",
    "VersionSummary",
    "Whiteout",
    "WidgetAnswered",
    "WidgetApp",
    "WidgetAsk",
    "WidgetAskApp",
    "WidgetOpenAdata",
    "WidgetOpenVersion",
    "WidgetRequest",
    "WidgetResponse",
    "message_kind",
]


class ErrorInfo(TypedDict):
    kind: ErrorKind
    message: str
    dataset_id: NotRequired[str]
    """The dataset to attach, when one is missing."""
    name: NotRequired[str]
    """The missing dataset's name in the workspace's folder map, when it names it."""


class Change(TypedDict):
    """One ``changes`` entry as the manifest stores it: ``op`` plus the op's own fields (kept as stored)."""

    op: str


class VersionSummary(TypedDict):
    depth: int
    dataset_id: str
    title: str | None
    message: str | None
    created_at: str | None
    created_by: str | None
    app: dict[str, Any] | None
    changes: list[Change]
    n_files: int
    n_deleted: int
    folder: str


class BaseSummary(TypedDict):
    depth: Literal[0]
    dataset_id: str | None
    name: NotRequired[str]
    """The base's name in the workspace's folder map (what people call it), when it names it."""
    path: str
    kind: str
    zarr_format: int


class HistoryData(TypedDict):
    top_depth: int
    versions: list[VersionSummary]
    base: BaseSummary | None
    error: NotRequired[ErrorInfo]


class KeySize(TypedDict):
    key: str
    size: int


class Whiteout(TypedDict):
    entry: str
    node: bool


class ChangesData(TypedDict):
    ops: list[Change]
    details: list[OpDetail]
    added: list[KeySize]
    replaced: list[KeySize]
    deleted: list[Whiteout]
    note: NotRequired[str]
    """Why added and replaced could not be told apart (a missing parent below)."""


class TreeNode(TypedDict):
    dataset_id: str
    parent: str | None
    depth: int
    title: str | None
    folder: str
    created_at: str | None
    created_by: str | None
    changes: NotRequired[list[Change]]
    """The version's ops (from its manifest): what a search over every version's columns and ops reads."""
    not_in_cirro: NotRequired[bool]
    """In a Cirro workspace: the version was saved outside the mounted datasets (not yet uploaded)."""


class TreeData(TypedDict):
    current: str | None
    nodes: list[TreeNode]
    base: BaseSummary | None
    notes: list[str]
    missing_name: NotRequired[str]
    """The folder map's name of the dataset missing below these versions, when it names it."""


class Fingerprint(TypedDict):
    fingerprint: str


class CirroProject(TypedDict):
    id: str
    name: str


class CirroProjectsData(TypedDict):
    """The Cirro projects to choose from, and the workspace's own (``$CIRRO_PROJECT_ID``) to preselect."""

    projects: list[CirroProject]
    default: str | None


class CirroPlanData(TypedDict):
    """What an upload would send (its parent chain checked first): the dataset's name, files and bytes.

    ``copy_of``: the version's folder is a copy of this Cirro dataset (Cirro knows its ID), so
    nothing is to be uploaded; ``said`` says so in the panel's words. The copy is recorded, so its
    "not yet in Cirro" tag goes.
    """

    name: str
    n_files: int
    n_bytes: int
    copy_of: NotRequired[str]
    said: NotRequired[str]


class CirroUploadData(TypedDict):
    """The Cirro dataset a version became (recorded beside it, so it is no longer "not yet in Cirro")."""

    dataset_id: str
    project: str


class CirroFetchData(TypedDict):
    """The datasets fetched from Cirro into the fetch folder (the stack then resolves)."""

    fetched: list[str]


class AnnotateData(TypedDict):
    """The version an annotation was saved as: its folder (as the history shows it) and dataset ID."""

    folder: str
    dataset_id: str


class CanvasSummary(TypedDict):
    table: str
    color_by: str | None
    image: str | None


class FigureSummary(TypedDict):
    id: str
    title: str | None
    caption: str | None
    print_width: float | int | str | None
    kind: Literal["chart", "canvas", "unsupported"]
    vega_lite: NotRequired[dict[str, Any]]
    canvas: NotRequired[CanvasSummary]
    reason: NotRequired[str]
    spec: Any


class FiguresData(TypedDict):
    figures: list[FigureSummary]
    error: NotRequired[ErrorInfo]


class CellRow(TypedDict):
    """One cell's obs row: its position in the table, its obs name (ID), and every column's value."""

    index: int
    name: str
    columns: list[str]
    values: list[str | float | bool | None]


class StoreKeyData(TypedDict):
    """The ``store_key`` request: the object's bytes follow as one buffer when ``found``."""

    key: str
    found: bool
    size: int


class CellQuantum(TypedDict):
    """How a large tissue's positions and radii go as uint16: value = origin + code x step.

    x and y are sent as differences: cell i's code is the running sum of the buffer up to i,
    modulo 65536. Code 65535 (``NO_POSITION``) stands for NaN (a cell without a position or shape). One ``step``
    for x and y (the larger side of the bounds over 65,534), so a position is off by at most half
    of it: 0.04 µm on a 5 mm tissue, far below a screen pixel until a cell fills the view, when
    its outline arrives by tile in float32.
    """

    x0: float
    y0: float
    step: float
    radius_step: float


class CellsData(TypedDict):
    """The ``cells`` request: x, y, then the shapes' buffers (as a canvas reply's) follow.

    x, y (and a large tissue's radii) are float32, or uint16 codes when ``quantum`` is set
    (a tissue whose outlines come by tile: a quarter of the bytes for a million cells).
    ``key`` names the stored objects the cells were computed from: equal keys, equal buffers.
    """

    key: str
    n_cells: int
    #: The cells' bounds; null when no cell has a position.
    bounds: Bounds | None
    shapes: CanvasShapes | None
    #: Set when x, y and the radii go as uint16 codes (a large tissue); null: float32 as they are.
    quantum: NotRequired[CellQuantum | None]


class EmbeddingData(TypedDict):
    """The ``embedding`` request: the table's embeddings and, when one is asked for, its x and y follow
    (float32, one value a cell in table order: the obsm entry's first two columns).

    ``name`` names the stored entry the coordinates were read from: equal names, equal buffers.
    """

    #: The obsm entries of 2 or more columns, ``spatial`` aside.
    keys: list[str]
    #: The embedding whose coordinates follow; null when none was asked for (no buffers).
    key: str | None
    name: str | None
    n_cells: int
    #: How many columns the entry has (only the first two are sent).
    columns: int
    #: The finite coordinates' bounds; null when there are none (or no key).
    bounds: Bounds | None


class CellOutlinesData(TypedDict):
    """The ``cell_outlines`` request: index (uint32, the cells in table order), starts (uint32,
    n_cells + 1) and vertices (float32 x, y pairs) follow, as a canvas reply's polygons.
    """

    key: str
    column: int
    row: int
    #: The tile: x0, y0, x1, y1 in the figure's coordinate system.
    box: Bounds
    n_cells: int
    n_vertices: int


class ChannelsData(TypedDict):
    """The ``channels`` request: one uint8 plane per channel follows, ``range`` mapped onto 0-255."""

    width: int
    height: int
    bounds: Bounds
    channels: list[ChannelInfo]
    #: The image's pyramid, finest first: what ``image_tile`` serves.
    levels: list[ImageLevel]


class ImageTileData(TypedDict):
    """The ``image_tile`` request: one uint8 plane per channel follows (``width`` x ``height``)."""

    level: int
    x: int
    y: int
    width: int
    height: int
    #: Where the tile's pixels sit, in the figure's coordinate system: x0, y0, x1, y1.
    bounds: Bounds
    channels: int


class LabelsData(TypedDict):
    """The ``labels`` request: the version's labels elements; for the one asked, its pyramid (finest first)."""

    elements: list[str]
    element: str
    #: What ``labels_tile`` serves, as the ``channels`` reply's levels ([] when no element was asked).
    levels: list[ImageLevel]


class LabelsTileData(TypedDict):
    """The ``labels_tile`` request: one RGBA uint8 buffer follows (``width`` x ``height`` x 4, rows top first)."""

    element: str
    level: int
    x: int
    y: int
    width: int
    height: int
    #: Where the tile's pixels sit, in the coordinate system: x0, y0, x1, y1.
    bounds: Bounds
    #: "fill" (translucent fill, opaque outline) or "outline" (outline alone).
    style: str


class ShapesIndex(TypedDict):
    """One shapes element outlined on its own (nucleus boundaries beside the cells): what ``shapes_tile`` serves."""

    element: str
    #: Names the element's stored objects and the coordinate system: ``shapes_tile`` checks it.
    key: str
    #: "polygons", or "circles" (outlined as rings of CIRCLE_SIDES sides).
    kind: str
    n_shapes: int
    #: The shapes' bounds in the coordinate system; null when the element holds none.
    bounds: Bounds | None
    grid: OutlineTiles


class ShapesData(TypedDict):
    """The ``shapes`` request: the shapes elements of the coordinate system and, for the one asked, its index."""

    elements: list[str]
    #: Each element's outline colour unless a figure saved one (as ``elements``).
    colors: list[str]
    element: str
    index: ShapesIndex | None


class ShapesTileData(TypedDict):
    """The ``shapes_tile`` request: index (uint32, rows of the element), starts (uint32, n_shapes + 1)
    and vertices (float32 x, y pairs) follow, as ``cell_outlines`` sends a tile of cells.
    """

    element: str
    key: str
    column: int
    row: int
    #: The tile: x0, y0, x1, y1 in the coordinate system.
    box: Bounds
    n_shapes: int
    n_vertices: int


class PointsGene(TypedDict):
    """A gene of a points element and how many of its points name it."""

    name: str
    count: int


class PointsInfo(TypedDict):
    """A points element's spatial index: what the view needs to ask for its tiles."""

    element: str
    #: Names the index (the element's stored objects and the coordinate system): ``points_tile`` checks it.
    key: str
    #: A sample of the element, not every point (``partial_reason`` says why): ask ``points`` again for the whole one.
    partial: bool
    #: Why ``partial`` (absent when the index is whole; a reply without it while ``partial`` reads as
    #: ``building``): ``building``, the whole index is being built and asking again answers it once
    #: ready; ``refused``, the disk refused the index and the element holds too many points to index
    #: in memory, so the sample is all there is until the server tries again (``retry_seconds``).
    partial_reason: NotRequired[Literal["building", "refused"]]
    #: With ``refused``: why the disk refused the index, in the system's words (e.g. "No space left on device").
    refused: NotRequired[str]
    #: With ``refused``: the most points indexed in memory (``rows`` is more).
    memory_points: NotRequired[int]
    #: With ``refused``: seconds until the server tries another build (asking sooner answers the same sample).
    retry_seconds: NotRequired[float]
    #: The rows the element holds; ``n_points`` (and the genes' counts) are the sample's when ``partial``.
    rows: int
    n_points: int
    #: The indexed square, x0, y0, x1, y1 in the coordinate system: level k cuts it into 2**k x 2**k tiles.
    bounds: Bounds
    #: The finest level: its tiles are sent whole; coarser ones as a sample of at most ``tile_points``.
    finest_level: int
    tile_points: int
    #: Every gene named, in code order: a tile's gene buffer indexes this list ("" for points without one).
    genes: list[PointsGene]
    #: The genes' colours, in order: the shown genes' (or every gene's by count) place picks one (exports use the same).
    palette: list[str]


class PointsData(TypedDict):
    """The ``points`` request: the version's points elements; for the one asked, its index."""

    elements: list[str]
    index: PointsInfo | None


class PointsTileData(TypedDict):
    """The ``points_tile`` request: x, y (uint16 steps across ``bounds``) and gene (uint16 codes) follow, ``n`` each."""

    key: str
    level: int
    x: int
    y: int
    #: The tile, x0, y0, x1, y1: a point's x is x0 + step / 65535 * (x1 - x0).
    bounds: Bounds
    n: int
    #: Points of the asked genes in the tile (more than ``n`` when ``sampled``; in the sample when ``partial``).
    total: int
    sampled: bool
    #: From the sample of an index still building (``PointsInfo.partial``): never the whole at any zoom.
    partial: bool
    #: Only on a tile of a whole index the server dropped: ``building`` (made again in the background)
    #: or ``refused`` (the disk refuses it now and memory may not hold it). The tile holds the
    #: element's sample in it (the whole index's tile and gene codes); ask ``points`` again.
    partial_reason: NotRequired[Literal["building", "refused"]]
    #: With ``partial_reason`` ``refused``: why the disk refused the index, in the system's words.
    refused: NotRequired[str]


class ExportData(TypedDict):
    """The ``export`` request: the file's bytes follow as one buffer; the browser saves them as ``name``."""

    #: The file name: the version (depth and title) and the figure, e.g. ``v3_Regions-fig_regions.svg``.
    name: str
    #: ".svg", ".png" or ".pdf".
    format: str
    media_type: str
    size: int
    #: Cells in the exported region (0 for a chart).
    cells: int
    #: Whether the cells are one picture inside the vector file (more than VECTOR_CELL_LIMIT of them).
    rasterized: bool


class ImageRegionData(TypedDict):
    """The ``image_region`` request: one uint8 plane per channel follows (``width`` x ``height``)."""

    #: Which pyramid level was read (0 the finest) of how many.
    level: int
    levels: int
    width: int
    height: int
    #: Where the pixels sit, in the figure's coordinate system: x0, y0, x1, y1.
    bounds: Bounds
    channels: int


class Column(TypedDict):
    name: str
    dtype: str
    #: Smallest and largest finite value of a numeric column over the whole table
    #: (result_page only): the front end picks one precision per column from them.
    min: NotRequired[float | None]
    max: NotRequired[float | None]


class ResultTableSummary(TypedDict):
    name: str
    n_rows: int
    columns: list[Column]


class ResultMeta(TypedDict, total=False):
    """A result's meta as stored beside its tables; the service drops a named field of another type."""

    kind: str
    title: str
    method: str
    parameters: dict[str, Any]
    summary: dict[str, Any]
    created_by: str
    created_at: str
    app_version: str


class ResultSummary(TypedDict):
    id: str
    kind: str | None
    title: str | None
    meta: ResultMeta | None
    tables: list[ResultTableSummary]
    chart: NotRequired[dict[str, Any]]
    error: NotRequired[ErrorInfo]


class ResultsData(TypedDict):
    results: list[ResultSummary]
    error: NotRequired[ErrorInfo]


class ResultPage(TypedDict):
    columns: list[Column]
    rows: list[list[Any]]
    total: int
    offset: int
    #: Rows of the table before the filter (``total`` counts the rows that match).
    unfiltered: int


class ResultCsv(TypedDict):
    csv: str
    filename: str
    rows: int


class Delta(TypedDict):
    added: list[str]
    removed: list[str]
    changed: list[str]


ColumnKind = Literal["categorical", "numeric", "boolean", "string"]
PartStatus = Literal["added", "removed", "changed"]


class ValueCount(TypedDict):
    value: str
    count: int


class NumericSummary(TypedDict):
    min: float
    median: float
    mean: float
    max: float


class ColumnSummary(TypedDict):
    """An obs column: counts (categorical, boolean, string) or a summary (numeric)."""

    column: str
    kind: ColumnKind
    dtype: str
    n: int
    n_missing: int
    n_values: NotRequired[int]
    counts: NotRequired[list[ValueCount]]
    summary: NotRequired[NumericSummary]
    status: NotRequired[Literal["added", "changed"]]


class Transition(TypedDict):
    a: str | None
    b: str | None
    count: int


class MatchedPair(TypedDict):
    a: str | None
    b: str | None
    count: int


class Agreement(TypedDict):
    ari: float
    nmi: float
    matched: list[MatchedPair]
    n_moved: int


class Contingency(TypedDict):
    a: list[str | None]
    b: list[str | None]
    counts: list[list[int]]


class DotRow(TypedDict):
    group: str
    gene: str
    fraction: float
    mean: float
    n_cells: int


class DotPlot(TypedDict):
    groupby: str
    genes: list[str]
    groups: list[str]
    layer: str | None
    rows: list[DotRow]


class GeneNames(TypedDict):
    table: str
    names: list[str]
    symbol_column: str | None
    symbols: list[str] | None


class Histogram(TypedDict):
    edges: list[float]
    counts: list[int]


class ObsChange(TypedDict):
    column: str
    kind: ColumnKind
    n_changed: int
    transitions: NotRequired[list[Transition]]
    n_transitions: NotRequired[int]
    max_abs_delta: NotRequired[float | None]
    delta_histogram: NotRequired[Histogram]
    counts_a: NotRequired[dict[str, int]]
    counts_b: NotRequired[dict[str, int]]
    counts_other_a: NotRequired[int]
    counts_other_b: NotRequired[int]
    agreement: NotRequired[Agreement]
    contingency: NotRequired[Contingency]


class ObsDelta(TypedDict):
    added: list[str]
    removed: list[str]
    changed: list[ObsChange]
    added_columns: list[ColumnSummary]
    removed_columns: list[ColumnSummary]
    n_cells_a: int
    n_cells_b: int
    n_common: int


class ObsmChange(TypedDict):
    key: str
    change: PartStatus
    shape_a: list[int] | None
    shape_b: list[int] | None
    n_rows_changed: NotRequired[int]
    max_displacement: NotRequired[float]


class UnsChange(TypedDict):
    key: str
    change: PartStatus
    a: NotRequired[Any]
    b: NotRequired[Any]


class FigureChange(TypedDict):
    id: str
    change: PartStatus
    title: str | None


class ResultChange(TypedDict):
    id: str
    change: PartStatus
    title: str | None
    kind: str | None
    n_rows_a: NotRequired[int]
    n_rows_b: NotRequired[int]
    table_changed: NotRequired[bool]
    n_rows_changed: NotRequired[int]


class Comparison(TypedDict):
    a: int
    b: int
    obs: ObsDelta
    obsm: Delta
    uns: Delta
    figures: Delta
    results: Delta
    obsm_changes: list[ObsmChange]
    uns_changes: list[UnsChange]
    figure_changes: list[FigureChange]
    result_changes: list[ResultChange]


class OpDetail(TypedDict, total=False):
    """What an op of ``changes`` set, read from the version (the op itself names only the key)."""

    column: ColumnSummary
    value: Any
    shape: list[int]
    title: str | None
    kind: str | None
    method: str | None
    n_rows: int
    existed: bool
    #: a categorical column set over one below: its groups against the ones below (B: below, A: this version)
    agreement: Agreement


ElementKind = Literal["images", "labels", "shapes", "points", "tables"]


class ElementSummary(TypedDict):
    kind: ElementKind
    name: str
    status: NotRequired[Literal["added", "changed"]]
    shape: NotRequired[list[int]]
    dtype: NotRequired[str]
    axes: NotRequired[list[str]]
    levels: NotRequired[int]
    channels: NotRequired[list[str]]
    n: NotRequired[int]
    geometry: NotRequired[list[str]]
    n_obs: NotRequired[int]
    n_vars: NotRequired[int]
    annotates: NotRequired[list[str]]
    error: NotRequired[str]


class KeyEntry(TypedDict):
    key: str
    shape: NotRequired[list[int]]
    status: NotRequired[Literal["added", "changed"]]


class TableContents(TypedDict):
    name: str
    n_obs: int
    n_vars: int
    annotates: list[str]
    status: Literal["added", "changed"] | None
    obs: list[ColumnSummary]
    removed_obs: list[str]
    obsm: list[KeyEntry]
    uns: list[KeyEntry]


class ContentsData(TypedDict):
    depth: int
    elements: list[ElementSummary]
    tables: list[TableContents]


# ------------------------------------------------------------------ the widget's comm messages
# The notebook transport (``sds_jupyter.widget`` and ``js/src/widget.ts``) wraps the same requests in
# anywidget custom messages; their shapes are declared here so both sides are generated from one text.


class WidgetRequest(TypedDict):
    """Browser -> kernel: one request of the table, answered by a WidgetResponse with the same id."""

    type: Literal["request"]
    id: int
    name: str
    params: dict[str, Any]
    path: NotRequired[str]
    """The version folder the asking view shows, when the widget may have moved on since (a view of
    the version left asks it, not the new one); none: the folder open now."""


class WidgetOpenVersion(TypedDict):
    """Browser -> kernel: browse another version of the tree (by its folder); answered with OpenVersionData."""

    type: Literal["open_version"]
    id: int
    folder: str


class WidgetOpenAdata(TypedDict):
    """Browser -> kernel: bind a version's table to the notebook variable; answered with OpenAdataData."""

    type: Literal["open_adata"]
    id: int
    version: NotRequired[int | str]


class WidgetAskApp(TypedDict):
    """Browser -> kernel: send the app's module (once a page); answered by WidgetApp."""

    type: Literal["app"]
    id: str


class WidgetApp(TypedDict):
    """Kernel -> browser: the app's module as the one buffer, named by its hash."""

    type: Literal["app"]
    id: str
    hash: str


class WidgetResponse(TypedDict):
    """Kernel -> browser: the answer to a request, open_version or open_adata (buffers beside it)."""

    type: Literal["response"]
    id: int
    ok: bool
    data: NotRequired[Any]
    error: NotRequired[ErrorInfo]


#: The browser's messages answered by a WidgetResponse (the widget dispatches on their ``type``).
WidgetAnswered = WidgetRequest | WidgetOpenVersion | WidgetOpenAdata
#: Every message the browser sends the widget.
WidgetAsk = WidgetAnswered | WidgetAskApp


def message_kind(message: type) -> str:
    """The ``type`` a widget message's TypedDict declares (its one Literal): what the widget matches on,
    so the kinds are written once, here, and generated for the browser (``make types``)."""
    (kind,) = get_args(get_type_hints(message)["type"])
    return str(kind)


class OpenVersionData(TypedDict):
    path: str


class OpenAdataData(TypedDict):
    message: str


#: Payloads that carry fields beyond the named ones (stored data the service passes on as written).
OPEN_PAYLOADS: tuple[type, ...] = (Change, ResultMeta)
