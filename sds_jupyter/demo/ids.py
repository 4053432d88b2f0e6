"""Stable dataset IDs, so a demo is the same every time it is built."""

from __future__ import annotations

import uuid

__all__ = ["demo_dataset_id"]

_NAMESPACE = uuid.UUID("7c1d0b2e-52a7-4a8e-9a51-5d2f2b7e0a11")


def demo_dataset_id(name: str) -> str:
    """The dataset ID a demo gives the version called ``name`` (a UUID5, the same on every build)."""
    return str(uuid.uuid5(_NAMESPACE, name))
