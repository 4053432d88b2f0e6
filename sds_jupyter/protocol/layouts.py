"""The buffer layout of every request that answers buffers: the one place their order is written.

Beside the payload types (:mod:`.types`): a binary reply is its payload and the buffers laid
out here (:mod:`sds_jupyter.protocol.buffers` says how a layout reads). ``make types`` writes them
into ``js/src/app/shared/layouts.gen.ts`` for the browser's splitter, each request's function
builds its buffers through :func:`reply_buffers`, and tests/project/test_contract.py checks that every
request of ``BINARY_REQUESTS`` has a layout and that real replies match it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sds_jupyter.protocol.buffers import (
    DRAWING,
    SHAPE_BUFFERS,
    BufferRule,
    Count,
    Layout,
    OneOf,
    When,
    color_values,
    laid_out,
)
from sds_jupyter.protocol.reply import as_buffer

__all__ = ["DRAWING", "LAYOUTS", "reply_buffers"]

#: One uint8 plane per image channel (``width`` x ``height``), ``range`` mapped onto 0-255.
_PLANES = BufferRule("planes", "uint8", length=Count(("width", "height")), repeat="channels")

#: x, y and radii as uint16 codes when the ``cells`` payload has a ``quantum`` (a large tissue), else float32.
_CODED = OneOf(((When("quantum"), "uint16"),), "float32")
_CELLS: Layout = (
    BufferRule("x", _CODED, length=Count(("n_cells",))),
    BufferRule("y", _CODED, length=Count(("n_cells",))),
    *(rule for rule in SHAPE_BUFFERS if rule.name != "radius"),
    BufferRule("radius", _CODED, When("shapes.kind", "==", "circles"), Count(("n_cells",))),
)

#: Request name -> the buffers its reply sends, in order.
LAYOUTS: dict[str, Layout] = {
    # nothing: the cells come by ``cells``, the image by ``channels``, the colours by ``color_values``
    "canvas": (),
    "cells": _CELLS,
    "cell_outlines": (
        BufferRule("index", "uint32", length=Count(("n_cells",))),
        BufferRule("starts", "uint32", length=Count(("n_cells",), plus=1)),
        BufferRule("vertices", "float32", length=Count(("n_vertices", 2))),
    ),
    "embedding": (
        BufferRule("x", "float32", When("key"), Count(("n_cells",))),
        BufferRule("y", "float32", When("key"), Count(("n_cells",))),
    ),
    "color_values": (color_values(""),),
    "channels": (_PLANES,),
    "store_key": (BufferRule("bytes", "uint8", When("found", "==", True), Count(("size",))),),
    "image_region": (_PLANES,),
    "image_tile": (_PLANES,),
    "export": (BufferRule("file", "uint8", length=Count(("size",))),),
    "shapes_tile": (
        BufferRule("index", "uint32", length=Count(("n_shapes",))),
        BufferRule("starts", "uint32", length=Count(("n_shapes",), plus=1)),
        BufferRule("vertices", "float32", length=Count(("n_vertices", 2))),
    ),
    "labels_tile": (BufferRule("rgba", "uint8", length=Count(("width", "height", 4))),),
    "points_tile": (
        BufferRule("x", "uint16", length=Count(("n",))),
        BufferRule("y", "uint16", length=Count(("n",))),
        BufferRule("gene", "uint16", length=Count(("n",))),
    ),
}


def reply_buffers(request: str, payload: Mapping[str, Any], buffers: Sequence[np.ndarray | bytes]) -> list[memoryview]:
    """A request's buffers, checked against its layout, as the bytes a :class:`Reply` sends.

    Why through the layout: the browser splits them by the same declaration, so a buffer out
    of place is refused here, by name, instead of drawing the wrong cells there.
    """
    laid_out(f"the {request} reply", LAYOUTS[request], payload, buffers)
    return [as_buffer(b) if isinstance(b, np.ndarray) else memoryview(b) for b in buffers]
