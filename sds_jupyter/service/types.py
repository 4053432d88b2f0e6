"""The JSON payloads of the browser protocol (docs/service-protocol.md), typed once.

``js/src/app/types.ts`` mirrors these; a change here is a change there.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "BaseSummary",
    "CanvasImage",
    "CanvasPayload",
    "CellMaskPayload",
    "ChangesData",
    "Column",
    "Comparison",
    "Delta",
    "ErrorInfo",
    "ExpressionPayload",
    "FigureSummary",
    "FiguresData",
    "HistoryData",
    "KeySize",
    "ObsChange",
    "ObsDelta",
    "ResultCsv",
    "ResultPage",
    "ResultSummary",
    "ResultsData",
    "ResultTableSummary",
    "VersionSummary",
    "Viewport",
    "Whiteout",
]


class ErrorInfo(TypedDict):
    kind: str
    message: str


class VersionSummary(TypedDict):
    depth: int
    dataset_id: str
    title: str | None
    message: str | None
    created_at: str | None
    created_by: str | None
    app: dict[str, Any] | None
    changes: list[dict[str, Any]]
    n_files: int
    n_deleted: int
    folder: str


class BaseSummary(TypedDict):
    depth: Literal[0]
    dataset_id: str | None
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
    ops: list[dict[str, Any]]
    added: list[KeySize]
    replaced: list[KeySize]
    deleted: list[Whiteout]


class Viewport(TypedDict):
    target: list[float]
    zoom: float
    rotation: float


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


class CanvasImage(TypedDict):
    width: int
    height: int
    bounds: list[float]
    channels: list[dict[str, str]]


class CanvasPayload(TypedDict):
    n_cells: int
    bounds: list[float]
    viewport: Viewport
    color: dict[str, Any]
    point_size: float
    image: CanvasImage | None


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


class ResultSummary(TypedDict):
    id: str
    kind: str | None
    title: str | None
    meta: dict[str, Any] | None
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


class ObsChange(TypedDict):
    column: str
    counts_a: NotRequired[dict[str, int]]
    counts_b: NotRequired[dict[str, int]]


class ObsDelta(TypedDict):
    added: list[str]
    removed: list[str]
    changed: list[ObsChange]


class Comparison(TypedDict):
    a: int
    b: int
    obs: ObsDelta
    obsm: Delta
    uns: Delta
    figures: Delta
    results: Delta


class ExpressionPayload(TypedDict):
    """The JSON part of an ``expression`` reply; the values are its one float32 buffer."""

    gene: str
    layer: str | None
    n_cells: int
    min: float | None
    max: float | None
    dtype: Literal["float32"]


class CellMaskPayload(TypedDict):
    """The JSON part of a ``cell_mask`` reply; the mask is its one uint8 buffer."""

    column: str
    value: str
    n_cells: int
    n_selected: int
    dtype: Literal["uint8"]
