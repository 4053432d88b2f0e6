"""Issue 38, item 15: the widget outside IPython (plain Python, marimo, voila: no ``get_ipython()``).

"Bind as `adata`" there has no namespace to bind in: it must say so, and the history row must not
claim "bound". Everything else keeps working (requests, ``browser.adata``, ``save``). Run in a
plain Python process of its own, where IPython has never started.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

pytest_plugins = ["kit.fixtures_service"]

#: What each script starts with: the widget module, with stand-ins for a front end not built (as
#: kit/fixtures_service does), the stand-ins written to the folder named by the script's second argument.
PRELUDE = """
import sys
from pathlib import Path
from sds_jupyter import widget

for attribute, name in (("_ESM_PATH", "widget.js"), ("_APP_PATH", "widget-app.js"), ("_CSS_PATH", "widget.css")):
    if not getattr(widget, attribute).is_file():
        stand_in = Path(sys.argv[2]) / name
        stand_in.write_text("export default { render() {} };" if name.endswith(".js") else "")
        setattr(widget, attribute, stand_in)
"""


def _run(script: str, version: Path, scratch: Path) -> subprocess.CompletedProcess[str]:
    """``script`` after :data:`PRELUDE` in a plain Python process of its own (IPython never started)."""
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + script, str(version), str(scratch)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


#: The process's script: the widget used as marimo uses it, what it answered printed as JSON.
SCRIPT = """
import json
import numpy as np


browser = widget.VersionBrowser(sys.argv[1])
history = browser.answer({"type": "request", "name": "history", "params": {}}).data
reply = browser.answer({"type": "open_adata", "id": 1, "version": 1}).data
opened = {"bound": browser.bound, "selected": browser.selected, "n_obs": browser.adata.n_obs}
marks = [row.get("marks", "") for row in browser._summary_rows()]
adata = browser.adata
adata.obs["plain"] = np.arange(adata.n_obs, dtype=float)
top = browser.save("saved from plain Python")
print(json.dumps({
    "ipython": "IPython" in sys.modules and sys.modules["IPython"].get_ipython() is not None,
    "top_depth": history["top_depth"], "message": reply["message"], **opened, "marks": marks,
    "saved": str(top), "after_save": {"bound": browser.bound, "selected": browser.selected},
}))
"""


def test_bind_outside_ipython_says_nothing_was_bound(studio_copy, tmp_path: Path) -> None:
    done = _run(SCRIPT, studio_copy.v2, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["ipython"] is False and seen["top_depth"] == 2
    assert seen["message"].startswith("Not bound: no IPython kernel here, so no variable `adata` was set.")
    assert "v1 “Studio section” is selected: use `browser.adata`" in seen["message"]
    assert (seen["bound"], seen["selected"]) == (-1, 1)  # the row shows no "bound" mark
    assert not any("bound" in mark for mark in seen["marks"]) and "selected" in seen["marks"][1]
    assert seen["n_obs"] > 0
    # the save went onto v1 (where browser.adata came from) and binds nothing either
    assert Path(seen["saved"]).is_dir() and seen["after_save"] == {"bound": -1, "selected": 2}


#: A kernel's first widget: the first figure's libraries not imported by making it, imported by the
#: warming thread it starts (the server does the same when it loads the extension).
WARM_SCRIPT = """
from sds_jupyter.service import warm


before = [m for m in warm.WARM_MODULES if m in sys.modules]
first = widget.VersionBrowser(sys.argv[1])
second = widget.VersionBrowser(sys.argv[1])
thread = warm.warm_once(None)
thread.join()
print(before, [m for m in warm.WARM_MODULES if m not in sys.modules], thread.name)
"""


def test_a_kernels_first_widget_warms_the_first_figures_libraries(studio_copy, tmp_path: Path) -> None:
    done = _run(WARM_SCRIPT, studio_copy.v2, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # none imported by making the widget's module, all of them once a widget was made; one thread for both widgets
    assert done.stdout.strip().splitlines()[-1] == "[] [] sds-jupyter-warm"
