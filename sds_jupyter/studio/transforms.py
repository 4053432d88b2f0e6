"""Element coordinate transformations, as far as a 2-D canvas needs them.

SpatialData keeps, per element, transformations from the element's own
(intrinsic) coordinates to named coordinate systems. A canvas draws images,
labels and shapes together, so each is brought into one coordinate system
(``global`` when the element has it, else its first). Identity, scale,
translation, sequences of these and axis-aligned affines are supported:
what the app and spatialdata's readers write for ordinary data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sds_jupyter.errors import ElementError

__all__ = ["IDENTITY", "Axial", "element_transform", "system_unit"]

DEFAULT_SYSTEM = "global"


@dataclass(frozen=True)
class Axial:
    """An axis-aligned map: ``x' = sx * x + tx`` and ``y' = sy * y + ty``."""

    sx: float = 1.0
    sy: float = 1.0
    tx: float = 0.0
    ty: float = 0.0

    def then(self, other: Axial) -> Axial:
        """This map followed by ``other``."""
        return Axial(
            other.sx * self.sx, other.sy * self.sy, other.sx * self.tx + other.tx, other.sy * self.ty + other.ty
        )

    def apply(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x * self.sx + self.tx, y * self.sy + self.ty

    def box(self, xmin: float, ymin: float, xmax: float, ymax: float) -> list[float]:
        """The image of an axis-aligned box, as [xmin, ymin, xmax, ymax]."""
        xs = sorted((xmin * self.sx + self.tx, xmax * self.sx + self.tx))
        ys = sorted((ymin * self.sy + self.ty, ymax * self.sy + self.ty))
        return [xs[0], ys[0], xs[1], ys[1]]


IDENTITY = Axial()


def _axis_names(transform: Mapping[str, Any], fallback: Sequence[str]) -> list[str]:
    axes = (transform.get("input") or {}).get("axes") if isinstance(transform.get("input"), Mapping) else None
    if not axes:
        return list(fallback)
    return [str(a.get("name") if isinstance(a, Mapping) else a) for a in axes]


def _parse(transform: Mapping[str, Any], fallback_axes: Sequence[str]) -> Axial:
    kind = transform.get("type")
    axes = _axis_names(transform, fallback_axes)
    if kind == "identity":
        return IDENTITY
    if kind == "scale":
        values = dict(zip(axes, transform.get("scale", []), strict=False))
        return Axial(sx=float(values.get("x", 1.0)), sy=float(values.get("y", 1.0)))
    if kind == "translation":
        values = dict(zip(axes, transform.get("translation", []), strict=False))
        return Axial(tx=float(values.get("x", 0.0)), ty=float(values.get("y", 0.0)))
    if kind == "sequence":
        result = IDENTITY
        for step in transform.get("transformations", []):
            result = result.then(_parse(step, axes))
        return result
    if kind == "affine":
        return _affine(transform, axes)
    raise ElementError(f"Transformations of type {kind!r} are not drawn on a canvas.")


def _affine(transform: Mapping[str, Any], axes: Sequence[str]) -> Axial:
    matrix = np.asarray(transform.get("affine"), dtype=float)
    output = transform.get("output") or {}
    out_axes = [str(a.get("name") if isinstance(a, Mapping) else a) for a in output.get("axes", [])] or list(axes)
    if matrix.ndim != 2 or "x" not in axes or "y" not in axes or "x" not in out_axes or "y" not in out_axes:
        raise ElementError("An affine transformation without x and y axes cannot be drawn.")
    row_x, row_y = matrix[out_axes.index("x")], matrix[out_axes.index("y")]
    col_x, col_y = axes.index("x"), axes.index("y")
    if abs(row_x[col_y]) > 1e-12 or abs(row_y[col_x]) > 1e-12:
        raise ElementError("Rotated or sheared elements are not drawn on a canvas yet.")
    return Axial(sx=row_x[col_x], sy=row_y[col_y], tx=row_x[-1], ty=row_y[-1])


def element_transform(transforms: Sequence[Mapping[str, Any]] | None, system: str | None = None) -> Axial:
    """The map into ``system`` (default: ``global``, else the first) of an element's transformations."""
    if not transforms:
        return IDENTITY
    named = {
        (t.get("output") or {}).get("name") if isinstance(t.get("output"), Mapping) else None: t for t in transforms
    }
    chosen = named.get(system or DEFAULT_SYSTEM) or transforms[0]
    return _parse(chosen, ())


def system_unit(transforms: Sequence[Mapping[str, Any]] | None, system: str | None = None) -> str | None:
    """The unit of the x axis of coordinate system ``system`` (default ``global``), when the element's transformation names one.

    Why: the canvas view draws a scale bar only where the coordinates are physical.
    """
    for transform in transforms or ():
        output = transform.get("output")
        if not isinstance(output, Mapping) or output.get("name") != (system or DEFAULT_SYSTEM):
            continue
        for axis in output.get("axes") or ():
            if isinstance(axis, Mapping) and axis.get("name") == "x" and isinstance(axis.get("unit"), str):
                unit = axis["unit"].strip()
                return unit if unit and unit.lower() != "unit" else None
    return None
