"""The notebook "Open in notebook" creates: load the extension, open the version."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sds_jupyter.service.errors import RequestError

__all__ = ["notebook_for", "notebook_name", "work_dir_in_root"]

NBFORMAT = 4
NBFORMAT_MINOR = 5


def work_dir_in_root(root_dir: str) -> str:
    """Where new notebooks go, relative to the root: ``SDS_WORK_DIR`` if inside the root, else the root."""
    work = os.environ.get("SDS_WORK_DIR")
    if not work:
        return ""
    real_work, real_root = os.path.realpath(work), os.path.realpath(root_dir)
    if real_work == real_root or not real_work.startswith(real_root + os.sep) or not os.path.isdir(real_work):
        return ""
    return Path(os.path.relpath(real_work, real_root)).as_posix()


def notebook_name(title: str) -> str:
    """A file name from a version's title: letters, digits, dashes and spaces kept."""
    stem = re.sub(r"[^\w\- ]+", "", title).strip() or "version"
    return f"{stem[:80]}.ipynb"


def notebook_for(version_path: Path, title: str | None) -> dict[str, Any]:
    """The notebook document: a heading, then the cell that opens the version."""
    text = str(version_path)
    if '"' in text or "\n" in text:
        raise RequestError("Cannot write a notebook for a path holding quotes or line breaks.")
    heading = f"# {title}" if title else f"# {version_path.name}"
    return {
        "nbformat": NBFORMAT,
        "nbformat_minor": NBFORMAT_MINOR,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
        "cells": [
            {"cell_type": "markdown", "id": "sds-title", "metadata": {}, "source": heading},
            {
                "cell_type": "code",
                "id": "sds-open",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": f'%load_ext sds_jupyter\n%sds_open "{text}"',
            },
        ],
    }
