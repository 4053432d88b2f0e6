"""What the app keeps in a table's uns: figures, results, and how to draw them.

No Jupyter here: the service and the exporters sit on top of these modules.
"""

from __future__ import annotations

from sds_jupyter.errors import ElementError, FigureError, ResultError
from sds_jupyter.studio.figurespecs import ParsedFigure, parse_figure, read_figure, read_figures
from sds_jupyter.studio.resultstore import ResultEntry, read_result, read_results
from sds_jupyter.studio.uns import STUDIO_KEY, studio_section

__all__ = [
    "STUDIO_KEY",
    "ElementError",
    "FigureError",
    "ParsedFigure",
    "ResultEntry",
    "ResultError",
    "parse_figure",
    "read_figure",
    "read_figures",
    "read_result",
    "read_results",
    "studio_section",
]
