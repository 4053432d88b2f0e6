"""Writing an output file as a new file renamed into place, never by truncating the old one.

An output path may name a file that is also something else: a hard link to a
stack's manifest or to a base's ``zarr.json``, a file another program has open.
Truncating it would rewrite that other file too. :func:`replaced_file` gives the
writer a new file in the same folder and renames it over the output only once
written in full, so whatever the path named before keeps its bytes, and a write
that fails leaves the output as it was.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["replaced_file"]


@contextmanager
def replaced_file(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new, empty path beside ``target`` to write; on success it replaces ``target``.

    The rename replaces the directory entry only: a hard link or a symbolic link at
    ``target`` is swapped for the new file, and what it pointed to is left untouched.
    """
    target = Path(target)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield tmp
        if not tmp.is_file() or tmp.is_symlink():
            raise FileNotFoundError(f"nothing was written for {target}")
        os.replace(tmp, target)
    finally:
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()
