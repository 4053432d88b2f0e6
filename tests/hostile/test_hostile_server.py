"""A real Jupyter server, in its own process under an address-space limit, sent hostile requests.

Why a subprocess: the bound on memory is the point, and only a process of its own can be
given one (``RLIMIT_AS``) without limiting pytest. Every hostile image request must answer
400 with its reason (not a 500 from a ``MemoryError``), an oversized body 413, an unreadable
folder 403 naming it, and the server must still answer ordinary requests afterwards.

Memory is measured per request, not only capped: the kernel's peak-resident mark of the
server is reset (``/proc/<pid>/clear_refs``) before each hostile request and read after it,
so each request's own peak is what is bounded (``REFUSAL_PEAK_BYTES``).

When the tests run as root, the server is started without the two capabilities that let
root read any file (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``), so a folder made
unreadable is unreadable to it as to any user.
"""

from __future__ import annotations

import json
import shutil
import socket
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from kit.hostile import (
    BOMB_BYTES,
    FIGURE,
    HOSTILE_IMAGES,
    IMAGE_REQUESTS,
    bomb_chunk,
    claims_10_12_rows,
    edit_nodes,
    hostile_datasets,
    replace_chunk,
)
from kit.limited_server import REFUSAL_PEAK_BYTES, Server, limit_server, running_server

from sds_jupyter.demo.specs import TABLE
from sds_jupyter.limits import MAX_COUNTS, MAX_TITLE_MANIFEST_BYTES
from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.stack import Stack
from sds_jupyter.stack.write.writer import VersionWriter

#: Each version manifest of the listed folder is padded to this size: over the title bound,
#: under the reader's MAX_MANIFEST_BYTES, so a listing that parsed them would hold them all.
PADDED_MANIFEST_BYTES = 24 * 1024**2


def streamed(body: bytes) -> Iterator[bytes]:
    """``body`` sent chunked (no Content-Length, so only counting can refuse it), a mebibyte at a time.

    A body that announces its length over the bound is refused before it is sent, and a client
    that writes all of it before reading the answer then finds the connection closed.
    """
    return (body[start : start + 1024 * 1024] for start in range(0, len(body), 1024 * 1024))


def _hostile_results(top: Path, dest: Path) -> dict[str, Any]:
    """A copy of the demo's datasets with three versions on top: obs columns whose compare has more
    distinct names than MAX_COUNTS and deltas of ±1.7e308 (hostile-3333, hostile-4444), then a
    result claiming 10^12 values (hostile-5555). Their paths and depths by name."""
    datasets = Path(shutil.copytree(top.parent, dest, symlinks=True))
    writer = VersionWriter(Stack.resolve(datasets / top.name))
    n_obs = writer.n_obs(TABLE)
    assert n_obs > MAX_COUNTS, "the compare must have more distinct values than it sends"
    writer.set_obs(TABLE, "name", [f"cell-a-{i}" for i in range(n_obs)])
    writer.set_obs(TABLE, "extreme", np.where(np.arange(n_obs) % 2, -1.7e308, 1.7e308))
    first = writer.commit(datasets / "hostile-3333", title="hostile", message="m", created_by="c@example.org")
    writer = VersionWriter(Stack.resolve(first))
    writer.set_obs(TABLE, "name", [f"cell-b-{i}" for i in range(n_obs)])
    writer.set_obs(TABLE, "extreme", np.zeros(n_obs))
    second = writer.commit(datasets / "hostile-4444", title="after", message="m", created_by="c@example.org")
    writer = VersionWriter(Stack.resolve(second))
    big = pd.DataFrame({"value": np.arange(1000, dtype=float)})
    writer.set_result(TABLE, "res_big", {"table": big}, {"kind": "table", "title": "claims a lot"})
    third = writer.commit(datasets / "hostile-5555", title="big", message="m", created_by="c@example.org")
    assert edit_nodes(datasets, "res_big/table/value", lambda meta: meta.update(shape=[10**12]))
    return {
        version.name: (f"{dest.name}/{version.name}", Stack.resolve(version).depth)
        for version in (first, second, third)
    }


def _bombed(top: Path, dest: Path) -> tuple[str, int]:
    """A copy of the demo's datasets with a version on top whose obs column ``bomb`` and obsm entry
    ``X_bomb`` are each one gzip chunk inflating to 4 GiB (issue 38 item 1); its path and depth."""
    datasets = Path(shutil.copytree(top.parent, dest, symlinks=True))
    writer = VersionWriter(Stack.resolve(datasets / top.name))
    n_obs = writer.n_obs(TABLE)
    writer.set_obs(TABLE, "bomb", np.zeros(n_obs))
    writer.set_obsm(TABLE, "X_bomb", np.zeros((n_obs, 2)))
    version = writer.commit(datasets / "bombed-6666", title="bombed", message="m", created_by="c@example.org")
    for key in (f"tables/{TABLE}/obs/bomb/c/0", f"tables/{TABLE}/obsm/X_bomb/c/0/0"):
        replace_chunk(version, key, bomb_chunk(BOMB_BYTES))
    return f"{dest.name}/{version.name}", Stack.resolve(version).depth


def _shapes_bomb(top: Path, dest: Path, count: int = 5_000_000) -> None:
    """A copy of the demo's datasets whose cell outlines are ``count`` copies of one polygon: parquet
    keeps a repeated value once, so the file stays a few hundred kilobytes (issue 38 item 3)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    datasets = Path(shutil.copytree(top.parent, dest, symlinks=True))
    path = Path(str(Stack.resolve(datasets / top.name).base.path)) / "shapes" / "cell_boundaries" / "shapes.parquet"
    honest = pq.read_table(path)
    polygon = honest.column("geometry").chunk(0).slice(0, 1)
    geometry = pa.DictionaryArray.from_arrays(pa.array(np.zeros(count, dtype=np.int32)), polygon.cast(pa.binary()))
    columns = {"geometry": geometry, "cell_id": pa.array(np.zeros(count, dtype=np.int64))}
    pq.write_table(pa.table(columns).replace_schema_metadata(honest.schema.metadata), path)
    assert path.stat().st_size < 1024 * 1024


def _padded_manifests(top: Path, dest: Path) -> int:
    """A copy of the demo's datasets whose every manifest is padded to PADDED_MANIFEST_BYTES; how many."""
    datasets = Path(shutil.copytree(top.parent, dest, symlinks=True))
    manifests = sorted(datasets.glob("*/layer.json"))
    for manifest_path in manifests:
        manifest = json.loads(manifest_path.read_text())
        manifest["message"] = "m" * PADDED_MANIFEST_BYTES
        manifest_path.write_text(json.dumps(manifest))
    return len(manifests)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The server over a root of the demo, one hostile copy per case, and a folder it may not read."""
    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = build_xenium_demo(tmp_path_factory.mktemp("demo"), n_cells=300, side=1024)
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(top.parent, root / "good", symlinks=True)
    for number, (edit, _) in enumerate(HOSTILE_IMAGES.values()):
        hostile_datasets(top, root / f"case{number}", edit)
    claimed = Path(shutil.copytree(top.parent, root / "claimed", symlinks=True))
    edit_nodes(claimed, "obsm/spatial", claims_10_12_rows)  # positions of 10^12 cells
    hostile = _hostile_results(top, root / "results")
    _padded_manifests(top, root / "padded")
    hostile["bombed"] = _bombed(top, root / "bombs")
    _shapes_bomb(top, root / "shapes-bomb")
    shutil.copytree(top.parent, root / "locked", symlinks=True)
    (root / "locked").chmod(0)
    shutil.copytree(top.parent, root / "sealed", symlinks=True)
    (root / "sealed" / top.name).chmod(0)  # the version folder itself; its datasets folder is readable
    home = tmp_path_factory.mktemp("home")
    try:
        with running_server(root, home, top.name, limit_server, hostile, {"MALLOC_ARENA_MAX": "2"}) as started:
            yield started
    finally:
        (root / "locked").chmod(0o755)
        (root / "sealed" / top.name).chmod(0o755)


def test_an_ordinary_tile_is_served_under_the_limit(server: Server) -> None:
    """The limit leaves room for real work: the refusals below are not the limit failing everything."""
    status, _ = server.call("image_tile", path=f"good/{server.top}", **IMAGE_REQUESTS["image_tile"])
    assert status == 200
    status, _ = server.call("channels", path=f"good/{server.top}", **IMAGE_REQUESTS["channels"])
    assert status == 200


def test_a_huge_notebook_body_answers_413_without_being_held(server: Server) -> None:
    """99 MB streamed to api/notebook: 413, and the server's memory rises by far less than the body."""
    body = json.dumps({"path": f"good/{server.top}", "pad": "x" * (99 * 1024 * 1024)}).encode()
    status, error, peak = server.peak_of("notebook", method="POST", body=streamed(body))
    assert (status, error["kind"]) == (413, "too-large"), error
    assert peak < 32 * 1024 * 1024, f"the server rose by {peak} bytes"
    assert server.alive()


def test_a_post_to_no_route_or_a_write_is_capped_before_reading_and_echoes_nothing(server: Server) -> None:
    """Issue 38 item 8: 99 MB streamed to ``api/fetch`` (no route: 404) or ``api/cirro_fetch`` (413) is
    never held; 300 MB announced but never sent is refused at once; a 404 quotes neither name nor path."""
    body = json.dumps({"path": f"good/{server.top}", "pad": "x" * (99 * 1024 * 1024)}).encode()
    for name, answer in (("fetch", (404, "http")), ("cirro_fetch", (413, "too-large"))):
        status, error, peak = server.peak_of(name, method="POST", body=streamed(body))
        assert (status, error["kind"]) == answer, (name, error)
        assert peak < 32 * 1024 * 1024, f"{name} rose by {peak} bytes"
    head = (
        f"POST /{NAMESPACE}/api/cirro_fetch?token={server.token} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: 300000000\r\n\r\n"
    )
    port = int(server.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(head.encode())  # and not a byte of the body
        assert connection.recv(64).startswith(b"HTTP/1.1 413"), "refused before the body is sent"
    marker = "zz-" + "q" * 80  # past what a request's name could be
    for name, sent in ((f"fetch-{marker}", {"path": "x"}), ("cirro_fetch", {"path": marker, "dataset_id": "a-1"})):
        status, error = server.call(name, method="POST", body=json.dumps(sent).encode())
        assert status == 404 and marker not in error["message"] and "\n" not in error["message"], error
    assert server.alive()


@pytest.mark.parametrize("case", list(HOSTILE_IMAGES))
def test_hostile_image_metadata_answers_400_with_its_reason(server: Server, case: str) -> None:
    number = list(HOSTILE_IMAGES).index(case)
    reason = HOSTILE_IMAGES[case][1]
    for name, params in IMAGE_REQUESTS.items():
        status, error, peak = server.peak_of(name, path=f"case{number}/{server.top}", **params)
        assert (status, error["kind"]) == (400, "element"), (name, error)
        assert reason in error["message"] and "\n" not in error["message"], (name, error)
        assert peak < REFUSAL_PEAK_BYTES, f"{name} rose by {peak} bytes"
    assert server.alive()


def test_a_table_claiming_huge_shapes_answers_400(server: Server) -> None:
    status, error, peak = server.peak_of("canvas", path=f"claimed/{server.top}", figure=FIGURE)
    assert (status, error["kind"]) == (400, "element") and "MAX_COLUMN_BYTES" in error["message"], error
    assert peak < REFUSAL_PEAK_BYTES, f"the server rose by {peak} bytes"
    assert server.alive()


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("color_values", {"figure": FIGURE, "column": "bomb"}),
        ("cell", {"figure": FIGURE, "index": 0}),
        ("compare", {"a": 0}),
        ("embedding", {"figure": FIGURE, "key": "X_bomb"}),
        ("store_key", {"key": f"tables/{TABLE}/obs/bomb/c/0"}),
    ],
)
def test_a_decompression_bomb_answers_400_naming_it(server: Server, name: str, params: dict[str, Any]) -> None:
    """Issue 38 item 1: a column and an obsm entry whose one gzip chunk inflates to 4 GiB, twice the
    server's whole address space, are refused by name before they are inflated; the server stays up."""
    path, depth = server.hostile["bombed"]
    params = {**params, "b": depth} if name == "compare" else params
    status, error, peak = server.peak_of(name, path=path, **params)
    assert (status, error["kind"]) == (400, "base"), (name, error)
    assert ("obs/bomb" in error["message"] or "obsm/X_bomb" in error["message"]) and "\n" not in error["message"]
    assert peak < REFUSAL_PEAK_BYTES, f"{name} rose by {peak} bytes"
    assert server.alive()


def test_millions_of_polygons_in_a_small_parquet_are_refused_before_a_polygon_is_built(server: Server) -> None:
    """Issue 38 item 3: 5,000,000 outlines in a file of kilobytes are refused from the parquet footer,
    before a polygon is built. Issue 39 item 3: the canvas still answers, its cells at their positions
    and a line naming the bound (not a 400 for the whole figure); the element alone is refused."""
    from sds_jupyter.protocol.framing import unframe_reply

    status, body, peak = server.peak_of("canvas", path=f"shapes-bomb/{server.top}", figure=FIGURE)
    assert status == 200, body
    payload, _ = unframe_reply(body)  # the canvas reply is framed (a payload, no buffers)
    assert payload["shapes"] is None
    note = payload["shapes_note"]
    assert "5,000,000 shapes" in note and "MAX_SHAPES" in note and "\n" not in note
    assert peak < REFUSAL_PEAK_BYTES, f"the canvas rose by {peak} bytes"
    status, error, peak = server.peak_of("shapes", path=f"shapes-bomb/{server.top}", element="cell_boundaries")
    assert (status, error["kind"]) == (400, "bad-request") and "MAX_SHAPES" in error["message"], error
    assert peak < REFUSAL_PEAK_BYTES, f"the shapes request rose by {peak} bytes"
    assert server.alive()


def test_a_result_claiming_a_huge_size_answers_400(server: Server) -> None:
    """Item 11: a results table whose column claims 10^12 values is refused from its metadata."""
    for name in ("result_page", "result_csv"):
        status, error, peak = server.peak_of(name, path=server.hostile["hostile-5555"][0], result="res_big")
        assert status == 400 and "MAX_RESULT_BYTES" in error["message"], (name, error)
        assert peak < REFUSAL_PEAK_BYTES, f"{name} rose by {peak} bytes"
    assert server.alive()


def test_a_compare_of_many_names_and_extreme_deltas_is_bounded(server: Server) -> None:
    """Item 11: unique names on both sides send MAX_COUNTS of them, and deltas of ±1.7e308 a finite histogram."""
    (_, a), (path, b) = server.hostile["hostile-3333"], server.hostile["hostile-4444"]
    status, comparison, peak = server.peak_of("compare", path=path, a=a, b=b)
    assert status == 200, comparison
    changed = {change["column"]: change for change in comparison["obs"]["changed"]}
    names = changed["name"]
    assert len(names["counts_a"]) == MAX_COUNTS < names["n_changed"]
    assert names["counts_other_a"] == names["n_changed"] - MAX_COUNTS
    edges = changed["extreme"]["delta_histogram"]["edges"]
    assert edges and all(np.isfinite(edges))
    assert peak < REFUSAL_PEAK_BYTES, f"the compare rose by {peak} bytes"
    assert server.alive()


def test_a_compare_across_a_result_claiming_a_huge_size_answers_400(server: Server) -> None:
    """Item 11: a compare reads both sides' uns; one whose result claims 10^12 values is refused, not allocated."""
    (_, a), (path, b) = server.hostile["hostile-4444"], server.hostile["hostile-5555"]
    status, error, peak = server.peak_of("compare", path=path, a=a, b=b)
    assert (status, error["kind"]) == (400, "element") and "MAX_UNS_BYTES" in error["message"], error
    assert peak < REFUSAL_PEAK_BYTES, f"the compare rose by {peak} bytes"
    assert server.alive()


def test_listings_of_huge_manifests_hold_none_of_them(server: Server) -> None:
    """Item 10: a folder of versions with 24 MiB manifests, listed again and again, costs the server
    less than one of them, and lists them without titles."""
    for _ in range(3):
        status, listing, peak = server.peak_of("versions", path="padded")
        assert status == 200, listing
        assert listing["versions"] and all(entry["title"] is None for entry in listing["versions"])
        assert PADDED_MANIFEST_BYTES > MAX_TITLE_MANIFEST_BYTES and peak < PADDED_MANIFEST_BYTES, (
            f"a listing rose by {peak} bytes"
        )


@pytest.mark.parametrize(
    "params",
    [
        {"region": "0,0,1e300,1e300"},
        {"region": "-inf,0,inf,10"},
        {"region": "nan,0,10,10"},
        {"region": "0,0,0,0"},
        {"region": "0,0,1e14,1e14", "max_side": 10**12},
        {"region": "0,0,100,100", "max_side": 0},
    ],
)
def test_hostile_regions_answer_400(server: Server, params: dict[str, Any]) -> None:
    status, error, peak = server.peak_of("image_region", path=f"good/{server.top}", figure=FIGURE, **params)
    assert status == 400 and error["kind"] != "internal", error
    assert peak < REFUSAL_PEAK_BYTES, f"the server rose by {peak} bytes"
    assert server.alive()


@pytest.mark.parametrize(
    "params",
    [{"level": 10**12}, {"level": -1}, {"x": 10**18}, {"y": -(10**18)}, {"x": "1e999"}],
)
def test_tiles_off_the_pyramid_answer_400(server: Server, params: dict[str, Any]) -> None:
    status, error, peak = server.peak_of(
        "image_tile", path=f"good/{server.top}", **{**IMAGE_REQUESTS["image_tile"], **params}
    )
    assert status == 400 and error["kind"] != "internal", error
    assert peak < REFUSAL_PEAK_BYTES, f"the server rose by {peak} bytes"


def test_an_unreadable_folder_answers_403_naming_it(server: Server) -> None:
    status, error = server.call("history", path=f"locked/{server.top}")
    assert (status, error["kind"]) == (403, "permission-denied"), error
    assert "'locked'" in error["message"] and str(Path(__file__).anchor) + "tmp" not in error["message"]
    status, error = server.call("versions", path="locked")
    assert (status, error["kind"]) == (403, "permission-denied"), error
    status, error = server.call("history", path=f"sealed/{server.top}")
    assert (status, error["kind"]) == (403, "permission-denied"), error
    assert f"'sealed/{server.top}" in error["message"], error


def test_the_server_lives_after_every_hostile_request(server: Server) -> None:
    """Runs last in this module: everything above left the server answering ordinary requests."""
    assert server.alive()
    status, _ = server.call("image_tile", path=f"good/{server.top}", **IMAGE_REQUESTS["image_tile"])
    assert status == 200
