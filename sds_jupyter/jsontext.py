"""Parsing JSON that arrives with data: manifests, folder maps, store documents.

Python's decoder and every recursive walker after it (``json.dumps``, a deep
copy, the service's answers) hit the recursion limit on JSON nested a few
hundred levels deep, so one small hostile file could break every request on a
stack. Documents are therefore parsed here, once, and refused when they nest
deeper than :data:`MAX_JSON_DEPTH`; the depth is measured without recursion.

Documents a dataset carries for the app (figure specs, result meta) are read
through the same function with tighter limits: a size, keys that appear once
per object (two ``"kind"`` keys would be read one way here and another way by
a different reader), and integers a browser can hold exactly.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from functools import cache
from typing import Any, NamedTuple

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MAX_SPEC_BYTES",
    "MAX_SPEC_DEPTH",
    "CompactFacts",
    "JSONRefused",
    "compact_facts",
    "json_depth",
    "loads_bounded",
    "loads_spec",
    "text_depth",
]

#: Objects and lists inside one another, at most. Manifests and Zarr documents nest a few levels.
MAX_JSON_DEPTH = 64
#: The largest integer a JavaScript number holds exactly (2**53 - 1).
MAX_SAFE_INTEGER = 2**53 - 1
#: A figure spec or a result's meta, at most: both are a few hundred bytes when the app writes them.
MAX_SPEC_BYTES = 1024 * 1024
#: Objects and lists inside one another in a spec or meta, at most (the app's nest four deep).
MAX_SPEC_DEPTH = 32


class JSONRefused(ValueError):
    """Text that is not JSON, or JSON this reader refuses (too deep, a non-finite number)."""


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        # 1e999 decodes to infinity, which no JSON writer can write back.
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


# Built once. Strict: NaN, Infinity and numbers that overflow to infinity are
# refused, so what is parsed can always be written back as strict JSON.
_STRICT = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_LENIENT = json.JSONDecoder()


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        twice = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise ValueError(f"the key {twice[:40]!r} appears more than once in one object")
    return doc


def _safe_int(text: str) -> int:
    # Refused before int() is asked to convert thousands of digits; past 2**53 a browser rounds.
    value = int(text) if len(text) <= 20 else MAX_SAFE_INTEGER + 1
    if abs(value) > MAX_SAFE_INTEGER:
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


@cache
def _decoder(strict: bool, checked: bool) -> json.JSONDecoder:
    """The decoder for one set of rules; ``checked`` adds unique keys and safe integers (slower: Python hooks)."""
    if not checked:
        return _STRICT if strict else _LENIENT
    constants: dict[str, Any] = {"parse_constant": _reject_constant, "parse_float": _finite_float} if strict else {}
    return json.JSONDecoder(object_pairs_hook=_unique_object, parse_int=_safe_int, **constants)


def json_depth(doc: Any, limit: int | None = None) -> int:
    """How many objects and lists nest in ``doc`` (0 for a scalar); stops counting past ``limit``."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(doc, 1)]
    while pending:
        node, level = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if limit is not None and deepest > limit:
            return deepest
        pending.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def loads_bounded(
    raw: str | bytes,
    *,
    strict: bool = True,
    max_depth: int | None = MAX_JSON_DEPTH,
    max_bytes: int | None = None,
    checked: bool = False,
) -> Any:
    """Decode ``raw``; refuse it (``JSONRefused``) if it is not JSON or nests too deep.

    ``strict`` also refuses ``NaN``, ``Infinity`` and numbers too large for a
    float; Zarr v2 documents may hold ``NaN`` fill values, so they are read lenient.
    ``max_depth=None`` leaves the depth to a caller that checks what it keeps
    (the decoder's own recursion limit is still caught). ``max_bytes`` refuses a
    longer text before parsing. ``checked`` refuses a key repeated in one object
    and integers past :data:`MAX_SAFE_INTEGER`; it costs a Python call per object
    and integer, so it suits small documents (figure specs), not manifests.
    """
    if max_bytes is not None:
        size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise JSONRefused(f"it is larger than {max_bytes} bytes")
    try:
        text = raw.decode(json.detect_encoding(raw)) if isinstance(raw, bytes) else raw
        doc = _decoder(strict, checked).decode(text)
    except RecursionError:
        raise JSONRefused(f"it nests more than {max_depth or MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise JSONRefused(_short(exc)) from None
    if max_depth is not None and text_depth(text, max_depth) > max_depth:
        raise JSONRefused(f"it nests more than {max_depth} levels deep")
    return doc


#: Every byte but the brackets (deleted), and braces made brackets: nesting is all that is left.
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_ONE_KIND = bytes.maketrans(b"{}", b"[]")


def text_depth(text: str, limit: int | None = None) -> int:
    """:func:`json_depth` of the document ``text`` decodes to, read off the text (which must be valid JSON).

    Why: a zarr root's consolidated index can hold tens of thousands of objects, and counting
    them node by node in Python cost a save more than writing its column. With escapes and
    strings taken out, the brackets left nest exactly as the objects and lists do; made one
    kind, each ``replace(b"[]", b"")`` removes one level (it does not look again at what it
    joined). Every step is one C-level pass. Stops counting past ``limit``.
    """
    return _bracket_depth(_outside_strings(text), limit)


class CompactFacts(NamedTuple):
    """What :func:`compact_facts` reads off a JSON text."""

    depth: int
    """:func:`text_depth`."""
    written: bool
    """Whether every token is spelled as json's compact encoder spells its value (see :func:`compact_facts`)."""
    keys: int
    """How many object keys the text holds, repeated ones counted each time."""


def compact_facts(text: str, limit: int | None = None) -> CompactFacts:
    """The nesting, spelling and key count of the valid JSON ``text``, its strings taken out once for all three.

    ``written`` is True when ``text`` is printable ASCII and every token in it is spelled as
    ``json.dumps(..., separators=(",", ":"))`` spells the value it decodes to: no whitespace
    outside strings, only the escapes that encoder writes (the seven short ones, and lowercase
    ``\\uXXXX`` for what it does not write as itself), and numbers as ``repr`` writes them (an
    int in plain digits, no ``-0``). A key repeated in one object it cannot see, but ``keys``
    counts it: a caller that decodes ``text`` compares that with the keys its objects hold. With
    both, each object or list in ``text`` is exactly its value encoded again, and a slice of the
    text can be carried instead of encoded again.
    """
    outside = _outside_strings(text, '"')  # a quote where each string was: a key's is followed by ':'
    depth = _bracket_depth(outside, limit)
    written = text.isascii() and not text.encode("ascii").translate(None, _PRINTABLE_ASCII) and " " not in outside
    if written and "\\" in text:
        written = all(_written_escape(escape) for escape in set(_ESCAPE.findall(text)))
    if written:
        # no space outside strings: the separators made spaces leave the tokens between spaces
        written = all(_written_token(token) for token in set(outside.translate(_SEPARATORS_TO_SPACE).split()))
    return CompactFacts(depth, written, outside.count('":'))


def _outside_strings(text: str, mark: str = "") -> str:
    """``text`` with its strings taken out, each replaced by ``mark``."""
    # escapes only occur in strings, each a backslash and the next character: \\ pairs first
    # (a root index rarely holds one: the two passes are skipped then, a sixth of a save's decode)
    plain = text.replace("\\\\", "").replace('\\"', "") if "\\" in text else text
    if plain.isascii() and mark.isascii():
        raw = plain.encode("ascii")
        if len(raw) >= _ARRAY_MIN_CHARS and "numpy" in sys.modules:  # never imported for this alone
            return _outside_strings_array(raw, mark.encode("ascii")).decode("ascii")
        # split as bytes: about a third quicker than as text
        return mark.encode("ascii").join(raw.split(b'"')[::2]).decode("ascii")
    return mark.join(plain.split('"')[::2])  # valid JSON: every other part lies outside strings


#: From this many characters, strings are taken out by :func:`_outside_strings_array`.
_ARRAY_MIN_CHARS = 32 * 1024


def _outside_strings_array(raw: bytes, mark: bytes) -> bytes:
    """What :func:`_outside_strings` gives for the ASCII ``raw`` (escapes taken out), by numpy.

    Why: splitting a deep stack's root (0.25 MB, 13,000 strings) makes 27,000 objects to join again,
    0.8 ms of a save that decodes its root; this is 0.3 ms. A character lies outside every string when
    an even number of quotes comes up to and including it: that keeps each string's closing quote (the
    mark's place) and drops its opening quote and contents, as joining every other part of a split does,
    for any number of quotes.
    """
    import numpy as np  # already loaded (zarr's, pandas'): a light process (the CLI's --help) splits instead

    codes = np.frombuffer(raw, np.uint8)
    quotes = codes == ord('"')
    # int32: half int64's time, and a count that wrapped keeps its parity
    kept: bytes = codes[(np.cumsum(quotes, dtype=np.int32) & 1) == 0].tobytes()
    return kept if mark == b'"' else kept.replace(b'"', mark)


def _bracket_depth(outside: str, limit: int | None) -> int:
    brackets = outside.encode("ascii", "ignore").translate(_ONE_KIND, _NOT_BRACKETS)
    depth = 0
    while brackets and (limit is None or depth <= limit):
        brackets = brackets.replace(b"[]", b"")
        depth += 1
    return depth


#: Printable ASCII (space to tilde): json's ASCII encoder escapes anything else in a string.
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SHORT_ESCAPES = frozenset(['\\"', "\\\\", "\\b", "\\f", "\\n", "\\r", "\\t"])
#: Code points json's ASCII encoder writes with a short escape (or as themselves, from space to tilde).
_NOT_AS_U = frozenset([0x08, 0x09, 0x0A, 0x0C, 0x0D, *range(0x20, 0x7F)])
_SEPARATORS_TO_SPACE = str.maketrans('[]{}:,"', "       ")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_WORDS = frozenset(["true", "false", "null", "NaN", "Infinity", "-Infinity"])


def _written_escape(escape: str) -> bool:
    if escape in _SHORT_ESCAPES:
        return True
    digits = escape[2:]
    return escape[1] == "u" and digits == digits.lower() and int(digits, 16) not in _NOT_AS_U


def _written_token(token: str) -> bool:
    if token in _WORDS:
        return True
    if _INT.fullmatch(token):
        return token != "-0"
    try:
        return repr(float(token)) == token
    except ValueError:
        return False


def loads_spec(raw: str | bytes) -> Any:
    """A figure spec or result meta kept as JSON text in a table's uns; ``JSONRefused`` says why not.

    The text comes with a dataset someone else wrote, and is passed on to a
    browser, so it is read with the limits for small documents: a size, a
    depth, no key twice in one object, no NaN/Infinity, no integer a browser rounds.
    """
    return loads_bounded(raw, max_bytes=MAX_SPEC_BYTES, max_depth=MAX_SPEC_DEPTH, checked=True)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."
