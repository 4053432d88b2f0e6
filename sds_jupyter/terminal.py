"""Text for a terminal: what data says, never what a terminal would obey.

Titles, messages, folder names and keys come from downloads. Printed raw, an
ESC starts a control sequence (recolouring, retitling the window, rewriting
lines above), BEL rings, C1 controls act like ESC on some terminals, and bidi
overrides make a line read differently from what it holds. Everything the
command line prints goes through :func:`escape_controls`.
"""

from __future__ import annotations

import re

__all__ = ["escape_controls"]

# C0 and DEL, C1, the soft hyphen, Arabic letter mark, Mongolian vowel separator,
# zero-width and directional marks (U+200B-200F), line and paragraph separators,
# bidi embeddings and overrides (U+202A-202E), word joiner to bidi isolates
# (U+2060-2069), the BOM, interlinear annotation controls, tag characters, and
# lone surrogates (an undecodable file name), which no terminal can print.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_controls(text: str) -> str:
    """``text`` with every control, format and bidi character written as a visible escape.

    Newlines are escaped too: one call makes one line, so data cannot fake
    another line of output.
    """
    return _UNSAFE.sub(_escape, text)
