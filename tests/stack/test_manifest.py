"""layer.json parsing: every field rule, and every refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sds_jupyter.errors import ManifestError, StackError, UnsafePathError
from sds_jupyter.stack.manifest import parse_manifest, read_manifest, supported_formats


def manifest(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": "spatial-data-studio.layer",
        "format_version": 1,
        "parent": "cirro:::dataset:abc/layer.json",
        "files": [{"key": "tables/table/obs/zarr.json", "size": 10}],
        "deleted": ["tables/table/obs/old/", "tables/table/uns/x/c"],
        "changes": [{"op": "set-obs", "table": "table", "column": "regions", "kind": "categorical"}],
    }
    doc.update(fields)
    return {k: v for k, v in doc.items() if v is not ...}


def test_a_full_manifest_parses_with_every_field() -> None:
    parsed = parse_manifest(
        manifest(
            base="cirro:::dataset:0d13/results/a.sdata.zarr.zip",
            depth=2,
            title="Tumor margin regions",
            message="Drawn around the invasive front",
            created_at="2026-10-20T06:41:12.008Z",
            created_by="someone@example.org",
            app={"id": "spatial-data-studio", "version": "1.3.0"},
            overlay="overlay",
            future_field={"kept": True},
        )
    )
    assert parsed.parent == "cirro:::dataset:abc/layer.json"
    assert parsed.base == "cirro:::dataset:0d13/results/a.sdata.zarr.zip"
    assert parsed.depth == 2 and parsed.title == "Tumor margin regions"
    assert parsed.created_by == "someone@example.org"
    assert parsed.app == {"id": "spatial-data-studio", "version": "1.3.0"}
    assert [(f.key, f.size) for f in parsed.files] == [("tables/table/obs/zarr.json", 10)]
    assert parsed.deleted == ("tables/table/obs/old/", "tables/table/uns/x/c")
    assert parsed.changes[0]["column"] == "regions"
    assert parsed.extra == {"future_field": {"kept": True}}
    assert parsed.to_json()["future_field"] == {"kept": True}


def test_optional_fields_default() -> None:
    parsed = parse_manifest(manifest(files=..., deleted=..., changes=...))
    assert parsed.overlay == "overlay"
    assert parsed.files == () and parsed.deleted == () and parsed.changes == ()
    assert parsed.title is None and parsed.depth is None


def test_read_manifest_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(manifest(title="t")))
    assert read_manifest(path).title == "t"


@pytest.mark.parametrize(
    ("doc", "error", "words"),
    [
        ([], ManifestError, "JSON object"),
        (manifest(format="something-else"), ManifestError, "not a version layer"),
        (manifest(format=...), ManifestError, "not a version layer"),
        (manifest(format_version=2), ManifestError, "not supported"),
        (manifest(format_version="1"), ManifestError, "integer"),
        (manifest(format_version=True), ManifestError, "integer"),
        (manifest(parent=...), ManifestError, "parent"),
        (manifest(parent=5), ManifestError, "parent"),
        (manifest(title=["x"]), ManifestError, "title"),
        (manifest(app="x"), ManifestError, "app"),
        (manifest(depth=0), ManifestError, "depth"),
        (manifest(depth="2"), ManifestError, "depth"),
        (manifest(files={"key": "a"}), ManifestError, "files"),
        (manifest(files=["a"]), ManifestError, "files entry"),
        (manifest(files=[{"key": "a", "size": -1}]), ManifestError, "size"),
        (manifest(files=[{"key": "a", "size": 1.5}]), ManifestError, "size"),
        (manifest(deleted="a/"), ManifestError, "deleted"),
        (manifest(changes=[{"table": "t"}]), ManifestError, "op"),
        (manifest(changes={}), ManifestError, "changes"),
    ],
)
def test_malformed_manifests_are_refused(doc: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        parse_manifest(doc)


UNSAFE_PATHS = ["/abs/key", "a//b", "a/./b", "a/../b", "..", ".", "", "a\\b", "a/b/", "a\x00b", "../../etc/passwd"]


@pytest.mark.parametrize("key", UNSAFE_PATHS)
def test_unsafe_file_keys_are_refused(key: str) -> None:
    with pytest.raises(UnsafePathError):
        parse_manifest(manifest(files=[{"key": key, "size": 1}]))


@pytest.mark.parametrize("folder", [*UNSAFE_PATHS, 7])
def test_unsafe_overlay_folders_are_refused(folder: object) -> None:
    with pytest.raises(UnsafePathError):
        parse_manifest(manifest(overlay=folder))


@pytest.mark.parametrize("entry", [e for e in UNSAFE_PATHS if e != "a/b/"] + ["a//", "/", "//"])
def test_unsafe_whiteouts_are_refused(entry: str) -> None:
    with pytest.raises(UnsafePathError):
        parse_manifest(manifest(deleted=[entry]))


def test_a_node_whiteout_keeps_its_slash() -> None:
    assert parse_manifest(manifest(deleted=["a/b/"])).deleted == ("a/b/",)


def test_refusals_are_value_errors_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(manifest(files=[{"key": "../x", "size": 1}])))
    with pytest.raises(ValueError, match=str(path)) as caught:
        read_manifest(path)
    assert isinstance(caught.value, StackError)


@pytest.mark.parametrize("text", ["{not json", '{"format": NaN}', "[" * 100000, ""])
def test_bad_json_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "layer.json"
    path.write_text(text)
    with pytest.raises(ManifestError, match="not valid JSON|JSON object"):
        read_manifest(path)


def test_the_unsupported_version_message_lists_what_is_supported() -> None:
    assert [f.version for f in supported_formats()] == [1]
    with pytest.raises(ManifestError, match=r"reads 1\b"):
        parse_manifest(manifest(format_version=7))


def _nested_list(levels: int) -> object:
    value: object = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("field", "make"),
    [
        # the manifest is level 1, a change level 3, app level 2: each may reach level 64, not 65
        ("changes", lambda levels: [{"op": "set-uns", "n": 1}, {"op": "set-uns", "v": _nested_list(levels - 3)}]),
        ("app", lambda levels: {"id": "x", "v": _nested_list(levels - 2)}),
        ("custom", lambda levels: {"v": _nested_list(levels - 2)}),
    ],
)
def test_kept_values_may_nest_to_the_limit_and_no_deeper(field: str, make: Any) -> None:
    """The quick pass over scalar-only changes must not let a nested one through."""
    assert parse_manifest(manifest(**{field: make(64)}))
    with pytest.raises(ManifestError, match="nests more than 64 levels"):
        parse_manifest(manifest(**{field: make(65)}))


def test_a_change_of_scalars_only_passes_the_depth_check() -> None:
    changes = [{"op": "set-obs", "column": "c", "n": 1, "f": 1.5, "b": True, "z": None}]
    assert parse_manifest(manifest(changes=changes)).changes == tuple(changes)
