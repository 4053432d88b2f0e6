"""Content-coding of the REST replies: gzip (or brotli, when installed) as the browser accepts.

Why per handler and not tornado's ``compress_response``: tornado's transform gzips text and JSON
only, never ``application/octet-stream``, so the framed binary replies (cells, colour columns,
image planes: most of the bytes a figure costs) went uncompressed. Here every reply is coded
when the request's ``Accept-Encoding`` allows it, the body is long enough to gain, and a probe
of its start shows it compresses; bodies that are compressed already (a PNG or JPEG export, a
zarr chunk read raw by ``store_key``) go as they are. Tornado's transform leaves a body that
has a ``Content-Encoding`` alone, so either setting of ``compress_response`` is safe.

The coding is fast on purpose (gzip level 1 via isal; brotli quality 4, for bodies up to
MAX_BROTLI_BYTES only): the reply must not wait longer for its compression than the bytes saved
take on a slow link.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

_gzip: ModuleType
try:  # ISA-L's gzip: the same streams, many times quicker at level 1
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover - the dependency is missing
    import gzip as _gzip

__all__ = ["CODINGS", "MIN_CODED_BYTES", "code_body", "encode", "negotiate", "worth_coding"]

#: A body shorter than this is sent as is: the coding's header and the work cost more than they save.
MIN_CODED_BYTES = 1024
#: How much of a body is compressed first (three pieces) to judge whether the rest is worth it.
PROBE_BYTES = 64 * 1024
#: A body whose probe does not shrink below this fraction is sent as is (compressed already, or noise).
MAX_CODED_RATIO = 0.9
#: Media types that are compressed already: never coded again.
COMPRESSED_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/webp", "image/gif", "application/zip", "application/gzip", "application/pdf"}
)
#: gzip level (isal: 0-3): its fastest level still gains most of what level 9 would on these bodies.
GZIP_LEVEL = 1
#: brotli quality (0-11): 4 takes JSON and colour columns a little below gzip (0.27 of a 0.1 MB
#: colour column against 0.29 in 2 ms); 11 takes seconds.
BROTLI_QUALITY = 4
#: Bodies over this go gzip when the browser takes it. Measured 2026-12-06 on the 100,000-cell demo
#: (load average 13): brotli saved 6% on the cells (0.398 MB against 0.422) for 69 ms against gzip's
#: 4 ms, and 4% on the 3.1 MB overview for 101 ms against 44 ms: less than the time it costs.
MAX_BROTLI_BYTES = 512 * 1024


def _brotli() -> ModuleType | None:
    """The ``brotli`` module when it is installed (an optional extra), else None: gzip alone."""
    if importlib.util.find_spec("brotli") is None:
        return None
    return importlib.import_module("brotli")


BROTLI = _brotli()
#: The codings this server writes, best first.
CODINGS: tuple[str, ...] = ("br", "gzip") if BROTLI is not None else ("gzip",)


def negotiate(accept_encoding: str | None) -> tuple[str, ...]:
    """The codings a request with ``accept_encoding`` takes that this server writes, best first (empty: none).

    Reads the header as RFC 9110 writes it: a list of codings with optional ``q`` weights, where
    ``q=0`` refuses a coding and ``*`` stands for every coding not named; equal weights go in
    this server's order (:data:`CODINGS`).
    """
    weights: dict[str, float] = {}
    for item in (accept_encoding or "").split(","):
        name, _, params = item.strip().partition(";")
        name = name.strip().lower()
        if not name:
            continue
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[name] = weight
    taken = [(weights.get(coding, weights.get("*", 0.0)), -rank, coding) for rank, coding in enumerate(CODINGS)]
    return tuple(coding for weight, _rank, coding in sorted(taken, reverse=True) if weight > 0)


def worth_coding(body: bytes, media_type: str | None = None) -> bool:
    """Whether coding ``body`` saves bytes: long enough, not a compressed format, and its start shrinks."""
    if len(body) < MIN_CODED_BYTES or (media_type or "").split(";")[0].strip().lower() in COMPRESSED_TYPES:
        return False
    if len(body) <= PROBE_BYTES:
        return True  # the coding itself is as cheap as a probe; code_body's caller keeps the shorter
    # a piece at the start, the middle and the end: a reply's buffers differ (random codes beside radii)
    piece = PROBE_BYTES // 3
    whole = memoryview(body)
    probe = b"".join(whole[at : at + piece] for at in (0, len(body) // 2 - piece // 2, len(body) - piece))
    return len(_gzip.compress(probe, compresslevel=GZIP_LEVEL)) < MAX_CODED_RATIO * len(probe)


def code_body(body: bytes, coding: str) -> bytes:
    """``body`` in ``coding`` (one that :func:`negotiate` answered)."""
    coded: bytes
    if coding == "br" and BROTLI is not None:
        coded = BROTLI.compress(body, quality=BROTLI_QUALITY)
        return coded
    if coding == "gzip":
        coded = _gzip.compress(body, compresslevel=GZIP_LEVEL)
        return coded
    raise ValueError(f"no coding {coding!r} here")


def encode(body: bytes, codings: tuple[str, ...], media_type: str | None = None) -> tuple[bytes, str | None]:
    """``(body to send, its Content-Encoding)``: coded when allowed and shorter, else as it is.

    ``codings``: :func:`negotiate`'s answer. brotli is skipped for a body over MAX_BROTLI_BYTES
    when gzip is taken too: past a few MB its quarter fewer bytes cost more time than they save.
    """
    if not codings or not worth_coding(body, media_type):
        return body, None
    coding = codings[0]
    if coding == "br" and len(body) > MAX_BROTLI_BYTES and "gzip" in codings:
        coding = "gzip"
    coded = code_body(body, coding)
    return (coded, coding) if len(coded) < len(body) else (body, None)
