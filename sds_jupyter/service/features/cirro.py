"""The Cirro requests: the projects to choose from, an upload's check, the upload, and fetching missing parents.

What ``sds-jupyter upload`` and ``fetch`` do (:mod:`sds_jupyter.stack.exchange`), for
the panel and the widget: a project is chosen from a list instead of a flag, an upload
is checked (its parent chain first) before Cirro is asked anything, and its new dataset
ID is recorded beside the version, so the tree's "not yet in Cirro" tag goes.
"""

from __future__ import annotations

import os

from sds_jupyter.protocol.types import (
    CirroFetchData,
    CirroPlanData,
    CirroProject,
    CirroProjectsData,
    CirroUploadData,
)
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.session import Session

__all__ = ["cirro_fetch", "cirro_plan", "cirro_projects", "cirro_upload"]


def cirro_projects(session: Session) -> CirroProjectsData:
    """The projects the signed-in user can use, and the workspace's own (``$CIRRO_PROJECT_ID``) to preselect."""
    from sds_jupyter.stack import PROJECT_ENV, list_projects

    projects: list[CirroProject] = [{"id": p["id"], "name": p["name"]} for p in list_projects()]
    return {"projects": projects, "default": os.environ.get(PROJECT_ENV) or None}


def _version_folder(session: Session, version: int | str | None) -> str:
    return str(session.stack.at(session.depth(version)).versions[0].folder)


def cirro_plan(session: Session, version: int | str | None = None) -> CirroPlanData:
    """What uploading ``version`` (default: the top) would send, its parent chain checked; nothing is sent.

    What the workspace cannot vouch for is asked of Cirro here, before a project is chosen
    (the workspace's own first, then the others): a copy of a Cirro dataset is not offered
    as a new one, nor a version on a dataset Cirro does not know.
    """
    from sds_jupyter.stack import AlreadyInCirro, confirm_in_cirro, plan_upload

    plan = plan_upload(_version_folder(session, version), folders=dict(session.chain()[2]))
    try:
        confirm_in_cirro(plan)
    except AlreadyInCirro as copy:  # not a failure: the box says so, and the tag goes on the reload
        return {"name": plan.name, "n_files": 0, "n_bytes": 0, "copy_of": copy.dataset_id, "said": str(copy)}
    return {"name": plan.name, "n_files": len(plan.overlay) + 1, "n_bytes": plan.n_bytes}


def cirro_upload(session: Session, project: str, version: int | str | None = None) -> CirroUploadData:
    """Upload ``version`` (default: the top) to Cirro project ``project``; its new dataset ID, recorded beside it."""
    from sds_jupyter.stack import upload_version

    if not project.strip():
        raise RequestError("Choose the Cirro project to upload to.")
    folder = _version_folder(session, version)
    dataset_id = upload_version(folder, project=project, folders=dict(session.chain()[2]))
    return {"dataset_id": dataset_id, "project": project}


def cirro_fetch(session: Session, project: str) -> CirroFetchData:
    """Download from Cirro project ``project`` the datasets this stack misses; their IDs (then open it again)."""
    if not project.strip():
        raise RequestError("Choose the Cirro project to fetch from.")
    return {"fetched": session.fetch_missing(project)}
