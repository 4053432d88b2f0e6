"""The first open in a new process, timed alone: what a notebook's first ``open_stack`` costs.

    python _first_open.py stack <top version folder>
    python _first_open.py icechunk <repository folder>

Both sides open the store and ``zarr.open_group`` it read-only (a full open). The
imports come before the clock starts; the garbage collector is on, as in any new
process. Prints the seconds the open took, nothing else.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    kind, path = sys.argv[1], sys.argv[2]
    import zarr

    if kind == "stack":
        from sds_jupyter.stack import open_stack

        start, cpu_start = time.perf_counter(), time.process_time()
        store = open_stack(path)
        zarr.open_group(store, mode="r")
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        store.close()
    else:
        import _icechunk

        start, cpu_start = time.perf_counter(), time.process_time()
        repo = _icechunk.open_repository(path)
        zarr.open_group(repo.readonly_session("main").store, mode="r")
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    # the process's CPU time too (all its threads, Icechunk's included): steadier than the wall time
    print(repr(elapsed), repr(cpu), flush=True)
    # Icechunk 1.1.21 has aborted at interpreter exit in a child process (SIGABRT, after its
    # answer was printed): leave without the interpreter's shutdown, on both sides alike.
    os._exit(0)


if __name__ == "__main__":
    main()
