"""The Changes and Compare requests on a table with many obs columns, beside the same with obs read whole.

Data: a base whose N-cell table has ``COLUMNS`` numeric obs columns (quality metrics, as
scanpy leaves them) and cell names, and one version that sets a categorical column
(``cell_type``) and changes one metric, at 100k and 1M cells (``--quick``: 100k only).

A: on a new service (cold, as when a version is opened), ``changes`` of the version (each
``set-obs`` op's column summary) and ``compare`` of the base with it (obs columns added,
removed and changed, matched by cell name): each column they need read alone, and the cell
names once for matching.

B: the same two requests on a new service whose table views first read obs whole (every
column, every cell name): what the requests did before they read columns alone. Before the
timing, A's answer is checked to equal B's. Never fails on time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from _common import emit, machine, quiet_warnings, workdir

sys.path.insert(0, str(Path(__file__).parent))
import bench_canvas_request as canvas_request  # noqa: E402 - side by side on a settled machine

COLUMNS = 30
SIZES = (100_000, 1_000_000)


def build(root: Path, n_cells: int) -> Path:
    """The base (many metric columns) and the version that sets ``cell_type`` and edits one metric."""
    import anndata
    import numpy as np
    import pandas as pd
    import spatialdata
    from spatialdata.models import TableModel

    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.write.writer import VersionWriter

    rng = np.random.default_rng(n_cells)
    base = root / f"obs-{n_cells}-base" / "table.sdata.zarr"
    base.parent.mkdir(parents=True)
    obs = pd.DataFrame(
        {f"metric_{k:02d}": rng.random(n_cells, dtype=np.float32) for k in range(COLUMNS)},
        index=pd.Index([f"cell-{i}" for i in range(n_cells)]),
    )
    spatialdata.SpatialData(tables={"table": TableModel.parse(anndata.AnnData(obs=obs))}).write(base)
    writer = VersionWriter(Stack.resolve(base))
    codes = rng.integers(0, 12, n_cells)
    writer.set_obs("table", "cell_type", pd.Categorical.from_codes(codes, [f"type_{i:02d}" for i in range(12)]))
    edited = obs["metric_00"].to_numpy().copy()
    edited[: n_cells // 10] += 1.0
    writer.set_obs("table", "metric_00", edited)
    return writer.commit(root / f"obs-{n_cells}-v1", title="Cell types", message="clustered")


def requests(top: Path, whole: bool) -> str:
    """The two requests on a new service (``whole``: its views read obs whole first), as JSON."""
    from sds_jupyter.service import StackService, dispatch

    service = StackService(top)
    if whole:
        for depth in (0, 1):
            _ = service.table_view(depth).obs
    changes = dispatch(service, "changes", {}).data
    compare = dispatch(service, "compare", {"a": 0, "b": 1}).data
    return json.dumps({"changes": changes, "obs": compare["obs"]}, default=str)


def measure(root: Path, n_cells: int, rounds: int) -> dict[str, Any]:
    start = time.perf_counter()
    top = build(root, n_cells)
    print(f"  built the {n_cells:,}-cell stack ({COLUMNS + 1} obs columns) in {time.perf_counter() - start:.1f} s")
    return canvas_request.side_by_side(
        f"changes + compare, {n_cells:,} cells",
        "the requests, columns read alone (cold)",
        "the requests with obs read whole (cold)",
        f"A's answer is B's: {requests(top, whole=False) == requests(top, whole=True)}",
        lambda: requests(top, whole=False),
        lambda: requests(top, whole=True),
        rounds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k cells only, 2 rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    args = parser.parse_args()
    quiet_warnings()
    sizes = SIZES[:1] if args.quick else SIZES
    rounds = args.rounds or (2 if args.quick else 3)
    print(f"machine: {machine()}")
    with workdir(args.keep) as work:
        results = [measure(work, n_cells, rounds) for n_cells in sizes]
    emit("obs_requests", results, sizes=list(sizes), columns=COLUMNS + 1)


if __name__ == "__main__":
    main()
