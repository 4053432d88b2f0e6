"""The service's first ``cell`` request (a hover) at 1M and 10M cells, beside reading obs whole.

Data: the stacks ``bench_canvas_request.py`` builds (``--data DIR`` reuses them).

A: ``StackService(top).cell(None, figure, index)`` on a new service (cold, as the first
hover after opening a version): each obs column read at the cell's position, its name
read by position.

B: what the request did before: the table's whole obs read (every column, every cell name,
an index of the names) and the row taken from it. Before the timing, A's reply is checked to
equal B's. Never fails on time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _common import alternate, comparison, emit, load_average, machine, quiet_warnings, settle, versions, workdir

sys.path.insert(0, str(Path(__file__).parent))
import bench_canvas as canvas  # noqa: E402 - the figure id
import bench_canvas_request as canvas_request  # noqa: E402 - the stack builder

SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (100_000, 1_000_000)
INDEX = 12_345


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 and 1,000,000 cells, 2 rounds")
    parser.add_argument("--full", action="store_true", help="(no larger size; accepted for run_all)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds per size")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    parser.add_argument("--data", type=Path, default=None, help="build the stacks here once and reuse them")
    return parser.parse_args()


def request(top: Path) -> str:
    """A: the cell request on a new service, as the JSON the server sends."""
    from sds_jupyter.service import StackService

    return json.dumps(StackService(top).cell(None, canvas.FIGURE, INDEX))


def whole_obs(top: Path) -> str:
    """B: the same row from the whole obs, as the request read it before."""
    from sds_jupyter.service import StackService
    from sds_jupyter.studio.jsonable import json_scalar

    obs = StackService(top).table_view().obs
    row = {
        "index": INDEX,
        "name": str(obs.index[INDEX]),
        "columns": [str(column) for column in obs.columns],
        "values": [json_scalar(value) for value in obs.iloc[INDEX].tolist()],
    }
    return json.dumps(row)


def measure(root: Path, n_cells: int, rounds: int) -> dict[str, Any]:
    top, _flat = canvas_request.stacks(root, n_cells)
    settle()
    print(f"{n_cells:,} cells ({load_average()}): A's reply is B's: {request(top) == whole_obs(top)}")
    times_a, times_b = alternate(lambda: request(top), lambda: whole_obs(top), rounds)
    result = comparison(
        f"cell request, {n_cells:,} cells",
        "StackService.cell (cold)",
        "the whole obs read, then the row",
        times_a,
        times_b,
        goal=None,
    )
    print(f"  ({load_average()})")
    return result


def main() -> None:
    args = parse_args()
    quiet_warnings()
    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = args.rounds or (2 if args.quick else 3)
    print(f"machine: {machine()}; {versions()}")
    with workdir(args.keep) as work:
        root = args.data or work
        (root / "datasets").mkdir(parents=True, exist_ok=True)
        results = [measure(root, n_cells, rounds) for n_cells in sizes]
    emit("cell_request", results, sizes=list(sizes))


if __name__ == "__main__":
    main()
