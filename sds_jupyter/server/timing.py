"""The ``Server-Timing`` header of a REST reply: how long each part of the request took here.

Why: the first tissue of a large figure waits on several requests, and the browser alone cannot
tell the server's work from the network and its own decode. Chromium exposes this header to the
page (``PerformanceResourceTiming.serverTiming``, same origin), so the benchmarks and DevTools
read, per request, the service opened, the request answered, the reply framed and coded, beside
the bytes and the time to first byte the page measures itself.
"""

from __future__ import annotations

import time

__all__ = ["ServerTiming"]


class ServerTiming:
    """The parts of one request, each the wall time from the end of the part before (ms)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self._last = self.started
        self.parts: list[tuple[str, float]] = []
        #: Where the request's derived data came from: (what, source), named after the times.
        self.sources: list[tuple[str, str]] = []

    def lap(self, name: str) -> None:
        """Close part ``name`` (a token: letters, digits, ``-``), timed from the part before."""
        now = time.perf_counter()
        self.parts.append((name, (now - self._last) * 1e3))
        self._last = now

    def header(self) -> str:
        """The header's value: each part, then ``total`` since the request began, then each source.

        A source is an entry named by where the data came from (``built``, ``disk``, ``memory``),
        its ``desc`` what it was (``points``, ``cells``): no duration, the parts above hold the time.
        """
        total = (time.perf_counter() - self.started) * 1e3
        times = [f"{name};dur={ms:.1f}" for name, ms in [*self.parts, ("total", total)]]
        return ", ".join([*times, *(f'{source};desc="{what}"' for what, source in self.sources)])
