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

import json
import sys
from pathlib import Path
from typing import Any

from _common import emit

sys.path.insert(0, str(Path(__file__).parent))
import bench_canvas as canvas  # noqa: E402 - the figure id
import bench_canvas_request as canvas_request  # noqa: E402 - the stack builder

INDEX = 12_345


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
    return canvas_request.side_by_side(
        f"cell request, {n_cells:,} cells",
        "StackService.cell (cold)",
        "the whole obs read, then the row",
        f"A's reply is B's: {request(top) == whole_obs(top)}",
        lambda: request(top),
        lambda: whole_obs(top),
        rounds,
    )


def main() -> None:
    sizes, results = canvas_request.ladder(canvas_request.parse_args(__doc__), measure)
    emit("cell_request", results, sizes=list(sizes))


if __name__ == "__main__":
    main()
