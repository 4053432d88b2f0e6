"""Figure specs and result meta from a downloaded dataset, read as an attacker would write them.

They are JSON text in a table's uns, so they go through the stack's bounded
parser (``loads_spec``): a bad one shows in place with a one-line reason that
names it, the rest of the version still opens, and nothing a dataset adds to a
spec (a data URL, an ``href``, an expression) is passed on to the browser.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sds_jupyter.jsontext import (
    MAX_SPEC_BYTES,
    MAX_SPEC_DEPTH,
    JSONRefused,
    json_depth,
    loads_bounded,
    loads_spec,
    text_depth,
)
from sds_jupyter.service import StackService, dispatch
from sds_jupyter.stack import Stack
from sds_jupyter.stack.write.encode import studio_path
from sds_jupyter.stack.write.writer import VersionWriter
from sds_jupyter.studio.charts import column_of, vega_field
from sds_jupyter.studio.figurespecs import declared_fields, parse_figure
from sds_jupyter.studio.palette import column_palette, fixed_palette
from sds_jupyter.studio.resultstore import read_result

pytest_plugins = ["kit.fixtures_service"]

CHART = {"kind": "chart", "title": "Top", "result": "res_markers", "mark": "bar", "x": "scores", "y": "names"}


def _nested(levels: int) -> str:
    return '{"kind": "chart", "x": ' + "[" * levels + "]" * levels + "}"


#: Each hostile text, and a word its one-line reason must carry.
HOSTILE = {
    "deep": (_nested(MAX_SPEC_DEPTH + 1), "levels deep"),
    "very_deep": (_nested(100_000), "levels deep"),
    "twice_kind": ('{"kind": "chart", "kind": "canvas", "table": "t"}', "'kind' appears more than once"),
    "infinite": ('{"kind": "canvas", "point_size": 1e999}', "out of range"),
    "nan": ('{"kind": "canvas", "point_size": NaN}', "NaN"),
    "huge_int": ('{"kind": "canvas", "point_size": 9007199254740993}', "out of range"),
    "many_digits": ('{"kind": "canvas", "point_size": ' + "9" * 50_000 + "}", "out of range"),
    "too_big": (json.dumps({"kind": "canvas", "caption": "x" * MAX_SPEC_BYTES}), f"larger than {MAX_SPEC_BYTES}"),
}


def _keys(node: Any) -> Iterator[str]:
    """Every object key anywhere in ``node``."""
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            yield from item
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_figure_is_unsupported_with_a_one_line_reason(name: str) -> None:
    text, word = HOSTILE[name]
    figure = parse_figure(name, text)
    assert figure.kind == "unsupported"
    assert figure.reason is not None and "\n" not in figure.reason and len(figure.reason) <= 240
    assert figure.reason.startswith("not JSON this app reads") and word in figure.reason
    assert isinstance(figure.spec, str) and len(figure.spec) <= 4097  # shown as text, cut short


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_result_meta_names_the_result_and_keeps_its_tables(name: str) -> None:
    text, word = HOSTILE[name]
    uns = {"spatial_data_studio": {"results": {"r": {"table": pd.DataFrame({"a": [1]}), "meta": text}}}}
    entry = read_result(uns, "r")
    assert entry.meta is None and entry.error is not None
    assert entry.error.startswith("The meta of result 'r' is not JSON") and word in entry.error
    assert list(entry.tables) == ["table"]


def test_a_deep_mapping_figure_is_unsupported_not_a_recursion_error() -> None:
    deep: dict[str, Any] = {"kind": "chart"}
    for _ in range(100_000):
        deep = {"x": deep}
    figure = parse_figure("deep", deep)
    assert figure.kind == "unsupported" and figure.reason is not None


def test_the_bounded_parser_keeps_its_defaults_for_manifests() -> None:
    # Repeated keys and large sizes stay readable where manifests are parsed (the fast decoder).
    assert loads_bounded('{"a": 1, "a": 2, "size": 12345678901234567890}') == {"a": 2, "size": 12345678901234567890}
    with pytest.raises(JSONRefused, match="appears more than once"):
        loads_spec('{"a": {"b": 1, "b": 1}}')
    assert loads_spec(json.dumps(CHART)) == CHART


def test_only_declared_fields_of_a_figure_are_passed_on() -> None:
    spec = {
        **CHART,
        "usermeta": {"embedOptions": {"loader": {"baseURL": "https://evil.example/"}}},
        "data": {"url": "https://evil.example/cells.csv"},
        "transform": [{"calculate": "alert(1)", "as": "x"}, {"filter": "datum.x"}],
        "encoding": {"href": {"field": "url"}},
    }
    canvas = {
        "kind": "canvas",
        "channels": [{"name": "DAPI", "color": "#ffffff", "onload": "alert(1)"}],
        "viewport": {"zoom": 1, "expr": "alert(1)"},
        "category_colors": {"tumor": "#d62728"},
    }
    assert declared_fields(parse_figure("c", json.dumps(spec)).spec) == CHART
    assert declared_fields(parse_figure("v", json.dumps(canvas)).spec) == {
        "kind": "canvas",
        "channels": [{"name": "DAPI", "color": "#ffffff"}],
        "viewport": {"zoom": 1},
        "category_colors": {"tumor": "#d62728"},
    }


# ---------------------------------------------------------------- a whole version through the service

MARKUP = "<img src=x onerror=alert(1)>"
EXPRESSION = 'datum["x"] + alert(1)'


@pytest.fixture(scope="module")
def hostile_version(tmp_path_factory: pytest.TempPathFactory, studio_stack: Any) -> Path:
    """A version over (a copy of) the studio stack whose figures and results are hostile, beside good ones."""
    datasets = Path(shutil.copytree(studio_stack.datasets, tmp_path_factory.mktemp("hostile") / "datasets"))
    writer = VersionWriter(Stack.resolve(datasets / studio_stack.v1.name))
    for name, (text, _) in HOSTILE.items():
        writer.set_figure("table", f"bad_{name}", text)
    extras = {
        "usermeta": {"x": 1},
        "data": {"url": "https://evil.example/a.csv"},
        "transform": [{"calculate": "alert(1)", "as": "z"}],
        "encoding": {"href": {"field": "z"}},
    }
    writer.set_figure("table", "vega_bits", json.dumps({**CHART, **extras}))
    hostile_columns = pd.DataFrame({MARKUP: [1.0, 2.0], EXPRESSION: ["a", "https://evil.example/"]})
    writer.set_result("table", "res_hostile", {"table": hostile_columns}, {"kind": "other", "title": MARKUP})
    writer.set_figure(
        "table", "hostile_columns", json.dumps({**CHART, "result": "res_hostile", "x": MARKUP, "y": EXPRESSION})
    )
    writer.set_result("table", "res_bad_meta", {"table": hostile_columns}, {"kind": "other"})
    # set_result writes good meta only; another tool could write any text there
    bad_meta = {"table": hostile_columns, "meta": HOSTILE["twice_kind"][0]}
    writer._put(studio_path("table", "results", "res_bad_meta"), bad_meta)
    return writer.commit(datasets / "hostile-3333", title="Hostile")


def test_hostile_figures_show_in_place_and_the_rest_of_the_version_opens(hostile_version: Path) -> None:
    service = StackService(hostile_version)
    figures = {
        f["id"]: f for f in json.loads(json.dumps(dispatch(service, "figures").data, allow_nan=False))["figures"]
    }
    for name, (_, word) in HOSTILE.items():
        bad = figures[f"bad_{name}"]
        assert bad["kind"] == "unsupported" and word in bad["reason"] and "\n" not in bad["reason"]
    assert figures["fig_chart"]["kind"] == "chart" and figures["fig_canvas"]["kind"] == "canvas"
    results = {r["id"]: r for r in dispatch(service, "results").data["results"]}
    assert "res_markers" in results and "res_hostile" in results
    assert "'kind' appears more than once" in results["res_bad_meta"]["error"]["message"]


def test_nothing_from_a_figure_becomes_a_url_link_or_expression(hostile_version: Path) -> None:
    figures = {f["id"]: f for f in dispatch(StackService(hostile_version), "figures").data["figures"]}
    bits = figures["vega_bits"]
    assert bits["kind"] == "chart" and bits["spec"] == CHART
    columns = figures["hostile_columns"]
    assert columns["kind"] == "chart", columns.get("reason")
    for figure in (bits, columns):
        vega = figure["vega_lite"]
        assert set(vega["data"]) == {"values"}
        assert vega["mark"]["type"] == "bar"
        assert not set(_keys(vega)) & {"url", "href", "expr", "signal", "calculate", "filter", "transform", "usermeta"}
    # the hostile column names are field names (escaped where Vega reads access: `[`, `.`),
    # titles and data keys, never anything else
    encoding = columns["vega_lite"]["encoding"]
    assert (encoding["x"]["field"], encoding["y"]["field"]) == (MARKUP, vega_field(EXPRESSION))
    assert column_of(encoding["y"]["field"]) == EXPRESSION == encoding["y"]["title"]
    assert set(columns["vega_lite"]["data"]["values"][0]) == {MARKUP, EXPRESSION}


def test_uns_colors_reach_a_chart_only_as_hex() -> None:
    cats = ["a", "b"]
    assert column_palette("x", cats, {"x_colors": ["red", "#00ff0080"]}) == ["#ff0000", "#00ff00"]
    hostile = {"x_colors": ["url(https://evil.example/#a)", "#000000"]}
    assert column_palette("x", cats, hostile) == fixed_palette(2)


#: Strings full of what could pass for structure: brackets, quotes, backslashes, escapes.
_tricky_text = st.text(alphabet=st.sampled_from(list('[]{}"\\,:ab\u00e9\n')), max_size=8)
_json_docs = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _tricky_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_tricky_text, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None, database=None)
@given(doc=_json_docs, ascii_only=st.booleans(), indent=st.sampled_from([None, 0, 2]))
def test_the_depth_read_off_the_text_is_the_documents(doc: Any, ascii_only: bool, indent: int | None) -> None:
    """loads_bounded measures nesting on the text (C-level passes): it must agree with the decoded document."""
    text = json.dumps(doc, ensure_ascii=ascii_only, indent=indent)
    assert text_depth(text) == json_depth(doc)
    assert text_depth(text, limit=1) == min(json_depth(doc), 2)


def test_nesting_past_the_limit_is_refused_at_any_size() -> None:
    assert loads_bounded("[" * 64 + "]" * 64) is not None
    for text in ("[" * 65 + "]" * 65, '{"a":' * 65 + "0" + "}" * 65, '[{"k": "]]]"}' + "," + "[" * 70 + "]" * 70 + "]"):
        with pytest.raises(JSONRefused, match="nests more than 64 levels"):
            loads_bounded(text)
