"""A table as a canvas reads it: one obs column or obsm entry at a time.

The service answers from its element-by-element table view; notebooks and tests
hand an AnnData, wrapped by :class:`FrameCells`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from anndata import AnnData

__all__ = ["CellTable", "FrameCells", "cell_table"]


@runtime_checkable
class CellTable(Protocol):
    """What a canvas reads of a table: its size, column names, and a column or obsm entry on demand.

    Why not an AnnData: building one reads every obs column and the cell names, and checks
    the names for uniqueness; at 10,000,000 cells that was most of a canvas request, while
    a figure needs one column and the positions. Columns come in obs order, without the
    cell names (a RangeIndex).
    """

    @property
    def n_obs(self) -> int: ...

    @property
    def obs_columns(self) -> list[str]: ...

    @property
    def uns_without_studio(self) -> Mapping[str, Any]: ...

    def obs_column(self, name: str) -> pd.Series:
        """Obs column ``name`` (KeyError when absent)."""
        ...

    def obsm_array(self, key: str) -> np.ndarray | None:
        """Obsm entry ``key`` as an array, None when absent."""
        ...

    def obs_row(self, position: int) -> pd.DataFrame:
        """Obs row ``position`` as a one-row frame of obs's columns and dtypes (IndexError when out of range)."""
        ...

    def obs_name(self, position: int) -> str:
        """The name of the cell at ``position`` (IndexError when out of range)."""
        ...

    def distinct_values(self, name: str) -> int | None:
        """How many values obs column ``name`` can hold, when known without reading it (a categorical's categories), else None."""
        ...


@dataclass(frozen=True)
class FrameCells:
    """A :class:`CellTable` over an obs DataFrame already in memory (an AnnData's, or one made up)."""

    obs: pd.DataFrame
    obsm: Mapping[str, Any] = field(default_factory=dict)
    uns: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_obs(self) -> int:
        return len(self.obs)

    @property
    def obs_columns(self) -> list[str]:
        return [str(column) for column in self.obs.columns]

    @property
    def uns_without_studio(self) -> Mapping[str, Any]:
        return self.uns

    def obs_column(self, name: str) -> pd.Series:
        return self.obs[name]

    def obsm_array(self, key: str) -> np.ndarray | None:
        return np.asarray(self.obsm[key]) if key in self.obsm else None

    def obs_row(self, position: int) -> pd.DataFrame:
        if not 0 <= position < len(self.obs):
            raise IndexError(position)
        return self.obs.iloc[[position]].reset_index(drop=True)

    def obs_name(self, position: int) -> str:
        if not 0 <= position < len(self.obs):
            raise IndexError(position)
        return str(self.obs.index[position])

    def distinct_values(self, name: str) -> int | None:
        column = self.obs[name]
        return len(column.cat.categories) if isinstance(column.dtype, pd.CategoricalDtype) else None


def cell_table(table: AnnData | CellTable) -> CellTable:
    """``table`` as a :class:`CellTable` (an AnnData through :class:`FrameCells`)."""
    if isinstance(table, CellTable):
        return table
    return FrameCells(table.obs, table.obsm, table.uns)
