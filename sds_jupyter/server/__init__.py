"""Jupyter server extension: the version browser's REST API.

Enabled by ``jupyter-config/jupyter_server_config.d/sds_jupyter.json``
(installed with the wheel). Handlers are imported only when the server loads
the extension, so importing :mod:`sds_jupyter` never pulls in tornado.
"""

from __future__ import annotations

from typing import Any

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "sds_jupyter.server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """Share one service cache rooted at the server's root dir and add the routes."""
    from sds_jupyter.errors import needs_extra

    needs_extra("jupyter", "the JupyterLab server extension")
    from sds_jupyter.server.cache import ServiceCache
    from sds_jupyter.server.handlers import NAMESPACE, setup_handlers
    from sds_jupyter.service.warm import warm_imports

    setup_handlers(server_app.web_app, ServiceCache(server_app.root_dir))
    warm_imports(server_app.log)  # the first figure's libraries, while the browser loads JupyterLab
    server_app.log.info("sds-jupyter: version browser API at %s/api/", NAMESPACE)
