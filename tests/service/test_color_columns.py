"""Issue 40, item 5: a view offers to colour by the columns worth it, not by one value or by an ID."""

from __future__ import annotations

from pathlib import Path

import anndata
import numpy as np
import pandas as pd

from sds_jupyter.service import StackService
from sds_jupyter.studio.canvas import color_columns
from sds_jupyter.studio.cells import FrameCells


def test_single_valued_and_id_columns_are_not_offered() -> None:
    n = 200
    rng = np.random.default_rng(0)
    obs = pd.DataFrame(
        {
            "region": pd.Categorical(["cells"] * n),  # one value: every cell alike
            "cell_id": pd.Categorical([f"cell-{i}" for i in range(n)]),  # a value per cell: noise
            "leiden": pd.Categorical(rng.integers(0, 5, n).astype(str)),
            "area": rng.uniform(10, 100, n),  # numbers stay offered (a colour bar)
            "note": [f"n{i % 3}" for i in range(n)],  # text not known without reading it: offered
        }
    )
    assert color_columns(FrameCells(anndata.AnnData(obs=obs).obs)) == ["leiden", "area", "note"]


def test_the_canvas_payload_offers_them_from_the_stored_categories(demo_top: Path) -> None:
    """Read through the service: the single-valued region key is a column, but not a colouring."""
    service = StackService(demo_top)
    figure = next(f["id"] for f in service.figures(None)["figures"] if f["kind"] == "canvas")
    payload = service.canvas(None, figure).data
    obs = service.adata().obs
    single = [
        c for c in obs.columns if isinstance(obs[c].dtype, pd.CategoricalDtype) and len(obs[c].cat.categories) == 1
    ]
    assert single and set(single) <= set(payload["obs_columns"])
    assert not set(single) & set(payload["color_columns"])
    assert [c for c in payload["obs_columns"] if c not in single] == payload["color_columns"]
