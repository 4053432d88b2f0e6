"""Hand versions to Cirro and get missing parents from it, with the ``cirro`` SDK (extra ``sds-jupyter[cirro]``).

A version saved in a workspace is named by a fresh local ID, and a version saved
on top of it names that local ID as its parent. Cirro gives each uploaded dataset
an ID of its own, so an upload records ``local ID -> Cirro ID`` beside the version
(``<folder holding it>/.sds-uploaded/<local ID>.json``) and, when a later version
is uploaded, rewrites the references of the ``layer.json`` it sends from local IDs
to the recorded Cirro IDs. The local files are never changed: locally the chain
still resolves by the local IDs, in Cirro by Cirro's. A version whose parent was
saved here and not uploaded yet is refused: upload the parent first.

Fetching goes the other way: a parent that no searched folder holds is downloaded
by its dataset ID into the fetched-datasets folder
(:func:`~sds_jupyter.stack.workspace.fetched_dir`), never into the mounted datasets,
through a hidden partial folder renamed into place when complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sds_jupyter.errors import (
    CirroError,
    MissingDatasetError,
    StackError,
    UnsafePathError,
    WriteRefusedError,
    needs_extra,
)
from sds_jupyter.limits import MAX_FETCH_FILES
from sds_jupyter.stack.listing import find_manifest
from sds_jupyter.stack.locator import is_version_folder
from sds_jupyter.stack.manifest import MANIFEST_NAME, read_manifest
from sds_jupyter.stack.refs import CirroRef, parse_folder_map
from sds_jupyter.stack.storage.location import location_of
from sds_jupyter.stack.storage.paths import check_dataset_id, check_relative_path, is_within
from sds_jupyter.stack.workspace import (
    UPLOADS_DIR,
    fetched_dir,
    prepare_folder,
    uploaded_id,
    versions_dir,
    workspace_datasets_dir,
)

__all__ = [
    "PROCESS_ENV",
    "PROJECT_ENV",
    "TOKEN_ENV",
    "AlreadyInCirro",
    "Unproven",
    "UploadPlan",
    "confirm_in_cirro",
    "fetch_missing",
    "list_projects",
    "plan_upload",
    "upload_version",
]

#: The Cirro project to upload to and fetch from (a Cirro workspace sets it).
PROJECT_ENV = "CIRRO_PROJECT_ID"
#: The Cirro data type (ingest process) of an uploaded version.
PROCESS_ENV = "SDS_CIRRO_PROCESS"
#: A Cirro access token (a JWT); without it the SDK's own saved login is used.
TOKEN_ENV = "CIRRO_ACCESS_TOKEN"
DEFAULT_PROCESS = "spatialdata-version"
#: How many missing datasets one fetch follows down a chain before giving up.
FETCH_LIMIT = 500

T = TypeVar("T")


def _client() -> Any:
    """A ``CirroApi``: the base URL from ``CIRRO_BASE_URL`` (or the SDK's config), the token from ``$CIRRO_ACCESS_TOKEN``."""
    needs_extra("cirro", "Cirro upload and fetch")
    from cirro import CirroApi
    from cirro.auth import AccessTokenAuth

    token = os.environ.get(TOKEN_ENV)
    return _sdk("connecting to Cirro", lambda: CirroApi(auth_info=AccessTokenAuth(token) if token else None))


def _sdk(what: str, call: Callable[[], T]) -> T:
    """Run one SDK call; its failure becomes one line saying what was being done, why, and what to do."""
    try:
        return call()
    except StackError:
        raise
    except Exception as exc:  # the SDK raises RuntimeError, httpx, botocore, JWT and API errors alike
        raise CirroError(f"{what} failed: {in_users_words(exc)}") from None


#: Exception names (of the SDK's libraries: PyJWT, httpx, requests, botocore) that mean the login was refused.
_LOGIN_REFUSED = frozenset(
    {
        "DecodeError",
        "InvalidTokenError",
        "ExpiredSignatureError",
        "InvalidSignatureError",
        "NoCredentialsError",
    }
)
#: ... and that mean Cirro (or its storage) could not be reached.
_UNREACHABLE = frozenset(
    {
        "ConnectError",
        "ConnectTimeout",
        "ConnectionError",
        "ConnectTimeoutError",
        "EndpointConnectionError",
        "ReadTimeout",
        "SSLError",
        "TimeoutException",
    }
)


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (its own ``status_code``, or its response's), if any."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    match = re.search(r"\b(401|403|404|409|5\d\d)\b", str(exc))
    return int(match[1]) if match else None


#: The characters kept of a listed failure's line: its end, where the SDK puts the reason after the paths.
_CAUSE_CHARS = 200


def _first_words(exc: BaseException) -> str:
    """The SDK's message on one line: its first line, and the first cause when that line only leads to a list.

    Why: a transfer failure reads "Failed to upload 4 of 4 files:" then one line per file, so the
    first line alone says that it failed but not why (a missing bucket, a refused key).
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].endswith(":") and len(lines) > 1:
        cause = lines[1] if len(lines[1]) <= _CAUSE_CHARS else "…" + lines[1][-_CAUSE_CHARS:]  # its end says why
        return f"{lines[0][:-1]}; the first: {cause}"
    return lines[0]


def in_users_words(exc: BaseException) -> str:
    """Why an SDK call failed, as a person can act on it: the cause and what to do next.

    Why: the SDK's own words ("DecodeError: Not enough segments", "Failed connecting to
    127.0.0.1:9, please check your configuration") name its internals, not the fix.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = _first_words(exc)
    status = _status_of(exc)
    where = os.environ.get("CIRRO_BASE_URL") or "the address in the Cirro SDK's configuration"
    if names & _LOGIN_REFUSED or status == 401:
        return (
            "Cirro did not accept your sign-in (the access token is not valid or has expired); "
            f"sign in to Cirro again and set the new token in {TOKEN_ENV}"
        )
    if names & _UNREACHABLE or text.startswith("Failed connecting"):
        return (
            f"Cirro at {where} cannot be reached; check that address (CIRRO_BASE_URL) and the network, then try again"
        )
    if status == 403 or "ForbiddenException" in names:
        return "Cirro refused: your account may not do this in that project; choose another project or ask its owner"
    if status == 404 or "NotFoundException" in names:
        return "Cirro does not know that project or dataset; choose another project, or check the dataset's ID"
    if "BadRequestException" in names:
        return f"Cirro refused the request ({text[:160]}); check the project and the data type (SDS_CIRRO_PROCESS)"
    said = f" (Cirro said: {text[:400]})" if text else ""
    return f"Cirro could not do it{said}; try again, and if it keeps failing tell your Cirro administrator"


def _project(project: str | None) -> str:
    chosen = project or os.environ.get(PROJECT_ENV)
    if not chosen:
        raise StackError(f"no Cirro project chosen: pass --project (project=) or set {PROJECT_ENV}")
    return chosen


def list_projects() -> list[dict[str, str]]:
    """The Cirro projects the signed-in user can use, as ``{"id", "name"}``, by name.

    What a project picker offers instead of a ``--project`` flag.
    """
    api = _client()
    projects = _sdk("listing your Cirro projects", lambda: api.projects.list())
    return sorted(({"id": str(p.id), "name": str(p.name)} for p in projects), key=lambda p: p["name"].lower())


# -- upload ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unproven:
    """A dataset an uploaded ``layer.json`` names that this workspace cannot vouch for: Cirro is asked.

    Why: a reference names a dataset by ID, and Cirro resolves it by that ID (in the project,
    then any other the user can see). A folder the workspace did not attach, fetch or upload
    may be a copy of a Cirro dataset named by its ID, a version saved here, or a store named
    by hand; only Cirro can tell, and a version sent on a name Cirro does not know never opens there.
    """

    dataset_id: str
    #: The local folder it was found in, if any (for the message).
    folder: Path | None
    is_version: bool


def _cirro_id_of(dataset_id: str, holder: Path, folders: Mapping[str, str], unproven: list[Unproven]) -> str:
    """The ID Cirro knows ``dataset_id`` by; one the workspace cannot vouch for goes into ``unproven``."""
    if dataset_id in folders or _fetched(dataset_id):
        return dataset_id
    places = list(dict.fromkeys((holder, versions_dir())))
    for place in places:
        recorded = uploaded_id(place, dataset_id)
        if recorded:
            return recorded
    found = next((place / dataset_id for place in places if os.path.lexists(place / dataset_id)), None)
    unproven.append(Unproven(dataset_id, found, found is not None and is_version_folder(location_of(found))))
    return dataset_id


def _fetched(dataset_id: str) -> bool:
    """Whether ``dataset_id`` was fetched from Cirro (by that ID) into the fetch folder."""
    return (fetched_dir() / dataset_id).is_dir()


def _titled(folder: Path) -> str:
    """ ": it is “<title>”" for a version with a title (how people know it), else nothing."""
    found = find_manifest(folder)
    try:
        title = read_manifest(Path(found.real_path)).title if found is not None else None
    except StackError:
        return ""
    return f": it is “{title}”" if title else ""


def _overlay_files(data_dir: Path, overlay: str) -> list[str]:
    """The overlay's files, relative to ``data_dir``; refused if any is a link or not a plain file."""
    root = data_dir / check_relative_path(overlay, "overlay folder")
    if root.is_symlink():
        raise UnsafePathError(f"the overlay folder {root} is a symbolic link; upload refused")
    found: list[str] = []
    for here, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(here, name)
            if path.is_symlink() or not (path.is_dir() or path.is_file()):
                raise UnsafePathError(f"{path} is a symbolic link or special file; upload refused")
        found += [Path(here, name).relative_to(data_dir).as_posix() for name in files]
    return sorted(found)


def _rewritten_manifest(raw: bytes, holder: Path, folders: Mapping[str, str], unproven: list[Unproven]) -> bytes:
    """``layer.json`` with its parent and base references naming Cirro IDs (the same bytes when they do)."""
    doc = json.loads(raw)
    changed = False
    for name in ("parent", "base"):
        if isinstance(doc.get(name), str):
            ref = CirroRef.parse(doc[name])
            cirro_id = _cirro_id_of(ref.dataset_id, holder, folders, unproven)
            if cirro_id != ref.dataset_id:
                doc[name] = str(CirroRef(dataset_id=cirro_id, path=ref.path, tenant=ref.tenant, project=ref.project))
                changed = True
    return json.dumps(doc, indent=2).encode() + b"\n" if changed else raw


@dataclass(frozen=True)
class UploadPlan:
    """What an upload of one saved version will send, checked before Cirro is asked anything.

    Why: a version whose parent chain cannot go up (a parent saved here and not
    uploaded, a mounted dataset, one uploaded already) is refused before a dataset is made.
    What only Cirro can tell is in ``unproven``: :func:`confirm_in_cirro` asks it.
    """

    folder: Path
    local_id: str
    name: str
    description: str
    manifest: bytes
    data_dir: Path
    overlay: list[str]
    n_bytes: int
    unproven: tuple[Unproven, ...] = ()


def plan_upload(folder: str | os.PathLike[str], *, folders: str | Mapping[str, str] | None = None) -> UploadPlan:
    """Check that the saved version in ``folder`` can go to Cirro, and say what would be sent; nothing is sent."""
    path = Path(os.path.abspath(folder))
    found = find_manifest(path)
    if found is None:
        raise StackError(f"{path} holds no layer.json: it is not a version")
    data_dir = Path(found.data_dir)
    manifest = read_manifest(Path(found.real_path))
    if is_within(os.path.realpath(path), os.path.realpath(workspace_datasets_dir())):
        raise StackError(f"{path} is a mounted Cirro dataset already; nothing to upload")
    local_id = check_dataset_id(path.name)
    folder_map = parse_folder_map(os.environ.get("SDS_CIRRO_DATASETS") if folders is None else folders)
    if local_id in folder_map or uploaded_id(path.parent, local_id):
        raise StackError(f"version {local_id} is already in Cirro; nothing to upload")
    if os.path.realpath(path.parent) == os.path.realpath(fetched_dir()):
        raise StackError(f"{path} was fetched from Cirro: it is Cirro dataset {local_id} already; nothing to upload")
    unproven: list[Unproven] = []
    sent = _rewritten_manifest(Path(found.real_path).read_bytes(), path.parent, folder_map, unproven)
    overlay = _overlay_files(data_dir, manifest.overlay)
    return UploadPlan(
        folder=path,
        local_id=local_id,
        name=manifest.title or local_id,
        description=manifest.message or "",
        manifest=sent,
        data_dir=data_dir,
        overlay=overlay,
        n_bytes=len(sent) + sum((data_dir / name).stat().st_size for name in overlay),
        unproven=tuple(unproven),
    )


def confirm_in_cirro(plan: UploadPlan, project: str | None = None, api: Any = None) -> None:
    """Ask Cirro what the workspace cannot vouch for before anything is sent; refuse what would be wrong.

    The version itself, when Cirro knows its ID, is a copy of a Cirro dataset (downloaded by
    hand, named by its ID): uploading it would make a second dataset, so it is refused and the
    copy recorded (its "not yet in Cirro" tag goes). Each dataset its ``layer.json`` names that
    Cirro does not know would leave the uploaded version unopenable there, so it is refused,
    saying what to do instead. Cirro is asked in ``project`` (else ``$CIRRO_PROJECT_ID``), then
    in every other project the user can see, as Cirro resolves a reference.
    """
    api = api if api is not None else _client()
    asked = _AskedProjects(api, project or os.environ.get(PROJECT_ENV))
    holder = asked.holding(plan.local_id)
    if holder is not None:
        with suppress(OSError):  # a folder that cannot take the record is still refused
            _record(plan.folder.parent, plan.local_id, {"dataset_id": plan.local_id, "project": holder})
        raise AlreadyInCirro(plan.local_id, plan.name)
    for item in {u.dataset_id: u for u in plan.unproven}.values():  # a version on a store names it twice
        if asked.holding(item.dataset_id) is None:
            raise StackError(_unknown_to_cirro(item))


class AlreadyInCirro(StackError):
    """The version to upload is a copy of a Cirro dataset (Cirro knows its ID): nothing to upload."""

    def __init__(self, dataset_id: str, name: str) -> None:
        super().__init__(
            f"“{name}” is in Cirro already: this folder is a copy of Cirro dataset {dataset_id}; "
            "nothing to upload (a version saved on it can be uploaded)"
        )
        self.dataset_id = dataset_id


def _unknown_to_cirro(item: Unproven) -> str:
    """Why a dataset the version names keeps it from Cirro, and what to do instead."""
    if item.is_version and item.folder is not None:
        return f"version {item.dataset_id} in {item.folder.parent} is not in Cirro yet: upload {item.folder} first{_titled(item.folder)}"
    where = f"the copy in {item.folder}" if item.folder is not None else f"dataset {item.dataset_id}"
    return (
        f"this version sits on {where}, which Cirro does not know as dataset {item.dataset_id}, so it would not open "
        "in Cirro; nothing was sent. Open the dataset from Cirro instead (attach it to the workspace, or fetch it by "
        "its Cirro ID), save your change on it, and upload that version"
    )


class _AskedProjects:
    """The projects a dataset ID is looked up in: the chosen one first, then the others (listed once, when needed)."""

    def __init__(self, api: Any, first: str | None) -> None:
        self.api = api
        self.first = first
        self.others: list[str] | None = None

    def _ids(self) -> Iterator[str]:
        if self.first:
            yield self.first
        if self.others is None:
            listed = _sdk("listing your Cirro projects", lambda: self.api.projects.list())
            self.others = [str(p.id) for p in listed if str(p.id) != self.first]
        yield from self.others

    def holding(self, dataset_id: str) -> str | None:
        """The first project in which Cirro knows ``dataset_id``, or None."""
        for project_id in self._ids():
            try:
                detail = self.api.datasets.get(project_id, dataset_id)
            except Exception as exc:  # a dataset (or project) Cirro does not show this user is no answer
                if _status_of(exc) in (403, 404) or {"NotFoundException", "ForbiddenException"} & {
                    cls.__name__ for cls in type(exc).__mro__
                }:
                    continue
                raise CirroError(f"asking Cirro for dataset {dataset_id} failed: {in_users_words(exc)}") from None
            if detail is not None:
                return project_id
        return None


def upload_version(
    folder: str | os.PathLike[str],
    *,
    project: str | None = None,
    process: str | None = None,
    folders: str | Mapping[str, str] | None = None,
) -> str:
    """Create a Cirro dataset from the saved version in ``folder``; return its Cirro ID.

    Sends the ``layer.json`` (references rewritten to Cirro IDs, see the module
    docstring) and the overlay, named by the version's title. Records the new ID
    beside the version, so versions saved on it can be uploaded after it. Everything
    :func:`plan_upload` checks is checked before Cirro is asked anything, and what only
    Cirro can tell (:func:`confirm_in_cirro`) before a dataset is made.
    """
    plan = plan_upload(folder, folders=folders)
    project_id = _project(project)
    api = _client()
    confirm_in_cirro(plan, project_id, api)
    from cirro_api_client.v1.models import UploadDatasetRequest

    request = UploadDatasetRequest(
        name=plan.name,
        process_id=process or os.environ.get(PROCESS_ENV) or DEFAULT_PROCESS,
        expected_files=[MANIFEST_NAME, *plan.overlay],
        description=plan.description,
    )
    created = _sdk("creating the Cirro dataset", lambda: api.datasets.create(project_id, request))
    if created is None or not getattr(created, "id", None):  # the SDK answers None for a status it does not expect
        raise CirroError(
            f"creating the Cirro dataset failed: Cirro made none in project {project_id} "
            "(it may not exist, or not take uploads from you); choose another project"
        )
    cirro_id = check_dataset_id(created.id)
    try:
        _send(api, project_id, cirro_id, plan.manifest, plan.data_dir, plan.overlay)
    except CirroError:
        # a dataset holding part of a version is worse than none: remove it, then say why
        _sdk("removing the half-uploaded dataset", lambda: api.datasets.delete(project_id, cirro_id))
        raise
    _record(plan.folder.parent, plan.local_id, {"dataset_id": cirro_id, "project": project_id})
    return cirro_id


def _send(api: Any, project_id: str, cirro_id: str, manifest: bytes, data_dir: Path, overlay: list[str]) -> None:
    """The version's files into the new dataset: the overlay first, the ``layer.json`` naming it last."""
    if overlay:
        _sdk("uploading the overlay", lambda: api.datasets.upload_files(project_id, cirro_id, str(data_dir), overlay))
    with tempfile.TemporaryDirectory(prefix="sds-upload-") as staging:
        Path(staging, MANIFEST_NAME).write_bytes(manifest)
        _sdk("uploading layer.json", lambda: api.datasets.upload_files(project_id, cirro_id, staging, [MANIFEST_NAME]))


def _record(holder: Path, local_id: str, record: dict[str, str]) -> None:
    """Write the upload record whole or not at all (a temporary file renamed into place)."""
    records = holder / UPLOADS_DIR
    records.mkdir(exist_ok=True)
    tmp = records / f".{local_id}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, records / f"{local_id}.json")


# -- fetch ----------------------------------------------------------------------------------------


def _missing_id(path: Path, folders: str | Mapping[str, str] | None) -> str | None:
    from sds_jupyter.stack.stack import Stack

    try:
        Stack.resolve(path, folders)
    except MissingDatasetError as exc:
        return exc.dataset_id
    return None


#: The fewest files one download call asks for (a listing is fetched in batches to tell progress).
FETCH_BATCH = 64


@contextmanager
def _partial(cache: Path, dataset_id: str) -> Iterator[Path]:
    """A hidden folder in ``cache`` that becomes ``cache/<dataset_id>`` only when complete."""
    partial = cache / f".{dataset_id}.partial-{uuid.uuid4().hex}"
    partial.mkdir()
    try:
        yield partial
        os.rename(partial, cache / dataset_id)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


#: Told how a download goes: the dataset ID, the files fetched so far and how many it lists.
Progress = Callable[[str, int, int], None]


def _download(api: Any, project_id: str, dataset_id: str, cache: Path, progress: Progress | None = None) -> Path:
    listing = _sdk(
        f"listing dataset {dataset_id}", lambda: api.datasets.get_assets_listing(project_id, dataset_id).files
    )
    if len(listing) > MAX_FETCH_FILES:
        raise StackError(
            f"dataset {dataset_id} lists {len(listing):,} files; at most {MAX_FETCH_FILES:,} (MAX_FETCH_FILES) "
            "are fetched: it is no version or base a stack reads (a base of many files can be zipped, .zarr.zip)"
        )
    for item in listing:  # the SDK writes each file at <folder>/<its path>: never let one climb out
        check_relative_path(item.relative_path, f"file of dataset {dataset_id}")
    if not listing:
        raise StackError(f"dataset {dataset_id} holds no files in Cirro project {project_id}")
    # In about a hundred batches (at least FETCH_BATCH files each), so that progress can be told.
    batch = max(FETCH_BATCH, -(-len(listing) // 100))
    with _partial(cache, dataset_id) as partial:
        for start in range(0, len(listing), batch):
            files = listing[start : start + batch]

            def fetch(files: list[Any] = files) -> None:
                api.datasets.download_files(project_id, dataset_id, str(partial), files=files)

            _sdk(f"downloading dataset {dataset_id}", fetch)
            if progress is not None:
                progress(dataset_id, min(start + batch, len(listing)), len(listing))
    return cache / dataset_id


def fetch_missing(
    path: str | os.PathLike[str],
    *,
    project: str | None = None,
    folders: str | Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> list[Path]:
    """Download each dataset the stack at ``path`` misses, until it resolves; return the new folders.

    Each goes into the fetched-datasets folder, where the reader looks last; that
    folder may not lie in the workspace's (read-only) datasets folder. ``progress`` is told
    after each batch of files. A download interrupted (an exception, ``KeyboardInterrupt``)
    removes its hidden partial folder; nothing half-fetched is ever named as the dataset.
    """
    target = Path(os.path.abspath(path))
    missing = _missing_id(target, folders)
    if missing is None:
        return []
    cache = fetched_dir()
    if is_within(os.path.realpath(cache), os.path.realpath(workspace_datasets_dir())):
        raise WriteRefusedError(
            f"the fetch folder {cache} is inside the datasets folder; set SDS_CIRRO_CACHE elsewhere"
        )
    prepare_folder(cache, "set SDS_CIRRO_CACHE to a writable folder")
    project_id = _project(project)
    api = _client()
    fetched: list[Path] = []
    while missing is not None:
        if (cache / missing).exists() or len(fetched) >= FETCH_LIMIT:
            raise StackError(f"dataset {missing} is still missing after fetching {len(fetched)} datasets")
        fetched.append(_download(api, project_id, missing, cache, progress))
        missing = _missing_id(target, folders)
    return fetched
