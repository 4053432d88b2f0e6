"""Result metadata and chart figures as the demos save them (both demos write the same shapes)."""

from __future__ import annotations

from typing import Any

__all__ = ["TABLE", "chart_spec", "result_meta"]

#: The table both demos annotate.
TABLE = "table"


def result_meta(
    kind: str, title: str, method: str, parameters: dict[str, Any], summary: dict[str, Any]
) -> dict[str, Any]:
    """A result's metadata, with fixed author and time so every build is byte-identical."""
    return {
        "kind": kind,
        "title": title,
        "method": method,
        "parameters": parameters,
        "summary": summary,
        "created_by": "ana@example.org",
        "created_at": "2026-10-20T06:41:12.008Z",
        "app_version": "1.3.0",
    }


def chart_spec(
    title: str, result: str, mark: str, x: str, y: str, color: str, *, print_width: int = 183
) -> dict[str, Any]:
    """A chart figure drawn from ``result`` (print width in millimetres: 89 one column, 183 two)."""
    return {
        "kind": "chart",
        "title": title,
        "caption": f"Drawn from the result {result}.",
        "print_width": print_width,
        "result": result,
        "table": TABLE,
        "mark": mark,
        "x": x,
        "y": y,
        "color": color,
    }
