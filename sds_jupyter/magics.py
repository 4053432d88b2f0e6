"""``%sds_open`` and ``%sds_save``: a version into a notebook, and back.

``%load_ext sds_jupyter`` registers them. ``%sds_open PATH [--folders JSON] [--as NAME]``
shows the version browser and binds the top version's AnnData to ``adata``
(or NAME) in the user namespace. ``%sds_save "title" [--message M] [--from NAME]``
saves what ``adata`` (or NAME) changed as a new version on the one it was opened
from. Bad input is one line (a UsageError), never a traceback, because the path
usually comes from a generated notebook cell.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sds_jupyter.errors import StackError, needs_extra

try:
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
    from IPython.core.magic_arguments import argument, magic_arguments
except ImportError:
    needs_extra("jupyter", "the %sds_open and %sds_save magics")
    raise

from sds_jupyter.stack import is_url

__all__ = ["StackMagics", "load_ipython_extension", "parse_magic_line"]


def parse_magic_line(magic: Callable[..., Any], line: str) -> argparse.Namespace:
    """The arguments of a line magic declared with ``@magic_arguments``, split like a POSIX shell.

    ``shlex`` removes quotes and backslash escapes and runs nothing; the magic must
    also be marked ``@no_var_expand``, or IPython substitutes ``{expr}`` and ``$name``
    in the line (running code from a folder name) before this ever sees it. Every
    problem is one line, ``<magic>: <what is wrong>``.
    """
    name = getattr(magic, "__name__", "magic")
    try:
        argv = shlex.split(line, posix=True)
    except ValueError as exc:
        raise UsageError(f"{name}: {exc} in the arguments; quote a path holding spaces or quotes") from None
    try:
        parser: argparse.ArgumentParser = magic.parser  # type: ignore[attr-defined]  # set by @magic_arguments
        return parser.parse_args(argv)
    except UsageError as exc:
        raise UsageError(f"{name}: {' '.join(str(exc).split())}") from None


def _folder_map(text: str | None) -> dict[str, str] | None:
    if text is None:
        return None
    try:
        folders = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f'sds_open: --folders is not JSON ({exc.msg}); give an object like \'{{"<id>": "<folder>"}}\''
        ) from None
    if not isinstance(folders, dict) or not all(isinstance(v, str) for v in folders.values()):
        raise UsageError("sds_open: --folders must be a JSON object mapping dataset IDs to folder names")
    return folders


def _json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"sds_open: {option} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise UsageError(f"sds_open: {option} must be a JSON object")
    return value


@magics_class
class StackMagics(Magics):
    """Magics of sds_jupyter."""

    @property
    def _user_ns(self) -> dict[str, Any]:
        """The notebook's namespace: a registered magic always has its shell."""
        assert self.shell is not None
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    @no_var_expand
    @magic_arguments()
    @argument("path", help="a version folder, its layer.json, or a base store")
    @argument("--folders", default=None, help="JSON object {dataset id: folder}; default: $SDS_CIRRO_DATASETS")
    @argument("--as", dest="name", default="adata", help="the variable to bind the AnnData to (default: adata)")
    @argument("--storage-options", default=None, help="JSON object of fsspec options for an s3://... PATH")
    @line_magic
    def sds_open(self, line: str) -> None:
        """Show the version browser for PATH and bind its top version's AnnData.

        The line is split like a shell line (quote a path with spaces, quotes or
        backslashes) and never expanded: ``{…}`` and ``$name`` are part of the path.
        """
        from IPython.display import display

        from sds_jupyter.widget import VersionBrowser

        args = parse_magic_line(self.sds_open, line)
        if not args.name.isidentifier():
            raise UsageError(f"sds_open: --as needs a Python name, not {args.name!r}")
        text = args.path
        path: str | Path = text if is_url(text) else Path(os.path.expanduser(text))
        if isinstance(path, Path) and not path.exists():
            raise UsageError(
                f"sds_open: {str(path)!r} does not exist; give a version folder, its layer.json or a store"
            )
        folders = _folder_map(args.folders)
        options = _json_object(args.storage_options, "--storage-options")
        try:
            browser = VersionBrowser(
                path, folders=folders, name=args.name, namespace=self._user_ns, storage_options=options
            )
            broken = browser.service.partial
            if broken is None:
                browser.service.stack  # noqa: B018 - surfaces a stack that cannot be followed
                browser.open(browser.selected)  # binds args.name in user_ns, marks the version bound
        except (StackError, RuntimeError) as exc:
            raise UsageError(f"sds_open: {exc}") from None
        display(browser)
        if broken is not None:  # show what resolves; there is no data to bind
            print(
                f"sds_open: bound nothing to {args.name!r}: dataset {broken.missing_id} is missing; add it to the workspace"
            )
        else:
            print(browser.bound_message())

    @no_var_expand
    @line_magic
    def sds_save(self, line: str) -> None:
        """Save what ``adata`` (or --from NAME) changed as a new version; the browser shows it."""
        from sds_jupyter.widget import bound_browser

        args = _save_arguments(line)
        browser = bound_browser(self._user_ns, args.source)
        if browser is None:
            raise UsageError(
                f"sds_save: `{args.source}` was not bound by %sds_open; open its version first "
                f"(%sds_open PATH --as {args.source})"
            )
        if args.source not in self._user_ns:
            raise UsageError(f"sds_save: `{args.source}` is not defined; run %sds_open again")
        try:
            top = browser.save(args.title, args.message, adata=self._user_ns[args.source])
        except StackError as exc:
            raise UsageError(f"sds_save: {exc}") from None
        print(_saved_line(browser, args.source, top))


class _SaveParser(argparse.ArgumentParser):
    """argparse that reports a bad line as one UsageError instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f'sds_save: {message}; usage: %sds_save "title" [--message M] [--from NAME]')


def _save_arguments(line: str) -> argparse.Namespace:
    """Parse ``%sds_save``'s line with shell quoting; nothing in it is expanded or run."""
    parser = _SaveParser(prog="%sds_save", add_help=False)
    parser.add_argument("title", nargs="+")
    parser.add_argument("--message", "-m", default=None)
    parser.add_argument("--from", dest="source", default="adata")
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"sds_save: {exc} (check the quotes)") from None
    args = parser.parse_args(words)
    args.title = " ".join(args.title)
    if not args.source.isidentifier():
        raise UsageError(f"sds_save: --from needs a Python name, not {args.source!r}")
    return args


def _saved_line(browser: Any, name: str, top: Path) -> str:
    """One line: which version was saved from which variable, with its changes."""
    version = browser.service.stack.top
    ops = [str(change.get("op")) for change in version.manifest.changes]
    counts = ", ".join(f"{ops.count(op)} {op}" for op in dict.fromkeys(ops))
    from sds_jupyter.widget import _printable

    return _printable(f"Saved `{name}` as v{version.depth} “{version.label}” ({counts}) in {top}")


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics on ``ipython`` (what ``%load_ext sds_jupyter`` calls)."""
    ipython.register_magics(StackMagics)
