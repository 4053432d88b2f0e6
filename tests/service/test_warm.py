"""The first figure's libraries are imported in the background when the server loads the extension."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from sds_jupyter.service.warm import warm_imports

#: In a new interpreter: none of them imported by the extension's own imports, all of them after the thread.
_FRESH = """
import logging, sys
import sds_jupyter.server.handlers  # what the server imports when it loads the extension
from sds_jupyter.service.warm import WARM_MODULES, warm_imports
before = [m for m in WARM_MODULES if m in sys.modules]
warm_imports(logging.getLogger("warm")).join()
print(before, [m for m in WARM_MODULES if m not in sys.modules])
"""


def test_the_libraries_a_first_figure_imports_are_imported_by_the_warming_thread() -> None:
    done = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=600, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[] []"  # none there before, every one after


def test_a_module_that_fails_to_import_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("sds-warm-test")
    with caplog.at_level(logging.WARNING, logger="sds-warm-test"):
        warm_imports(log, ["sds_jupyter_no_such_module", "json"]).join()
    assert "importing sds_jupyter_no_such_module ahead of the first request failed" in caplog.text
