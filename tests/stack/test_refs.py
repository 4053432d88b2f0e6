"""Cirro references and folder maps."""

from __future__ import annotations

import json

import pytest

from sds_jupyter.errors import ReferenceError_, StackError, UnsafePathError
from sds_jupyter.stack.refs import CirroRef, FolderMap, parse_folder_map


def test_the_empty_scope_form_parses() -> None:
    ref = CirroRef.parse("cirro:::dataset:5f1c-aa/layer.json")
    assert (ref.tenant, ref.project, ref.dataset_id, ref.path) == ("", "", "5f1c-aa", "layer.json")
    assert ref.names_manifest
    assert str(ref) == "cirro:::dataset:5f1c-aa/layer.json"


def test_a_scoped_reference_to_a_store_parses() -> None:
    ref = CirroRef.parse("cirro:tenant1:proj2:dataset:0d13/results/Pancreas/results-c62.sdata.zarr.zip")
    assert (ref.tenant, ref.project) == ("tenant1", "proj2")
    assert ref.path == "results/Pancreas/results-c62.sdata.zarr.zip"
    assert not ref.names_manifest


def test_paths_are_not_percent_decoded() -> None:
    assert CirroRef.parse("cirro:::dataset:a/my%20store.zarr").path == "my%20store.zarr"


def test_a_layer_json_deeper_in_the_dataset_is_a_manifest_reference() -> None:
    assert CirroRef.parse("cirro:::dataset:a/data/layer.json").names_manifest
    assert not CirroRef.parse("cirro:::dataset:a/layer.json.zip").names_manifest


@pytest.mark.parametrize(
    "text",
    [
        "s3://bucket/layer.json",
        "cirro:dataset:abc/layer.json",
        "cirro:::project:abc/layer.json",
        "cirro:::dataset:abc",
        "cirro:::dataset:/layer.json",
        "cirro:a/b::dataset:abc/layer.json",
        None,
        42,
    ],
)
def test_malformed_references_are_refused(text: object) -> None:
    with pytest.raises(StackError):
        CirroRef.parse(text)


@pytest.mark.parametrize("dataset_id", ["ab_c", "a.b", "..", "a b", "é", "a%2F"])
def test_dataset_ids_hold_only_letters_digits_hyphens(dataset_id: str) -> None:
    with pytest.raises(UnsafePathError, match="letters, digits and hyphens"):
        CirroRef.parse(f"cirro:::dataset:{dataset_id}/layer.json")


@pytest.mark.parametrize(
    "path", ["../x/layer.json", "a//layer.json", "./layer.json", "a\\layer.json", "a/../../layer.json"]
)
def test_reference_paths_must_be_plain_relative(path: str) -> None:
    with pytest.raises(UnsafePathError):
        CirroRef.parse(f"cirro:::dataset:abc/{path}")


def test_reference_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        CirroRef.parse("nope")
    assert issubclass(ReferenceError_, ValueError)


def test_folder_map_from_json_text_and_reverse_lookup() -> None:
    folders = parse_folder_map('{"5f1c": "Tumor margin regions", "0d13": "Pancreas results"}')
    assert folders["5f1c"] == "Tumor margin regions"
    assert folders.id_for_folder("Pancreas results") == "0d13"
    assert folders.id_for_folder("other") is None


def test_folder_map_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDS_CIRRO_DATASETS", json.dumps({"abc": "Named folder"}))
    assert dict(parse_folder_map(None)) == {"abc": "Named folder"}
    monkeypatch.setenv("SDS_CIRRO_DATASETS", "")
    assert dict(parse_folder_map(None)) == {}


@pytest.mark.parametrize(
    "value",
    [
        "{not json",
        "[1, 2]",
        '{"abc": 3}',
        '{"abc": "../outside"}',
        '{"abc": "/abs"}',
        '{"abc": "a\\\\b"}',
        '{"bad id!": "x"}',
        '{"abc": ""}',
    ],
)
def test_unsafe_folder_maps_are_refused(value: str) -> None:
    with pytest.raises(UnsafePathError):
        parse_folder_map(value)


def test_folder_map_accepts_a_mapping() -> None:
    assert isinstance(parse_folder_map({"a": "b"}), FolderMap)
