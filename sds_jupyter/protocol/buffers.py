"""Binary buffer layouts: which typed buffers follow a payload, in which order, of what length.

A reply that carries buffers (a canvas drawing, the cells, an outline tile, image planes...)
sends them in an order both sides must agree on. The order, each buffer's element type, when
it is there and how long it is are declared once as a :data:`Layout` (the drawing's here, the
requests' in :mod:`sds_jupyter.protocol.layouts`); ``make types`` writes them out for the browser
(``js/src/app/shared/layouts.gen.ts``), whose one splitter reads every reply by them, and the
producers here pass their buffers through :func:`laid_out`, so a buffer out of place fails where
it is made instead of drawing garbage.

A rule reads the payload by dotted paths (``"color.mode"``, ``"shapes.kind"``): a
:class:`When` decides whether a buffer is present, a :class:`Count` its length in elements
(a product of payload numbers and constants, plus an offset), and ``repeat`` sends one buffer
per entry of a payload count (an image's channels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "CELL_BUFFERS",
    "DRAWING",
    "SHAPE_BUFFERS",
    "BufferRule",
    "Count",
    "DType",
    "Layout",
    "LayoutError",
    "OneOf",
    "When",
    "color_values",
    "field_value",
    "laid_out",
    "named_buffers",
]

#: The element types a buffer may hold (little-endian; ``uint8`` also for raw bytes).
DType = Literal["float32", "uint8", "uint16", "uint32"]


class LayoutError(ValueError):
    """Buffers that do not match their declared layout: a bug on the side that made them."""


@dataclass(frozen=True)
class When:
    """A test of one payload field: present (not null), equal to ``value``, or not equal to it."""

    path: str
    op: Literal["present", "==", "!="] = "present"
    value: str | bool | None = None

    def holds(self, payload: Mapping[str, Any]) -> bool:
        found = field_value(payload, self.path)
        if self.op == "present":
            return found is not None
        return bool(found == self.value) == (self.op == "==")


@dataclass(frozen=True)
class OneOf:
    """An element type chosen by the payload: the first case whose test holds, else ``otherwise``."""

    cases: tuple[tuple[When, DType], ...]
    otherwise: DType

    def pick(self, payload: Mapping[str, Any]) -> DType:
        return next((dtype for when, dtype in self.cases if when.holds(payload)), self.otherwise)


@dataclass(frozen=True)
class Count:
    """A number of elements: the product of ``factors`` (payload paths or constants) plus ``plus``.

    A path naming a list counts its entries. None when a path is absent from the payload (an
    older payload without the field): the length is then not checked.
    """

    factors: tuple[str | int, ...]
    plus: int = 0

    def of(self, payload: Mapping[str, Any]) -> int | None:
        total = 1
        for factor in self.factors:
            value = factor if isinstance(factor, int) else field_value(payload, factor)
            if value is None:
                return None
            total *= len(value) if isinstance(value, list) else int(value)
        return total + self.plus


@dataclass(frozen=True)
class BufferRule:
    """One buffer of a layout: its name, element type, when it is sent and its length in elements.

    ``repeat``: a payload count (or list); that many buffers of this kind follow, one each.
    """

    name: str
    dtype: DType | OneOf
    when: When | None = None
    length: Count | None = None
    repeat: str | None = None

    def dtype_for(self, payload: Mapping[str, Any]) -> DType:
        return self.dtype.pick(payload) if isinstance(self.dtype, OneOf) else self.dtype

    def copies(self, payload: Mapping[str, Any]) -> int:
        """How many buffers of this kind the payload has: 0 when absent, the repeat count, else 1."""
        if self.when is not None and not self.when.holds(payload):
            return 0
        if self.repeat is None:
            return 1
        return Count((self.repeat,)).of(payload) or 0


#: A reply's buffers in protocol order.
Layout = tuple[BufferRule, ...]


def field_value(payload: Mapping[str, Any], path: str) -> Any:
    """The payload's value at dotted ``path``; None when any step is missing or null."""
    found: Any = payload
    for step in path.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(step)
    return found


def color_values(color: str) -> BufferRule:
    """The per-cell colour buffer of a colour description at ``color`` (a path, "" for the payload itself).

    Category codes are uint8 when ``codes`` says so, else uint16 (older payloads have no
    ``codes``); values of a continuous colouring are float32. Absent when nothing colours the cells.
    """
    at = f"{color}." if color else ""
    dtype = OneOf(
        ((When(f"{at}codes", "==", "uint8"), "uint8"), (When(f"{at}mode", "==", "categorical"), "uint16")), "float32"
    )
    return BufferRule("values", dtype, When(f"{at}mode", "!=", "none"), Count(("n_cells",)) if color else None)


#: The cells' positions and shapes (in a drawing and in the ``cells`` reply): x, y, then
#: polygons (``starts``: cell i's vertices are starts[i] to starts[i + 1]; ``vertices``: x, y
#: pairs) or circles (one radius a cell, NaN: no shape).
CELL_BUFFERS: Layout = (
    BufferRule("x", "float32", length=Count(("n_cells",))),
    BufferRule("y", "float32", length=Count(("n_cells",))),
)
SHAPE_BUFFERS: Layout = (
    BufferRule("starts", "uint32", When("shapes.kind", "==", "polygons"), Count(("n_cells",), plus=1)),
    BufferRule("vertices", "float32", When("shapes.kind", "==", "polygons"), Count(("shapes.n_vertices", 2))),
    BufferRule("radius", "float32", When("shapes.kind", "==", "circles"), Count(("n_cells",))),
)

#: A whole canvas drawing (:class:`~sds_jupyter.studio.canvas.CanvasData`, what exports draw):
#: x, y, the colour values, the RGBA image, then the shapes.
DRAWING: Layout = (
    *CELL_BUFFERS,
    color_values("color"),
    BufferRule("image", "uint8", When("image"), Count(("image.width", "image.height", 4))),
    *SHAPE_BUFFERS,
)


def _expanded(layout: Layout, payload: Mapping[str, Any]) -> list[tuple[str, DType, int | None]]:
    """(name, dtype, length) of each buffer the payload has, in order; repeats named ``name[i]``."""
    found = []
    for buf in layout:
        copies = buf.copies(payload)
        length = buf.length.of(payload) if buf.length is not None else None
        for index in range(copies):
            name = f"{buf.name}[{index}]" if buf.repeat is not None else buf.name
            found.append((name, buf.dtype_for(payload), length))
    return found


def _checked(what: str, name: str, dtype: DType, length: int | None, buffer: Any) -> None:
    """Refuse ``buffer`` unless it holds ``dtype`` elements (an array's own type, bytes by size) and ``length`` of them."""
    wanted = np.dtype(dtype)
    if isinstance(buffer, np.ndarray):
        if buffer.dtype.kind != wanted.kind or buffer.dtype.itemsize != wanted.itemsize:
            raise LayoutError(f"{what}: buffer {name!r} holds {buffer.dtype}, the layout says {dtype}")
        size = buffer.size
    else:
        nbytes = memoryview(buffer).nbytes
        if nbytes % wanted.itemsize:
            raise LayoutError(f"{what}: buffer {name!r} has {nbytes} bytes, not a whole number of {dtype}")
        size = nbytes // wanted.itemsize
    if length is not None and size != length:
        raise LayoutError(f"{what}: buffer {name!r} has {size} {dtype} values, the layout says {length}")


def laid_out(what: str, layout: Layout, payload: Mapping[str, Any], buffers: Sequence[Any]) -> list[Any]:
    """``buffers`` unchanged once checked against ``layout``: count, element types and lengths.

    Why every producer passes through it: the browser splits the buffers by the same layout,
    so a buffer missing, extra or of another type is a bug here, refused where it is made.
    """
    expected = _expanded(layout, payload)
    if len(buffers) != len(expected):
        names = ", ".join(name for name, _, _ in expected) or "none"
        raise LayoutError(f"{what}: {len(buffers)} buffers, the layout says {len(expected)} ({names})")
    for (name, dtype, length), buffer in zip(expected, buffers, strict=True):
        _checked(what, name, dtype, length, buffer)
    return list(buffers)


def named_buffers(what: str, layout: Layout, payload: Mapping[str, Any], buffers: Sequence[Any]) -> dict[str, Any]:
    """The buffers by their layout names (checked as :func:`laid_out` checks them)."""
    expected = _expanded(layout, payload)
    laid_out(what, layout, payload, buffers)
    return {name: buffer for (name, _, _), buffer in zip(expected, buffers, strict=True)}
