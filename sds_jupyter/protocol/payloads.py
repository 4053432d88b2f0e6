"""What the canvas builder hands the front end, typed once.

The protocol's payload types (:mod:`sds_jupyter.protocol.types`) include these; the studio's
builders fill them, and both sit above this package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypedDict

__all__ = [
    "Bounds",
    "CanvasColor",
    "CanvasImage",
    "CanvasLabels",
    "CanvasPayload",
    "CanvasPoints",
    "CanvasShapeLayer",
    "CanvasShapes",
    "CategoricalColor",
    "ChannelInfo",
    "ContinuousColor",
    "ImageChannel",
    "ImageLevel",
    "Items",
    "NoColor",
    "OutlineTiles",
    "Pair",
    "Viewport",
]


@dataclass(frozen=True)
class Items:
    """Marks a list of a fixed length, so the TypeScript made from these types is a tuple."""

    count: int


#: [xmin, ymin, xmax, ymax] in the figure's coordinates.
Bounds = Annotated[list[float], Items(4)]

#: Two numbers: a point (x, y) or a range (low, high).
Pair = Annotated[list[float], Items(2)]


class Viewport(TypedDict):
    target: Pair
    zoom: float
    rotation: float


class ImageChannel(TypedDict):
    """A channel blended into the canvas image: its name and the color it was drawn in."""

    name: str
    color: str


class ImageLevel(TypedDict):
    """One level of an image pyramid as the tile grid sees it (level 0 the finest)."""

    width: int
    height: int
    #: The side of its tiles in pixels (the level's chunking where sensible); tile (x, y) holds
    #: pixels [x * tile, (x + 1) * tile) clipped to the level.
    tile: int
    #: Where the whole level sits, in the figure's coordinate system: x0, y0, x1, y1.
    bounds: Bounds


class CanvasImage(TypedDict):
    """The image under the cells: the overview's size and place, the channels drawn, its pyramid."""

    width: int
    height: int
    bounds: Bounds
    channels: list[ImageChannel]
    #: The image's pyramid (as the ``channels`` reply's ``levels``), so the browser can ask the
    #: overview at the level its view needs (``channels`` with ``level``) before anything else.
    levels: NotRequired[list[ImageLevel]]
    #: The pyramid level whose pixels ``width`` x ``height`` are (None: read with a stride, no
    #: level fitting OVERVIEW_SIDE); the browser sets the one it asked ``channels`` for.
    level: NotRequired[int | None]


class CategoricalColor(TypedDict):
    """Cells colored by category: one code per cell indexes ``categories`` and ``colors``.

    The codes are uint8 while there are at most 256 categories (a byte a cell is what a colour
    column costs on the wire), else uint16; ``codes`` says which (absent: uint16, as before).
    """

    mode: Literal["categorical"]
    column: str
    categories: list[str]
    colors: list[str]
    codes: NotRequired[Literal["uint8", "uint16"]]


class ContinuousColor(TypedDict):
    """Cells colored by value: one float32 per cell, mapped from ``min``..``max`` onto ``lut``."""

    mode: Literal["continuous"]
    column: str
    colormap: str
    min: float
    max: float
    lut: list[str]


class NoColor(TypedDict):
    mode: Literal["none"]


#: How the cells are colored; ``mode`` tells which (the front end narrows on it).
CanvasColor = CategoricalColor | ContinuousColor | NoColor


class OutlineTiles(TypedDict):
    """Where a large tissue's outlines come from: the ``cell_outlines`` request, one tile at a time.

    Tile (column, row) of the fixed grid covers x from ``x0 + column * size`` to one ``size``
    further, and y likewise from ``y0 + row * size``.
    """

    x0: float
    y0: float
    size: float
    columns: int
    rows: int
    #: Outline vertices of the whole tissue (what sending them at once would have cost).
    n_vertices: int


class CanvasShapes(TypedDict):
    """What the cells are drawn as, when not points: their polygons, or circles of their radius.

    Buffers after the image: polygons send ``starts`` (uint32, n_cells + 1: cell i's
    vertices are ``starts[i]`` to ``starts[i + 1]``) and ``vertices`` (float32 x, y
    pairs); circles send one float32 radius per cell, in data units (NaN: no shape).
    """

    kind: Literal["polygons", "circles"]
    element: str
    n_vertices: NotRequired[int]
    #: Set on a large tissue's polygons sent as circles (one radius a cell, from its polygon's
    #: area): the polygons then come by tile, when the view is close enough to see them.
    outlines: NotRequired[OutlineTiles]


class CanvasPoints(TypedDict):
    """A canvas figure's transcripts layer, as its spec saves it: which points element, genes and size."""

    element: str
    #: The genes shown (empty: every gene).
    genes: list[str]
    #: A point's radius on screen, CSS px.
    radius: float


class CanvasLabels(TypedDict):
    """A canvas figure's labels layer, as its spec saves it: which labels element and how it is drawn."""

    element: str
    #: "fill" (a translucent fill and an opaque outline) or "outline" alone.
    style: Literal["fill", "outline"]
    #: Whether the view shows it on opening (and exports draw it).
    visible: bool
    #: The layer's opacity, 0 to 1.
    opacity: float


class CanvasShapeLayer(TypedDict):
    """One shapes element a canvas figure outlines over its cells, as its spec saves it (``shapes``)."""

    element: str
    #: The outline's colour (the element's default when the spec names none).
    color: str
    #: Whether the view shows it on opening (and exports draw it).
    visible: bool
    #: The layer's opacity, 0 to 1.
    opacity: float


class CanvasPayload(TypedDict):
    n_cells: int
    bounds: Bounds
    viewport: Viewport
    color: CanvasColor
    point_size: float
    image: CanvasImage | None
    #: The coordinate system's unit (e.g. "micrometer") when it names a physical one: the scale bar's.
    unit: NotRequired[str | None]
    #: The table's obs columns (what the view can color by).
    obs_columns: NotRequired[list[str]]
    #: the obs columns offered as colourings: not one holding a single value, not an ID (a value per cell)
    color_columns: NotRequired[list[str]]
    shapes: NotRequired[CanvasShapes | None]
    #: Set in the browser's replies: the cells' positions and shapes are not among the buffers
    #: but come once per element from the ``cells`` request under this key (content-addressed).
    cells_key: NotRequired[str]
    #: Set with an image in the browser's replies: the image is not among the buffers (its pixels
    #: come from ``channels`` and ``image_tile``); the ``channels`` reply of this key is the overview.
    image_key: NotRequired[str]
    #: Set in the browser's replies: per obs column, the name of its ``color_values``
    #: (the stored objects and settings they follow from); the request with it as ``key`` may be kept.
    color_keys: NotRequired[dict[str, str]]
    #: The transcripts layer the figure was saved with (the view shows it on opening), or None.
    points: NotRequired[CanvasPoints | None]
    #: The labels layer the figure was saved with (the view shows it on opening when visible), or None.
    labels: NotRequired[CanvasLabels | None]
    #: The shapes elements the figure was saved outlining (its spec's ``shapes``), in the spec's order.
    shape_layers: NotRequired[list[CanvasShapeLayer]]
    #: Set when the cells' shapes element is past MAX_SHAPES: what the view says (the cells drawn as points).
    shapes_note: NotRequired[str | None]
    #: Set with ``shapes_note`` when the cells' element can be outlined by tile: its name (the view
    #: offers it as a shapes layer, shown unless the figure saved it hidden).
    shapes_by_tile: NotRequired[str | None]
    #: The figure's coordinate system ("" for the default, ``global``): the view's transcripts, labels
    #: and shapes layers ask for their elements in it, as exports draw them.
    coordinate_system: NotRequired[str]


class ChannelInfo(TypedDict):
    """An image channel as the ``channels`` request describes it (raw values in contrast_limits and range)."""

    name: str
    color: str
    visible: bool
    contrast_limits: Pair
    range: Pair
