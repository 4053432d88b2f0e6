"""Figure specs kept as JSON strings in ``uns["spatial_data_studio"]["figures"]``.

A figure is a description, not a picture: it has to be parsed and checked
before anything draws it. Parsing never raises for bad input, because a broken
figure must show in place with a one-line reason instead of hiding the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal, cast

from sds_jupyter.errors import needs_extra

try:
    import jsonschema
except ImportError:
    needs_extra("export", "drawing figures (the browser and export)")
    raise

from sds_jupyter.errors import FigureError
from sds_jupyter.jsontext import JSONRefused, loads_spec
from sds_jupyter.studio.uns import FIGURES_KEY, as_text, studio_part

__all__ = [
    "FigureKind",
    "ParsedFigure",
    "declared_fields",
    "figure_schema",
    "parse_figure",
    "read_figure",
    "read_figures",
]

FigureKind = Literal["chart", "canvas", "unsupported"]
MAX_REASON = 240
#: Of a figure that is not JSON, the text shown in its place, at most.
MAX_SHOWN_TEXT = 4096


@cache
def figure_schema() -> dict[str, Any]:
    """The JSON Schema shipped beside this module (figure.schema.json)."""
    text = resources.files("sds_jupyter.studio").joinpath("figure.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = figure_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


@dataclass(frozen=True)
class ParsedFigure:
    """One stored figure: its parsed spec and whether (and how) it can be drawn."""

    id: str
    kind: FigureKind
    spec: Any
    reason: str | None = None

    def _field(self, name: str) -> Any:
        return self.spec.get(name) if isinstance(self.spec, dict) else None

    @property
    def title(self) -> str | None:
        value = self._field("title")
        return value if isinstance(value, str) else None

    @property
    def caption(self) -> str | None:
        value = self._field("caption")
        return value if isinstance(value, str) else None

    @property
    def print_width(self) -> float | int | str | None:
        value = self._field("print_width")
        return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None

    def require(self, kind: Literal["chart", "canvas"]) -> dict[str, Any]:
        """The spec, if this figure is drawable as ``kind``; FigureError otherwise."""
        if self.kind == "unsupported":
            raise FigureError(f"Figure {self.id!r} cannot be drawn: {self.reason}")
        if self.kind != kind:
            raise FigureError(f"Figure {self.id!r} is a {self.kind} figure, not a {kind} figure.")
        return cast(dict[str, Any], self.spec)  # parse_figure gives a chart or canvas kind to a dict only


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 1] + "…"


def _schema_problem(spec: Any) -> str | None:
    """The most relevant schema violation of ``spec`` as one line, or None if valid."""
    error = jsonschema.exceptions.best_match(_validator().iter_errors(spec))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    return _one_line(f"{where}: {error.message}" if where else error.message)


def parse_figure(figure_id: str, raw: Any) -> ParsedFigure:
    """Parse one stored figure; bad input becomes ``kind="unsupported"`` with a reason."""
    text = as_text(raw)
    if text is None:
        if not isinstance(raw, Mapping):
            return ParsedFigure(figure_id, "unsupported", None, f"not a JSON string but {type(raw).__name__}")
        try:
            text = json.dumps(dict(raw), default=str)
        except (ValueError, RecursionError):
            return ParsedFigure(figure_id, "unsupported", None, "a mapping that cannot be written as JSON")
    try:
        spec = loads_spec(text)
    except JSONRefused as exc:
        shown = text if len(text) <= MAX_SHOWN_TEXT else text[:MAX_SHOWN_TEXT] + "…"
        return ParsedFigure(figure_id, "unsupported", shown, _one_line(f"not JSON this app reads: {exc}"))
    if not isinstance(spec, dict):
        return ParsedFigure(figure_id, "unsupported", spec, f"not a JSON object but a {type(spec).__name__}")
    if spec.get("kind") not in ("chart", "canvas"):
        return ParsedFigure(figure_id, "unsupported", spec, _one_line(f"unknown figure kind {spec.get('kind')!r}"))
    problem = _schema_problem(spec)
    if problem is not None:
        return ParsedFigure(figure_id, "unsupported", spec, problem)
    return ParsedFigure(figure_id, spec["kind"], spec)


def declared_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A drawable spec cut down to the fields figure.schema.json declares, at every level.

    The schema accepts unknown fields so a newer app's figures still open, but
    what is passed on to a browser is only what this reader knows: a field some
    other tool put in a dataset (``usermeta``, a ``data`` URL, an expression)
    never reaches the front end.
    """
    schema = figure_schema()
    kind_schema = schema["$defs"].get(str(spec.get("kind")), {})
    top = {"properties": {**schema["properties"], **kind_schema.get("properties", {})}}
    return cast(dict[str, Any], _declared(spec, top, schema))


def _declared(value: Any, node: Mapping[str, Any], schema: Mapping[str, Any]) -> Any:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = schema["$defs"][ref.removeprefix("#/$defs/")]
    if isinstance(value, Mapping):
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        if isinstance(properties, Mapping):
            return {k: _declared(v, properties[k], schema) for k, v in value.items() if k in properties}
        if isinstance(extra, Mapping):
            return {k: _declared(v, extra, schema) for k, v in value.items()}
        return {}
    if isinstance(value, list):
        items = node.get("items")
        return [_declared(v, items, schema) for v in value] if isinstance(items, Mapping) else []
    return value


def read_figures(uns: Mapping[str, Any]) -> list[ParsedFigure]:
    """Every figure in ``uns``, in stored order (none when the table has no studio section)."""
    return [parse_figure(str(key), value) for key, value in studio_part(uns, FIGURES_KEY).items()]


def read_figure(uns: Mapping[str, Any], figure_id: str) -> ParsedFigure:
    """One figure by id; FigureError when there is no such figure."""
    figures = studio_part(uns, FIGURES_KEY)
    if figure_id not in figures:
        raise FigureError(f"No figure {figure_id!r} in this version.")
    return parse_figure(figure_id, figures[figure_id])
