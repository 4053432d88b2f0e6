"""The protocol's payloads as JSON Schema, made from the TypedDicts in :mod:`.types`.

The Python types are the single source: :func:`payload_schema` turns them (and
the reply type of every request in :data:`~sds_jupyter.service.requests.REQUESTS`)
into one JSON Schema, and :func:`typescript` into the TypeScript the browser app
compiles against. ``make types`` writes both (``docs/payloads.schema.json`` and
``js/src/app/payloads.gen.ts``); a test checks the files are current and that
real replies of every request validate against the schema.
"""

from __future__ import annotations

import json
import types as pytypes
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin, is_typeddict

from sds_jupyter.service import types as payloads
from sds_jupyter.service.requests import REQUESTS
from sds_jupyter.service.service import Reply

__all__ = ["GENERATED", "REPLY_PAYLOADS", "generated_files", "payload_schema", "reply_type", "typescript"]

#: Where ``make types`` writes, relative to the repository.
GENERATED = {"schema": Path("docs/payloads.schema.json"), "typescript": Path("js/src/app/payloads.gen.ts")}

#: Requests answering a :class:`Reply` (a payload with buffers): the payload's type.
REPLY_PAYLOADS: dict[str, type] = {
    "canvas": payloads.CanvasPayload,
    "expression": payloads.ExpressionPayload,
    "cell_mask": payloads.CellMaskPayload,
    "color_values": payloads.ColorValuesPayload,
    "channels": payloads.ChannelsData,
    "store_key": payloads.StoreKeyData,
}

_SCALARS: dict[Any, tuple[dict[str, Any], str]] = {
    str: ({"type": "string"}, "string"),
    int: ({"type": "integer"}, "number"),
    float: ({"type": "number"}, "number"),
    bool: ({"type": "boolean"}, "boolean"),
    type(None): ({"type": "null"}, "null"),
}


def reply_type(name: str) -> type:
    """The TypedDict the request ``name`` answers with."""
    method = REQUESTS[name]
    hint = typing.get_type_hints(method)["return"]
    if hint is Reply:
        if name not in REPLY_PAYLOADS:
            raise TypeError(f"request {name!r} answers a Reply: name its payload type in REPLY_PAYLOADS")
        return REPLY_PAYLOADS[name]
    if not is_typeddict(hint):
        raise TypeError(f"request {name!r} must be annotated with a TypedDict of service.types, not {hint!r}")
    return typing.cast(type, hint)


def _payload_types() -> list[type]:
    """Every TypedDict of :mod:`.types`, in the order the module defines them."""
    return [value for value in vars(payloads).values() if is_typeddict(value)]


def _unwrap(hint: Any) -> Any:
    while get_origin(hint) in (Required, NotRequired):
        (hint,) = get_args(hint)
    return hint


def _schema_of(hint: Any) -> dict[str, Any]:
    hint = _unwrap(hint)
    if hint is Any:
        return {}
    if hint in _SCALARS:
        return dict(_SCALARS[hint][0])
    if is_typeddict(hint):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, pytypes.UnionType):
        return {"anyOf": [_schema_of(arg) for arg in args]}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0]) if args else {}}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1]) if args else {}}
    raise TypeError(
        f"no JSON Schema for {hint!r}; use str, int, float, bool, None, Any, Literal, list, dict or a TypedDict"
    )


def _required_keys(typed: type) -> set[str]:
    """Keys a payload must hold: read from the annotations, as 3.11 cannot under postponed ones."""
    total = bool(getattr(typed, "__total__", True))
    required = set()
    for name, hint in typing.get_type_hints(typed, include_extras=True).items():
        origin = get_origin(hint)
        if origin is Required or (total and origin is not NotRequired):
            required.add(name)
    return required


def _object_schema(typed: type) -> dict[str, Any]:
    hints = typing.get_type_hints(typed, include_extras=True)
    required = sorted(_required_keys(typed))
    return {
        "type": "object",
        "properties": {name: _schema_of(hint) for name, hint in hints.items()},
        "required": required,
        "additionalProperties": False,
    }


def payload_schema() -> dict[str, Any]:
    """One JSON Schema: every payload type under ``$defs``, and each request's reply type."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "sds-jupyter/payloads.schema.json",
        "title": "sds-jupyter protocol payloads (generated from sds_jupyter/service/types.py)",
        "$defs": {typed.__name__: _object_schema(typed) for typed in _payload_types()},
        "requests": {name: {"$ref": f"#/$defs/{reply_type(name).__name__}"} for name in REQUESTS},
    }


def _ts_of(hint: Any) -> str:
    hint = _unwrap(hint)
    if hint is Any:
        return "unknown"
    if hint in _SCALARS:
        return _SCALARS[hint][1]
    if is_typeddict(hint):
        return str(hint.__name__)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return " | ".join(_ts_literal(arg) for arg in args)
    if origin in (Union, pytypes.UnionType):
        return " | ".join(_ts_of(arg) for arg in args)
    if origin is list:
        inner = _ts_of(args[0]) if args else "unknown"
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {_ts_of(args[1]) if args else 'unknown'}>"
    raise TypeError(f"no TypeScript for {hint!r}")


def _ts_literal(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def _ts_type(typed: type) -> str:
    hints = typing.get_type_hints(typed, include_extras=True)
    required = _required_keys(typed)
    fields = [f"  {name}{'' if name in required else '?'}: {_ts_of(hint)};" for name, hint in hints.items()]
    return "export type {} = {{\n{}\n}};".format(typed.__name__, "\n".join(fields))


def typescript() -> str:
    """The payload types as TypeScript, and the reply type of each request."""
    lines = [
        "// Generated by `make types` from sds_jupyter/service/types.py: do not edit by hand.",
        "// The Python TypedDicts are the source; tests/test_contract.py checks this file is current.",
        "",
    ]
    lines += [_ts_type(typed) + "\n" for typed in _payload_types()]
    lines.append("/** Request name -> the payload type of its reply. */")
    lines.append("export interface ReplyTypes {")
    lines += [f"  {name}: {reply_type(name).__name__};" for name in REQUESTS]
    lines.append("}")
    lines.append("")
    lines.append("/** The request names, in the order of the Python request table. */")
    names = ", ".join(f"'{name}'" for name in REQUESTS)
    lines.append(f"export const GENERATED_REQUESTS = [{names}] as const;")
    return "\n".join(lines) + "\n"


def generated_files() -> dict[Path, str]:
    """What ``make types`` writes: relative path -> text."""
    return {
        GENERATED["schema"]: json.dumps(payload_schema(), indent=2) + "\n",
        GENERATED["typescript"]: typescript(),
    }


def main() -> None:
    """Write the generated files under the current directory (the repository)."""
    for path, text in generated_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")  # noqa: T201 - a developer's tool


if __name__ == "__main__":
    main()
