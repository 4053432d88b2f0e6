"""Turning values read from a store into plain JSON.

Everything the service hands a transport goes through here, so NaN, numpy
scalars, arrays and timestamps never reach ``json.dumps`` (which would emit
invalid JSON for NaN or fail on numpy types).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["json_scalar", "jsonable"]


def json_scalar(value: Any) -> Any:
    """A cell value as a JSON scalar: NaN/inf/NA become None, numpy types become Python."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return None if math.isnan(number) or math.isinf(number) else number
    if isinstance(value, str):
        return value
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return pd.Timestamp(value).isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def jsonable(value: Any) -> Any:
    """``value`` (dicts, lists, arrays, scalars) as plain JSON-able Python."""
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return [jsonable(item) for item in value.tolist()] if value.ndim else json_scalar(value.item())
    return json_scalar(value)
