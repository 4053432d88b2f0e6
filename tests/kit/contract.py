"""The protocol's request schemas as validators."""

from __future__ import annotations

import jsonschema

from sds_jupyter.service.contract import payload_schema


def reply_validator(name: str) -> jsonschema.Draft202012Validator:
    schema = payload_schema()
    return jsonschema.Draft202012Validator({"$defs": schema["$defs"], **schema["requests"][name]})
