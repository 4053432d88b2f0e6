"""The root's consolidated index decoded for a save: the sliced decode gives what the full one gives.

A root written compact (as the writer writes it) is decoded without encoding its entries again,
each entry kept as its slice of the text (issue 42). That is only right when the slice is what
encoding the decoded entry would give, so every test here holds the two decodes to the same
``head`` and entries, byte for byte and in order, or to the same refusal, on generated documents:
compact as the writer writes them, written otherwise (indented, unescaped, numbers spelled
another way, keys repeated), and mutated into text that is not JSON or nests too deep.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sds_jupyter.jsontext import MAX_JSON_DEPTH, JSONRefused, compact_facts
from sds_jupyter.stack.rootindex import COMPACT, CarriedIndex, _sliced

_OPEN = '"consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{'

#: Strings full of what could pass for structure or need escaping: brackets, quotes, colons,
#: backslashes, control characters, DEL, non-ASCII and astral characters, lone surrogates.
_tricky_text = st.text(
    alphabet=st.sampled_from(list('[]{}"\\,: :ab/\u00e9\n\t\x00\x1f\x7f\ud800\U0001f600')), max_size=8
)
_numbers = (
    st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats()  # NaN and the infinities too: the root is read leniently
    | st.sampled_from([0.0, -0.0, 1e16, 1e-7, 1.5e300, 2**53 + 1])
)
_values = st.recursive(
    st.none() | st.booleans() | _numbers | _tricky_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_tricky_text, inner, max_size=4),
    max_leaves=30,
)
_paths = st.text(alphabet=st.sampled_from(list('ab/_"\\\u00e9:')), min_size=1, max_size=12)
_index = st.dictionaries(_paths, _values, max_size=6)
_head = st.dictionaries(_tricky_text.filter(lambda key: key != "consolidated_metadata"), _values, max_size=4)


def _as_written(head: dict[str, Any], index: dict[str, Any]) -> str:
    """The root as write_root_index writes it: compact fields, then the index, entries in order."""
    fields = json.dumps(head, separators=COMPACT)[1:-1]
    members = ",".join(f"{json.dumps(path)}:{json.dumps(entry, separators=COMPACT)}" for path, entry in index.items())
    return f"{{{fields}{',' if fields else ''}{_OPEN}{members}}}}}}}"


def _outcome(decode: Any, raw: bytes) -> tuple[str, ...]:
    """What a decode gives, as text compared byte for byte: the head as the writer encodes it and each
    entry in order, or the refusal's type and message."""
    try:
        carried = decode(raw)
    except JSONRefused as exc:
        return ("refused", type(exc).__name__, str(exc))
    assert carried.raw == raw
    entries = None if carried.entries is None else json.dumps(list(carried.entries.items()))
    return ("decoded", json.dumps(carried.head, separators=COMPACT), str(entries))


def _same(raw: bytes) -> tuple[str, ...]:
    sliced = _outcome(CarriedIndex.decode, raw)
    assert sliced == _outcome(CarriedIndex.decode_full, raw)
    return sliced


@settings(max_examples=300, deadline=None, database=None)
@given(head=_head, index=_index)
def test_a_root_as_the_writer_writes_it_is_sliced_into_the_entries_a_full_decode_encodes(
    head: dict[str, Any], index: dict[str, Any]
) -> None:
    raw = _as_written(head, index).encode()
    assert _sliced(raw) is not None  # the fast path applies to what the writer writes
    assert _same(raw)[0] == "decoded"


@settings(max_examples=300, deadline=None, database=None)
@given(
    head=_head,
    index=_index,
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 1]),
    separators=st.sampled_from([None, COMPACT, (", ", ": ")]),
)
def test_a_root_written_any_other_way_decodes_as_in_full(
    head: dict[str, Any], index: dict[str, Any], ascii_only: bool, indent: int | None, separators: Any
) -> None:
    doc = {**head, "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": index}}
    _same(
        json.dumps(doc, ensure_ascii=ascii_only, indent=indent, separators=separators).encode("utf-8", "surrogatepass")
    )


#: Spellings of the same values that json's encoder does not write, and keys written twice.
_RESPELLINGS = [
    ('"a"', '"\\u0061"'),
    ('"a"', '"\\u0061"'.upper().replace("\\U", "\\u")),
    ("\\u00e9", "\\u00E9"),
    ("\\n", "\\u000a"),
    ("/", "\\/"),
    ("0.0", "0.00"),
    ("0.0", "0e0"),
    (":0", ":-0"),
    (":1", ":1.0e0"),
    ("1e+16", "1E16"),
    ("1e-07", "1e-7"),
    (",", ", "),
    (":", ": "),
    ("{", '{"a":1,"a":2,'),
    ("{", '{"dup":1,"dup":1,'),
    ('{"', '{"k":[],"k":[],"'),
    ("}", " }"),
    (_OPEN, _OPEN + '"p":{},"p":{},'),
    ('{"', '{"consolidated_metadata":1,"'),
]


@settings(max_examples=300, deadline=None, database=None)
@given(head=_head, index=_index, respelling=st.sampled_from(_RESPELLINGS), which=st.integers(0, 50))
def test_a_value_spelled_otherwise_or_a_key_written_twice_decodes_as_in_full(
    head: dict[str, Any], index: dict[str, Any], respelling: tuple[str, str], which: int
) -> None:
    text = _as_written(head, index)
    old, new = respelling
    places = [at for at in range(len(text)) if text.startswith(old, at)]
    if places:
        at = places[which % len(places)]
        text = text[:at] + new + text[at + len(old) :]
    _same(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None, database=None)
@given(
    head=_head,
    index=_index,
    at=st.integers(0, 10**6),
    cut=st.integers(0, 3),
    insert=st.sampled_from(
        ["", "[", "]", "{", "}", '"', "\\", ",", ":", " ", "x", "1", "-", "\u00e9", "\x00", "[" * 70]
    ),
)
def test_a_root_mutated_into_anything_decodes_or_is_refused_as_in_full(
    head: dict[str, Any], index: dict[str, Any], at: int, cut: int, insert: str
) -> None:
    text = _as_written(head, index)
    at %= len(text) + 1
    _same((text[:at] + insert + text[at + cut :]).encode("utf-8", "surrogatepass"))


def test_nesting_past_the_limit_is_refused_with_the_full_decodes_error() -> None:
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    for raw in (f'{{{_OPEN}"p":{deep}}}}}}}', f'{{"a":{deep},{_OPEN}}}}}}}'):
        outcome = _same(raw.encode())
        assert outcome[0] == "refused" and "nests more than 64" in outcome[2]
    at_limit = "[" * (MAX_JSON_DEPTH - 3) + "]" * (MAX_JSON_DEPTH - 3)
    assert _same(f'{{{_OPEN}"p":{at_limit}}}}}}}'.encode())[0] == "decoded"


def test_compact_facts_count_every_key_written_and_read_the_depth_as_text_depth() -> None:
    text = '{"a":{"b":":x","c":[{"d":"\\"e\\":"}]},"a":1}'
    facts = compact_facts(text)
    assert facts.keys == 5 and facts.depth == 4 and facts.written
    assert not compact_facts('{"a": 1}').written and not compact_facts('{"a":"\u00e9"}').written


@given(text=st.text(alphabet=st.sampled_from(list('"{}[]:,ab\\ ')), max_size=200), mark=st.sampled_from(['"', "", "#"]))
def test_strings_are_taken_out_by_numpy_as_by_splitting(text: str, mark: str) -> None:
    """Large texts take their strings out by numpy (a deep stack's root): the same as every other part
    of a split, for any text, an odd number of quotes included, so the facts read off it are the same."""
    from sds_jupyter.jsontext import _outside_strings, _outside_strings_array

    plain = text.replace("\\\\", "").replace('\\"', "")
    split = mark.join(plain.split('"')[::2])
    assert _outside_strings_array(plain.encode("ascii"), mark.encode("ascii")).decode("ascii") == split
    big = text.replace("\\", "") * (32 * 1024 // max(len(text), 1) + 1)  # past the size numpy takes over at
    assert _outside_strings(big, mark) == mark.join(big.split('"')[::2])


def test_the_roots_a_save_writes_are_sliced(demo_top: Path, tmp_path: Path) -> None:
    """What the writer writes takes the sliced decode (else the save pays for the full one), and a chain
    of saves each decoding its parent's root afresh writes what the full decode would carry."""
    from sds_jupyter import open_anndata, save_version
    from sds_jupyter.stack.caches import StackCaches

    shutil.copytree(demo_top.parent, tmp_path / "datasets", symlinks=True)
    top = tmp_path / "datasets" / demo_top.name
    adata = open_anndata(top)
    for step in range(2):
        adata.obs[f"score_{step}"] = np.full(adata.n_obs, step + 0.5)
        adata.uns[f"note_{step}"] = f"caf\u00e9 {step}"
        top = save_version(top, adata, title="t", caches=StackCaches())  # nothing kept: decoded afresh
        raw = (top / "overlay" / "zarr.json").read_bytes()
        sliced = _sliced(raw)
        assert sliced is not None and sliced.entries is not None
        assert _same(raw)[0] == "decoded"
        assert f"tables/table/obs/score_{step}" in sliced.entries
        adata = open_anndata(top)


@pytest.mark.parametrize("raw", [b"", b"{}", b"[]", b"null", b'{"a":1}', b"\xef\xbb\xbf{}", b'{"a":1} '])
def test_roots_without_an_index_or_not_json_decode_as_in_full(raw: bytes) -> None:
    _same(raw)


# -- a decoded root kept on disk (issue 42: a new process's save need not decode it again) -----------


def _garbled(record: dict[str, Any], text_length: int) -> list[dict[str, Any]]:
    """Records of the wrong shape for a root of ``text_length`` characters: each must read as no record."""
    bounds, paths = record["bounds"], record["paths"]
    out = [
        {**record, "form": "sds-jupyter root index record 0"},
        {**record, "head": [1]},
        {**record, "head": {**record["head"], "consolidated_metadata": {}}},
        {**record, "bounds": bounds[:-1]},
        {**record, "bounds": [float(b) for b in bounds]},
        {**record, "bounds": [b + 1 for b in bounds]},  # slices not an object's text
        {**record, "bounds": [*bounds[:-1], text_length + 1]},
        {**record, "paths": [1 for _ in paths]},
    ]
    if len(paths) > 1:
        out.append({**record, "paths": [paths[0], *paths[:-1]]})  # a path twice
        out.append({**record, "bounds": [bounds[2], bounds[3], bounds[0], bounds[1], *bounds[4:]]})  # out of order
    return out


@settings(max_examples=150, deadline=None, database=None)
@given(head=_head, index=_index)
def test_a_root_kept_on_disk_reads_back_as_it_decodes_and_a_garbled_record_is_not_used(
    head: dict[str, Any], index: dict[str, Any]
) -> None:
    import tempfile

    from sds_jupyter.stack import rootindex
    from sds_jupyter.stack.storage.ondisk import DiskStacks

    raw = _as_written(head, index).encode("utf-8", "surrogatepass")
    expected = _outcome(CarriedIndex.decode, raw)
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(rootindex, "DISK_MIN_BYTES", 0)
        disk = DiskStacks(Path(folder) / "records")
        assert _outcome(lambda r: rootindex.carried(r, None, disk), raw) == expected  # decoded, then kept
        record = disk.load(rootindex.disk_key(raw))
        sliced = _sliced(raw)
        kept = sliced is not None and sliced.entries is not None
        assert (record is not None) == (kept and all(t[:1] == "{" and t[-1:] == "}" for t in sliced.entries.values()))
        if record is None:
            return
        patch.setattr(rootindex, "_sliced", None)  # read back from the record: no decode
        assert _outcome(lambda r: rootindex.carried(r, None, disk), raw) == expected
        patch.undo()
        patch.setattr(rootindex, "DISK_MIN_BYTES", 0)
        for garbled in _garbled(record, len(raw)):
            disk.save(rootindex.disk_key(raw), garbled)
            assert _outcome(lambda r: rootindex.carried(r, None, disk), raw) == expected


def test_a_new_processs_save_reads_the_root_an_earlier_one_decoded_from_disk(
    demo_top: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save whose caches never saw the parent's root finds it decoded in this user's records (an open
    of another process kept it) and writes the very root a save decoding it afresh writes."""
    from sds_jupyter import open_anndata, save_version
    from sds_jupyter.stack import rootindex
    from sds_jupyter.stack.caches import StackCaches
    from sds_jupyter.stack.storage.ondisk import DiskStacks

    monkeypatch.setattr(rootindex, "DISK_MIN_BYTES", 0)  # the demo's root is small
    shutil.copytree(demo_top.parent, tmp_path / "datasets", symlinks=True)
    top = tmp_path / "datasets" / demo_top.name
    records = tmp_path / "records"
    adata = open_anndata(top, caches=StackCaches(disk=DiskStacks(records)))  # "another process": decodes, keeps
    parent_root = _stack_root(top)
    assert DiskStacks(records).load(rootindex.disk_key(parent_root)) is not None
    adata.obs["score"] = np.full(adata.n_obs, 0.5)

    afresh = save_version(top, adata, title="t", caches=StackCaches())  # decoded afresh, no records
    expected = (afresh / "overlay" / "zarr.json").read_bytes()
    shutil.rmtree(afresh)
    decodes: list[bytes] = []
    monkeypatch.setattr(rootindex, "_sliced", lambda raw, bounds=None: decodes.append(raw))
    from_disk = save_version(top, adata, title="t", caches=StackCaches(disk=DiskStacks(records)))
    assert (from_disk / "overlay" / "zarr.json").read_bytes() == expected
    assert parent_root not in decodes


def _stack_root(top: Path) -> bytes:
    """The root document the stack topped by ``top`` composes."""
    from sds_jupyter.stack import Stack, StackStore

    raw = StackStore(Stack.resolve(top)).read_raw("zarr.json")
    assert raw is not None
    return raw
