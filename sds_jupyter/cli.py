"""The ``sds-jupyter`` command: describe, check, flatten and build the demo.

Expected failures (a refused manifest, a missing dataset, a bad folder map)
print one line and exit with status 2; only bugs show a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from sds_jupyter.errors import StackError

__all__ = ["main"]

EXIT_REFUSED = 2
EXIT_PROBLEMS = 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sds-jupyter",
        description="Open, check and flatten versioned SpatialData stores (version stacks).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_folders(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--folders",
            metavar="JSON",
            help='folder map {"<dataset id>": "<folder>"}, e.g. "$SDS_CIRRO_DATASETS" '
            "(default: that variable, if set)",
        )

    describe = commands.add_parser("describe", help="list a stack's versions, top first, and its base")
    with_folders(describe)
    describe.add_argument("--json", action="store_true", help="print JSON instead of text")
    describe.add_argument("path", help="a version folder, its layer.json, or a store")

    flatten = commands.add_parser("flatten", help="write a stack out as one store")
    with_folders(flatten)
    flatten.add_argument(
        "--copy", action="store_true", help="copy the base's objects instead of linking to them"
    )
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
    export.add_argument("out", help="the file to write (.svg, .png or .pdf)")

    demo = commands.add_parser("demo", help="build the demo stack (no download needed)")
    demo.add_argument("out", help="a new folder for the demo")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except StackError as exc:
        print(f"sds-jupyter: error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"sds-jupyter: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        print("sds-jupyter: interrupted; nothing was left half-written", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    from sds_jupyter.stack.flatten import flatten
    from sds_jupyter.stack.inspect import check, describe

    if args.command == "describe":
        info = describe(args.path, folders=args.folders)
        print(json.dumps(info, indent=2) if args.json else _describe_text(info))
        return 0
    if args.command == "flatten":
        out = flatten(args.path, args.out, folders=args.folders, link=not args.copy)
        print(f"wrote {out}")
        return 0
    if args.command == "check":
        report = check(args.path, folders=args.folders)
        for problem in report.problems:
            print(f"problem: {problem}")
        for item in report.checked:
            print(f"checked: {item}")
        print("ok" if report.ok else f"{len(report.problems)} problem(s)")
        return 0 if report.ok else EXIT_PROBLEMS
    if args.command == "export":
        from sds_jupyter.studio.export import export_figure

        out = export_figure(args.path, args.figure, args.out, version=args.version, folders=args.folders)
        print(f"wrote {out}")
        return 0
    if args.command == "demo":
        from sds_jupyter.demo import build_demo

        top = build_demo(args.out)
        print(top)
        return 0
    raise AssertionError(args.command)


def _describe_text(info: dict[str, Any]) -> str:
    lines = [f"{info['depth']} version(s), top first:"]
    for version in info["versions"]:
        title = version["title"] or "(untitled)"
        lines.append(f"  [{version['depth']}] {title}  dataset {version['dataset_id']}")
        if version["message"]:
            lines.append(f"      {version['message']}")
        who = version["created_by"] or "unknown"
        lines.append(f"      by {who} at {version['created_at'] or 'unknown time'}")
        for change in version["changes"]:
            lines.append(f"      - {format_change(change)}")
    base = info["base"]
    lines.append(f"  [0] base: {base['path']} ({base['kind']}, Zarr v{base['zarr_format']}, dataset {base['dataset_id']})")
    return "\n".join(lines)


def format_change(change: dict[str, Any]) -> str:
    """One readable line for a ``changes`` entry, e.g. ``set-obs regions (categorical)``."""
    op = change.get("op", "?")
    subject = next(
        (change[k] for k in ("column", "key", "figure", "result") if isinstance(change.get(k), str)), ""
    )
    detail = change.get("kind")
    text = f"{op} {subject}".strip()
    return f"{text} ({detail})" if isinstance(detail, str) and detail else text


if __name__ == "__main__":
    sys.exit(main())
