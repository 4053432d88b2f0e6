"""Errors about what the app keeps in uns.

They extend the package's tree (see :mod:`sds_jupyter.errors`) so a transport
maps them with the same ``kind``/message rule as any other refusal::

    StackError
    ├── FigureError     kind "figure"   a figure spec cannot be drawn
    ├── ResultError     kind "result"   a result entry is missing or unreadable
    ├── ElementError    kind "element"  a spatial element a figure names is missing or unreadable
    └── NoStudioDataError  kind "no-studio-data"  the table keeps no spatial_data_studio section
"""

from __future__ import annotations

from sds_jupyter.errors import StackError

__all__ = ["ElementError", "FigureError", "NoStudioDataError", "ResultError"]


class FigureError(StackError):
    kind = "figure"


class ResultError(StackError):
    kind = "result"


class ElementError(StackError):
    kind = "element"


class NoStudioDataError(StackError):
    """The table was never saved by the app, so it has no figures or results to show."""

    kind = "no-studio-data"
