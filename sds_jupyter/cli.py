"""The ``sds-jupyter`` command: describe, check, flatten, export, upload to and fetch from Cirro, build the demo.

Expected failures (a refused manifest, a missing dataset, a bad folder map)
print one line and exit with status 2; only bugs show a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

from sds_jupyter.errors import StackError, sole_refusal
from sds_jupyter.terminal import escape_controls

__all__ = ["main"]

EXIT_REFUSED = 2
EXIT_PROBLEMS = 1
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for cat in the same place


def say(text: str, file: SupportsWrite[str] | None = None, *, block: bool = False) -> None:
    """Print ``text`` as one line, control characters (newlines too) escaped: the one print of the CLI.

    ``block`` prints text of our own making line by line (JSON, argparse's
    usage), still escaping within each line.
    """
    stream = file if file is not None else sys.stdout
    for line in text.split("\n") if block else (text,):
        print(escape_controls(line), file=stream)


class _Parser(argparse.ArgumentParser):
    """argparse, whose messages repeat what was typed (a pasted folder name), printed safely."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            say(message.rstrip("\n"), file if file is not None else sys.stderr, block=True)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sds-jupyter",
        description="Open, check and flatten versioned SpatialData stores (version stacks).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_folders(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--folders",
            metavar="JSON",
            help='folder map {"<dataset id>": "<folder>"}, e.g. "$SDS_CIRRO_DATASETS" (default: that variable, if set)',
        )

    describe = commands.add_parser(
        "describe", help="list a stack's versions, top first, and its base (or the dataset missing below them)"
    )
    with_folders(describe)
    describe.add_argument("--json", action="store_true", help="print JSON instead of text")
    describe.add_argument("path", help="a version folder, its layer.json, or a store")

    flatten = commands.add_parser("flatten", help="write a stack out as one store")
    with_folders(flatten)
    flatten.add_argument("--copy", action="store_true", help="copy the base's objects instead of linking to them")
    flatten.add_argument("path", help="a version folder or its layer.json")
    flatten.add_argument("out", help="the new store's folder (must not exist, or be empty)")

    check = commands.add_parser("check", help="verify a stack's indexes and files")
    with_folders(check)
    check.add_argument("path", help="a version folder or its layer.json")

    export = commands.add_parser("export", help="draw a saved figure to .svg, .png or .pdf")
    with_folders(export)
    export.add_argument("--version", help="depth, dataset ID or title (default: the top)")
    export.add_argument("path", help="a version folder or its layer.json")
    export.add_argument("figure", help="the figure's ID")
    export.add_argument("out", help="the file to write (.svg, .png or .pdf), or a folder to write it in")
    export.add_argument(
        "--format",
        default=".svg",
        choices=(".svg", ".png", ".pdf"),
        help="the format when OUT is a folder (the file is named after the version and figure)",
    )
    export.add_argument("--dpi", type=int, default=300, help="a PNG's resolution, and that of cells drawn as a picture")
    export.add_argument(
        "--view", default="saved", help="'saved' (the figure's saved view), 'whole' (all of it), or x0,y0,x1,y1"
    )

    upload = commands.add_parser(
        "upload", help="create a Cirro dataset from a saved version (needs sds-jupyter[cirro])"
    )
    with_folders(upload)
    upload.add_argument("--project", help="the Cirro project's ID (default: $CIRRO_PROJECT_ID)")
    upload.add_argument("--process", help="the Cirro data type (default: $SDS_CIRRO_PROCESS, else spatialdata-version)")
    upload.add_argument("path", help="the version's folder")

    fetch = commands.add_parser(
        "fetch", help="download the datasets a stack misses from Cirro into the fetch folder (needs sds-jupyter[cirro])"
    )
    with_folders(fetch)
    fetch.add_argument("--project", help="the Cirro project's ID (default: $CIRRO_PROJECT_ID)")
    fetch.add_argument("path", help="a version folder or its layer.json")

    demo = commands.add_parser("demo", help="build the demo stack (no download needed)")
    demo.add_argument("out", help="a new folder for the demo")
    demo.add_argument(
        "--small", action="store_true", help="the 26-cell blobs demo (seconds to build; for tests and CI)"
    )
    demo.add_argument(
        "--cells",
        type=_count_of("cells", 100),
        default=None,
        metavar="N",
        help="cells of the Xenium-like demo (default 100,000; 1000000 for the million-cell variant)",
    )
    demo.add_argument(
        "--side",
        type=_count_of("image side", 256),
        default=None,
        metavar="PX",
        help="the side of the demo's square image in pixels (default 8192)",
    )
    return parser


def _count_of(what: str, least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least`` (argparse prints the one-line error)."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{what}: {value} is fewer than {least}")
        return value

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader left early (``sds-jupyter describe … | head``): stop quietly, as cat does, and
        # point stdout at nothing so the interpreter's last flush cannot raise again on the way out.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE_CLOSED


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo" and args.small and (args.cells or args.side):
        parser.error("demo --small is the 26-cell demo: --cells and --side size the Xenium-like one")
    try:
        return _run(args)
    except StackError as exc:
        _error(str(exc))
        return EXIT_REFUSED
    except BaseExceptionGroup as group:
        refusal = sole_refusal(group)
        if refusal is group:
            raise
        _error(str(refusal))
        return EXIT_REFUSED
    except BrokenPipeError:
        raise  # the reader left: main stops quietly, no error line
    except OSError as exc:
        where = f" ({os.fsdecode(exc.filename)})" if getattr(exc, "filename", None) else ""
        _error(f"{exc.strerror or exc}{where}")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        _error("interrupted; nothing was left half-written", prefix="sds-jupyter: ")
        return 130


def _interrupted(signum: int, frame: object) -> None:
    """SIGTERM as KeyboardInterrupt: the download's partial folder is removed on the way out."""
    raise KeyboardInterrupt


def _progress(stream: TextIO | None = None) -> Callable[[str, int, int], None]:
    """How a fetch tells its progress on stderr: one line rewritten in place on a terminal, else a
    line at the first batch and at each tenth (no control sequence reaches a log file)."""
    out = stream if stream is not None else sys.stderr
    terminal = out.isatty()
    told: dict[str, int] = {}

    def tell(dataset_id: str, done: int, total: int) -> None:
        line = f"fetching {dataset_id}: {done:,} of {total:,} files"
        if terminal:
            out.write(f"\r{line}" + ("\n" if done >= total else ""))
            out.flush()
            return
        tenth = done * 10 // max(total, 1)
        if tenth > told.get(dataset_id, -1):
            told[dataset_id] = tenth
            say(line, out)

    return tell


def _error(message: str, prefix: str = "sds-jupyter: error: ") -> None:
    # One line whatever the message holds: its newlines are escaped with the rest.
    say(prefix + message, sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from sds_jupyter.stack import check, describe, flatten

    if args.command == "describe":
        # a missing parent: what resolved, then what is missing (as the panel shows it), status 1
        info = describe(args.path, folders=args.folders, partial=True)
        if args.json:
            say(strict_json(info), block=True)
        else:
            for line in _describe_text(info):
                say(line)
        return EXIT_PROBLEMS if info.get("missing") else 0
    if args.command == "flatten":
        out = flatten(args.path, args.out, folders=args.folders, link=not args.copy)
        say(f"wrote {out}")
        return 0
    if args.command == "check":
        report = check(args.path, folders=args.folders)
        for problem in report.problems:
            say(f"problem: {problem}")
        for item in report.checked:
            say(f"checked: {item}")
        say("ok" if report.ok else f"{len(report.problems)} problem(s)")
        return 0 if report.ok else EXIT_PROBLEMS
    if args.command == "export":
        from sds_jupyter.service.export import export_figure

        out = export_figure(
            args.path,
            args.figure,
            args.out,
            version=args.version,
            folders=args.folders,
            format=args.format,
            dpi=args.dpi,
            view=args.view,
        )
        say(f"wrote {out}")
        return 0
    if args.command == "upload":
        from sds_jupyter.stack import upload_version

        dataset_id = upload_version(args.path, project=args.project, process=args.process, folders=args.folders)
        say(f"uploaded {args.path} as Cirro dataset {dataset_id}")
        return 0
    if args.command == "fetch":
        from sds_jupyter.stack import fetch_missing

        previous = signal.signal(signal.SIGTERM, _interrupted)  # a kill cleans up as Ctrl-C does
        try:
            fetched = fetch_missing(args.path, project=args.project, folders=args.folders, progress=_progress())
        finally:
            signal.signal(signal.SIGTERM, previous)
        for folder in fetched:
            say(f"fetched {folder}")
        say(f"fetched {len(fetched)} dataset(s); the stack resolves" if fetched else "nothing missing")
        return 0
    if args.command == "demo":
        from sds_jupyter.demo import build_demo

        top = build_demo(args.out, small=args.small, n_cells=args.cells, side=args.side)
        say(str(top))
        return 0
    raise AssertionError(args.command)


def strict_json(value: Any) -> str:
    """``value`` as strict JSON: a number JSON cannot hold (inf, nan) is written as a string.

    ``json.dumps`` would print ``Infinity`` and ``NaN``, which JSON readers refuse.
    Non-ASCII is escaped too, so the text holds no control characters.
    """
    return json.dumps(_finite(value), indent=2, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "inf", "-inf", "nan"
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _describe_text(info: dict[str, Any]) -> list[str]:
    missing = info.get("missing")
    shown = len(info["versions"])
    lines = [
        f"{shown} version(s) resolve, top first, above a missing dataset:"
        if missing
        else f"{info['depth']} version(s), top first:"
    ]
    for version in info["versions"]:
        title = version["title"] or "(untitled)"
        lines.append(f"  [{version['depth']}] {title}  dataset {version['dataset_id']}")
        if version["message"]:
            lines.append(f"      {version['message']}")
        who = version["created_by"] or "unknown"
        lines.append(f"      by {who} at {version['created_at'] or 'unknown time'}")
        lines.extend(f"      - {format_change(change)}" for change in version["changes"])
    if missing:
        lines.append(f"  missing: {_named(missing)}: {missing['message']}")
        lines.append("  (`sds-jupyter fetch PATH` downloads it from Cirro)")
        return lines
    base = info["base"]
    lines.append(f"  [0] base: {base['path']} ({base['kind']}, Zarr v{base['zarr_format']}, {_named(base)})")
    return lines


def _named(dataset: dict[str, Any]) -> str:
    """A dataset as people know it: its folder-map name with its ID, or the ID alone."""
    name = dataset.get("name")
    return f"{name} (dataset {dataset['dataset_id']})" if name else f"dataset {dataset['dataset_id']}"


def format_change(change: dict[str, Any]) -> str:
    """One readable line for a ``changes`` entry, e.g. ``set-obs regions (categorical)``."""
    op = change.get("op", "?")
    subject = next((change[k] for k in ("column", "key", "figure", "result") if isinstance(change.get(k), str)), "")
    detail = change.get("kind")
    text = f"{op} {subject}".strip()
    return f"{text} ({detail})" if isinstance(detail, str) and detail else text


if __name__ == "__main__":
    sys.exit(main())
