"""The stack library's name for the project's one LRU (:class:`sds_jupyter.lru.ByteLRU`).

Why it lives below: ``limits`` (the lowest layer) bounds the service's readers with it too,
and a layer may only use what sits beneath it.
"""

from __future__ import annotations

from sds_jupyter.lru import ByteLRU

__all__ = ["ByteLRU"]
