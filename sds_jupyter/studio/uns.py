"""Where the app's section lives in a table's uns, read defensively.

Saved stores come from other people's sessions, so every accessor tolerates a
missing section, a missing sub-dict or a non-dict where a dict belongs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STUDIO_KEY = "spatial_data_studio"
FIGURES_KEY = "figures"
RESULTS_KEY = "results"

__all__ = [
    "FIGURES_KEY",
    "RESULTS_KEY",
    "STUDIO_KEY",
    "as_text",
    "studio_part",
    "studio_section",
]


def studio_section(uns: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``spatial_data_studio`` dict of ``uns``, or None when the table has none."""
    section = uns.get(STUDIO_KEY) if isinstance(uns, Mapping) else None
    return section if isinstance(section, Mapping) else None


def studio_part(uns: Mapping[str, Any], part: str) -> Mapping[str, Any]:
    """``uns[spatial_data_studio][part]`` (figures or results), empty when absent."""
    section = studio_section(uns)
    value = section.get(part) if section is not None else None
    return value if isinstance(value, Mapping) else {}


def as_text(value: Any) -> str | None:
    """A stored string (Python str, numpy str or 0-d array) as str; None otherwise."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 1) == 0:
        inner = item()
        return inner if isinstance(inner, str) else None
    return None
