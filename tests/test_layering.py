"""Imports flow one way: the stack library never pulls in Jupyter."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_stack_library_imports_no_jupyter() -> None:
    code = (
        "import sys, sds_jupyter, sds_jupyter.stack, sds_jupyter.stack.writer, sds_jupyter.cli\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'IPython', 'anywidget', 'ipywidgets', 'jupyter_server', 'tornado', 'traitlets', 'ipykernel'})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_jupyter_names_load_on_first_use() -> None:
    import sds_jupyter

    assert callable(sds_jupyter.flatten) and callable(sds_jupyter.VersionWriter)
    assert "VersionBrowser" in sds_jupyter.__all__
