"""The protocol's payloads as JSON Schema, made from the TypedDicts in :mod:`sds_jupyter.protocol.types`.

The Python types are the single source: :func:`payload_schema` turns them (and
the reply type of every request in :data:`~sds_jupyter.service.requests.REQUESTS`)
into one JSON Schema, and :func:`typescript` into the TypeScript the browser app
compiles against. ``make types`` writes both (``docs/payloads.schema.json`` and
``js/src/app/shared/payloads.gen.ts``), and the binary replies' buffer layouts
(:mod:`sds_jupyter.protocol.layouts`, as ``js/src/app/shared/layouts.gen.ts``); a test checks the files are
current and that real replies of every request match the schema and their layout.
"""

from __future__ import annotations

import inspect
import json
import types as pytypes
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin, is_typeddict

from sds_jupyter.protocol import payloads as canvas_payloads
from sds_jupyter.protocol import types as payloads
from sds_jupyter.protocol.layouts_ts import layouts_typescript
from sds_jupyter.protocol.payloads import Items
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.service.requests import REQUESTS, WRITE_REQUESTS, request_parameters

__all__ = [
    "GENERATED",
    "generated_files",
    "payload_schema",
    "reply_name",
    "reply_type",
    "typescript",
]

#: Where ``make types`` writes, relative to the repository.
GENERATED = {
    "schema": Path("docs/payloads.schema.json"),
    "typescript": Path("js/src/app/shared/payloads.gen.ts"),
    "layouts": Path("js/src/app/shared/layouts.gen.ts"),
}

_SCALARS: dict[Any, tuple[dict[str, Any], str]] = {
    str: ({"type": "string"}, "string"),
    int: ({"type": "integer"}, "number"),
    float: ({"type": "number"}, "number"),
    bool: ({"type": "boolean"}, "boolean"),
    type(None): ({"type": "null"}, "null"),
}


def reply_type(name: str) -> Any:
    """The TypedDict (or the named union of them) the request ``name`` answers with."""
    method = REQUESTS[name]
    hint = typing.get_type_hints(method)["return"]
    if hint is Reply:
        raise TypeError(f"request {name!r} answers a Reply: annotate it Reply[ItsPayload]")
    if get_origin(hint) is Reply:
        (hint,) = get_args(hint)
    if not is_typeddict(hint) and _alias_name(hint) is None:
        raise TypeError(f"request {name!r} must be annotated with a TypedDict of protocol.types, not {hint!r}")
    return hint


def reply_name(name: str) -> str:
    """The name of the payload type the request ``name`` answers with."""
    return _name_of(reply_type(name))


def _members() -> dict[str, Any]:
    """The public names of the payload modules: the studio's canvas payloads, then :mod:`sds_jupyter.protocol.types`."""
    members: dict[str, Any] = {}
    for module in (canvas_payloads, payloads):
        members.update((name, value) for name, value in vars(module).items() if not name.startswith("_"))
    return members


def _payload_types() -> list[type]:
    """Every payload TypedDict, in the order the modules define them."""
    return [value for value in _members().values() if is_typeddict(value)]


def _aliases() -> dict[str, Any]:
    """The named Literal, union and fixed-length aliases (``ColumnKind``, ``CanvasColor``, ``Bounds``)."""
    return {
        name: value
        for name, value in _members().items()
        if get_origin(value) in (Annotated, Literal, Union, pytypes.UnionType)
    }


def _alias_name(hint: Any) -> str | None:
    """The alias ``hint`` is (by identity: a field annotated with the alias' name), if any."""
    return next((name for name, value in _aliases().items() if value is hint), None)


def _name_of(hint: Any) -> str:
    if is_typeddict(hint):
        return str(hint.__name__)
    alias = _alias_name(hint)
    if alias is None:
        raise TypeError(f"{hint!r} has no name in protocol.types: define it there as a TypedDict or an alias")
    return alias


def _is_open(typed: type) -> bool:
    """Whether payloads of ``typed`` may hold fields beyond its named ones (see ``OPEN_PAYLOADS``)."""
    return typed in payloads.OPEN_PAYLOADS


def _unwrap(hint: Any) -> Any:
    while get_origin(hint) in (Required, NotRequired):
        (hint,) = get_args(hint)
    return hint


def _fixed(args: tuple[Any, ...]) -> tuple[Any, int]:
    """(item type, count) of ``Annotated[list[item], Items(count)]``, the one Annotated form allowed."""
    base, *extras = args
    counts = [extra.count for extra in extras if isinstance(extra, Items)]
    if get_origin(base) is not list or len(counts) != 1:
        raise TypeError(f"Annotated payload fields must be Annotated[list[T], Items(n)], not {base!r}")
    return get_args(base)[0], counts[0]


def _fixed_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    item, count = _fixed(args)
    return {"type": "array", "items": _schema_of(item), "minItems": count, "maxItems": count}


def _schema_of(hint: Any, *, named: bool = True) -> dict[str, Any]:
    hint = _unwrap(hint)
    alias = _alias_name(hint) if named else None
    if alias is not None:
        return {"$ref": f"#/$defs/{alias}"}
    if hint is Any:
        return {}
    if hint in _SCALARS:
        return dict(_SCALARS[hint][0])
    if is_typeddict(hint):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return _fixed_schema(args)
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
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: _schema_of(hint) for name, hint in hints.items()},
        "required": required,
    }
    if not _is_open(typed):
        schema["additionalProperties"] = False
    return schema


def payload_schema() -> dict[str, Any]:
    """One JSON Schema: every payload type under ``$defs``, and each request's reply type."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "sds-jupyter/payloads.schema.json",
        "title": "sds-jupyter protocol payloads (generated from sds_jupyter/protocol/types.py)",
        "$defs": {
            **{typed.__name__: _object_schema(typed) for typed in _payload_types()},
            **{name: _schema_of(alias, named=False) for name, alias in _aliases().items()},
        },
        "requests": {name: {"$ref": f"#/$defs/{reply_name(name)}"} for name in REQUESTS},
    }


def _ts_of(hint: Any, *, named: bool = True) -> str:
    hint = _unwrap(hint)
    alias = _alias_name(hint) if named else None
    if alias is not None:
        return alias
    if hint is Any:
        return "unknown"
    if hint in _SCALARS:
        return _SCALARS[hint][1]
    if is_typeddict(hint):
        return str(hint.__name__)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        item, count = _fixed(args)
        return "[" + ", ".join([_ts_of(item)] * count) + "]"
    if origin is Literal:
        return " | ".join(_ts_literal(arg) for arg in args)
    if origin in (Union, pytypes.UnionType):
        return " | ".join(dict.fromkeys(_ts_of(arg) for arg in args))  # int | float: one `number`
    if origin is list:
        inner = _ts_of(args[0]) if args else "unknown"
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin in (dict, Mapping):
        return f"Record<string, {_ts_of(args[1]) if args else 'unknown'}>"
    raise TypeError(f"no TypeScript for {hint!r}")


def _ts_literal(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def _ts_type(typed: type) -> str:
    hints = typing.get_type_hints(typed, include_extras=True)
    required = _required_keys(typed)
    fields = [f"  {name}{'' if name in required else '?'}: {_ts_of(hint)};" for name, hint in hints.items()]
    if _is_open(typed):
        fields.append("  [field: string]: unknown;")
    return "export type {} = {{\n{}\n}};".format(typed.__name__, "\n".join(fields))


def _ts_params(name: str) -> str:
    """The parameters of request ``name`` as a TypeScript object type, from its method's signature."""
    method = REQUESTS[name]
    hints = typing.get_type_hints(method)
    fields = [
        f"{param.name}{'' if param.default is inspect.Parameter.empty else '?'}: {_ts_of(hints[param.name])}"
        for param in request_parameters(method)
    ]
    return "{ " + "; ".join(fields) + " }" if fields else "Record<string, never>"


def typescript() -> str:
    """The payload types as TypeScript, and the reply type of each request."""
    lines = [
        "// Generated by `make types` from sds_jupyter/protocol/types.py: do not edit by hand.",
        "// The Python TypedDicts are the source; tests/project/test_contract.py checks this file is current.",
        "",
    ]
    lines += [f"export type {name} = {_ts_of(alias, named=False)};\n" for name, alias in _aliases().items()]
    lines += [_ts_type(typed) + "\n" for typed in _payload_types()]
    lines.append("/** Request name -> the payload type of its reply. */")
    lines.append("export interface ReplyTypes {")
    lines += [f"  {name}: {reply_name(name)};" for name in REQUESTS]
    lines.append("}")
    lines.append("")
    lines.append("/** Request name -> its parameters, from the service method's signature. */")
    lines.append("export interface ParamTypes {")
    lines += [f"  {name}: {_ts_params(name)};" for name in REQUESTS]
    lines.append("}")
    lines.append("")
    lines.append("/** The request names, in the order of the Python request table. */")
    names = ", ".join(f"'{name}'" for name in REQUESTS)
    lines.append(f"export const GENERATED_REQUESTS = [{names}] as const;")
    lines.append("")
    lines.append("/** The requests that write a new version: posted (REST), never fetched with a GET. */")
    writes = ", ".join(f"'{name}'" for name in REQUESTS if name in WRITE_REQUESTS)
    lines.append(f"export const GENERATED_WRITE_REQUESTS = [{writes}] as const;")
    return "\n".join(lines) + "\n"


def generated_files() -> dict[Path, str]:
    """What ``make types`` writes: relative path -> text."""
    return {
        GENERATED["schema"]: json.dumps(payload_schema(), indent=2) + "\n",
        GENERATED["typescript"]: typescript(),
        GENERATED["layouts"]: layouts_typescript(),
    }


def main() -> None:
    """Write the generated files under the current directory (the repository)."""
    for path, text in generated_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")  # noqa: T201 - a developer's tool


if __name__ == "__main__":
    main()
