"""The repository's root, found by what marks it rather than by counting folders up from a test,
so a test file may sit at any depth under ``tests/``."""

from __future__ import annotations

from pathlib import Path


def _find_root() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "sds_jupyter").is_dir():
            return folder
    raise RuntimeError(f"no repository root (pyproject.toml beside sds_jupyter/) above {__file__}")


ROOT = _find_root()
