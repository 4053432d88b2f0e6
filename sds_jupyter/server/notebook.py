"""The notebook "Open in notebook" creates: load the extension, open the version.

Folder names and titles are data chosen by whoever named a dataset, and the
lab extension runs the notebook it gets. So nothing from a dataset reaches a
cell as code: the version's path is a Python string literal (``repr``), never
text spliced into a magic line (IPython expands ``{…}`` and ``$name`` there),
and the title reaches only the markdown heading, escaped.

The path is relative to the notebook (its kernel starts in the notebook's
folder), so the notebook keeps working where the server's root is mounted
elsewhere. The notebook's metadata names the version it opens, so asking
again for the same version finds it instead of making ``-1``, ``-2`` copies.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import unicodedata
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_STEM_BYTES",
    "METADATA_KEY",
    "candidate_names",
    "is_made_for",
    "is_plain_file_in_root",
    "is_unchanged",
    "name_is_free",
    "notebook_for",
    "notebook_name",
    "open_cell_source",
    "path_from_notebook",
    "work_dir_in_root",
]

NBFORMAT = 4
NBFORMAT_MINOR = 5

#: The notebook metadata key that names the version a generated notebook opens.
METADATA_KEY = "sds_jupyter"

#: A file name's stem is cut to this many UTF-8 bytes: with ``-NN.ipynb`` it stays far below
#: the 255-byte limit of common file systems (a title of 4-byte characters otherwise overflows it).
MAX_STEM_BYTES = 120

#: How many ``Title-N.ipynb`` names are tried before giving up (each may hold another version's notebook).
MAX_CANDIDATES = 100

_UNSAFE = re.compile(r"[^\w\- ]+")
_SPACES = re.compile(r"\s+")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>&$~^\"'])")


def work_dir_in_root(root_dir: str) -> str:
    """Where new notebooks go, relative to the root: ``SDS_WORK_DIR`` if inside the root, else the root."""
    work = os.environ.get("SDS_WORK_DIR")
    if not work:
        return ""
    real_work, real_root = os.path.realpath(work), os.path.realpath(root_dir)
    if real_work == real_root or not real_work.startswith(real_root + os.sep) or not os.path.isdir(real_work):
        return ""
    return Path(os.path.relpath(real_work, real_root)).as_posix()


def is_plain_file_in_root(root_dir: str, notebook_path: str) -> bool:
    """Whether ``notebook_path`` (relative to the root) is a regular file reached through no symbolic link.

    Why: a notebook found under a generated name is reused and then run; a link there could
    lead to a file outside the root (or a FIFO) that someone else controls.
    """
    root = os.path.realpath(root_dir)
    path = os.path.join(root, *notebook_path.split("/"))
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and os.path.realpath(path) == path


def name_is_free(root_dir: str, notebook_path: str) -> bool:
    """Whether nothing at all is at ``notebook_path`` (relative to the root), not even a dangling link.

    Why: a new notebook is written only to a free name; writing to a dangling link would
    create its target, wherever it points.
    """
    root = os.path.realpath(root_dir)
    return not os.path.lexists(os.path.join(root, *notebook_path.split("/")))


def _cut_to_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def notebook_name(title: str) -> str:
    """A safe file name from a version's title, at most :data:`MAX_STEM_BYTES` bytes before ``.ipynb``.

    Only letters, digits, ``_``, ``-`` and single spaces are kept (no separators, dots,
    controls or shell characters), leading dashes and spaces are dropped (no hidden
    file, nothing that reads as an option).
    """
    stem = _UNSAFE.sub("", unicodedata.normalize("NFC", title))
    stem = _SPACES.sub(" ", stem).strip(" -")
    stem = _cut_to_bytes(stem, MAX_STEM_BYTES).rstrip(" -") or "version"
    return f"{stem}.ipynb"


def candidate_names(filename: str) -> list[str]:
    """``Title.ipynb``, ``Title-1.ipynb``, …: where the notebook of a version may be or go."""
    stem = filename.removesuffix(".ipynb")
    return [filename] + [f"{stem}-{n}.ipynb" for n in range(1, MAX_CANDIDATES)]


def path_from_notebook(target: str, notebook_dir: str) -> str:
    """``target`` (relative to the server root) as seen from ``notebook_dir`` (also relative to it)."""
    return posixpath.relpath(target or ".", notebook_dir or ".")


def _markdown_text(text: str) -> str:
    """``text`` as literal markdown on one line: controls and breaks become spaces, syntax is escaped."""
    flat = "".join(" " if unicodedata.category(ch)[0] in "CZ" else ch for ch in text)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _SPACES.sub(" ", flat).strip())


def open_cell_source(path: str) -> str:
    """The code cell: the path is a string literal (``repr``), so no name can run as code."""
    return "\n".join(
        [
            "%load_ext sds_jupyter",
            "from sds_jupyter import VersionBrowser",
            "",
            f"browser = VersionBrowser({path!r})",
            "adata = browser.adata",
            "browser",
        ]
    )


def notebook_for(path: str, title: str | None, version_key: str) -> dict[str, Any]:
    """The notebook document: a heading, then the cell that opens the version at ``path``.

    ``path`` is relative to the notebook; ``version_key`` (the version's folder relative
    to the server root) is kept in the metadata so :func:`is_made_for` finds it again.
    """
    heading = _markdown_text(title or posixpath.basename(version_key) or "Version") or "Version"
    return {
        "nbformat": NBFORMAT,
        "nbformat_minor": NBFORMAT_MINOR,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            METADATA_KEY: {"version": version_key},
        },
        "cells": [
            {"cell_type": "markdown", "id": "sds-title", "metadata": {}, "source": f"# {heading}"},
            {
                "cell_type": "code",
                "id": "sds-open",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": open_cell_source(path),
            },
        ],
    }


def is_made_for(content: Any, version_key: str) -> bool:
    """Whether a notebook document is the one made earlier for ``version_key``."""
    if not isinstance(content, dict):
        return False
    metadata = content.get("metadata")
    mine = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    return isinstance(mine, dict) and mine.get("version") == version_key


def _source(cell: Any) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(source) if isinstance(source, list) else str(source)


def is_unchanged(content: Any, made: dict[str, Any]) -> bool:
    """Whether a notebook still holds exactly the cells it was made with (so running it runs only those)."""
    cells = content.get("cells") if isinstance(content, dict) else None
    if not isinstance(cells, list) or len(cells) != len(made["cells"]):
        return False
    return all(
        isinstance(cell, dict) and cell.get("cell_type") == ours["cell_type"] and _source(cell) == ours["source"]
        for cell, ours in zip(cells, made["cells"])
    )
