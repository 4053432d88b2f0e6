"""Opening a 500-deep stack, cold and again, vs reading and checking its manifests, and vs Icechunk.

Data: see ``_deepstack.py``; Icechunk: the same base and the same objects committed
500 times (one commit per version) into a local repository.

Cold (the process's caches of parsed manifests and resolved stacks emptied before
each run; the OS file cache warm):

A: ``open_stack(top)``: walk the parent references, read and check every
   manifest, resolve every folder, open the base, build the layer index.
B: for each of the 500 ``layer.json`` (paths known in advance): open, read,
   ``json.loads`` and ``parse_manifest`` (every check a manifest must pass).
   Goal: A / B <= 2.

Again (the same stack opened before in this process, nothing changed):

A: ``open_stack(top)``, served by the resolved-stack cache after proving every
   manifest and folder unchanged (an ``lstat`` each). Goal: A <= 2 ms.
B: Icechunk: ``Repository.open`` + ``readonly_session("main")`` + ``zarr.open_group``
   on a repository with 500 commits. Goals: A <= 2 ms, and A / B <= 1 (issue 30).

Cold vs Icechunk: the cold open above against B. Goal (issue 30): A / B <= 2.

After a save beside (a new version folder added to the datasets folder, as any save does):

A: ``Stack.resolve(top)`` right after the save. B: the same with nothing changed.
   Goal: A / B <= 1.5 (the cache is proven per manifest, so the save voids nothing).

More lines break the cold open down (no goals), the first being its floor: the bare
read and ``json.loads`` of the 500 manifests against Icechunk's open.
"""

from __future__ import annotations

import json

from _common import alternate, begin, comparison, emit, settle, workdir
from _deepstack import build, icechunk_repository

GOAL = 2.0
GOAL_AGAIN_S = 0.002
#: Issue 30: the cold open within twice Icechunk's open of the same history, a warm reopen within once.
GOAL_COLD_ICECHUNK = 2.0
GOAL_AGAIN_ICECHUNK = 1.0
#: A save beside a stack (another folder in its datasets folder) leaves its cache: about the same cost.
GOAL_BESIDE = 1.5


def main() -> None:
    args = begin(__doc__)
    from pathlib import Path

    import _icechunk
    import zarr

    from sds_jupyter.stack import Stack, StackStore, open_stack
    from sds_jupyter.stack.caches import default_caches
    from sds_jupyter.stack.manifest import parse_manifest, read_manifest

    depth = 500
    rounds = args.rounds or (5 if args.quick else 21)
    print(f"bench_open: open_stack on a {depth}-deep stack vs reading its {depth} manifests, and vs Icechunk")
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        manifests = [str(p) for p in stacks.deep_manifests]
        top = stacks.deep_top
        settle()

        def forget() -> None:
            default_caches().stacks.clear()
            default_caches().manifests.clear()

        def open_it() -> None:
            open_stack(top).close()

        def read_and_check() -> None:
            for path in manifests:
                with open(path, "rb") as handle:
                    parse_manifest(json.loads(handle.read()), path)

        def read_manifests() -> None:
            for path in manifests:
                with open(path, "rb") as handle:
                    json.loads(handle.read())

        forget()
        store = open_stack(top)
        assert store.stack.depth == depth
        store.close()

        results = []
        ta, tb = alternate(open_it, read_and_check, rounds, before_a=forget)
        results.append(
            comparison(
                "open 500-deep, cold",
                "open_stack(top), caches emptied",
                f"read + json.loads + parse_manifest x{depth}",
                ta,
                tb,
                goal=GOAL,
                unit="open",
            )
        )

        open_it()  # fills the caches
        ice_open = None
        if _icechunk.available():
            ice_depth = 50 if args.quick else depth
            ice_path = root / "icechunk"
            icechunk_repository(stacks, ice_path, ice_depth)

            def ice_open() -> None:
                repo = _icechunk.open_repository(ice_path)
                zarr.open_group(repo.readonly_session("main").store, mode="r")

        ta, tb = alternate(open_it, ice_open or read_manifests, rounds)
        results.append(
            comparison(
                "open 500-deep, again",
                "open_stack(top), opened before",
                f"Icechunk open, {ice_depth} commits" if ice_open else f"read + json.loads x{depth}",
                ta,
                tb,
                goal=None,
                unit="open",
                goal_seconds=GOAL_AGAIN_S,
            )
        )
        if ice_open is not None:
            results.append(
                comparison(
                    "  warm reopen vs Icechunk",
                    "open_stack(top), opened before",
                    f"Icechunk open, {ice_depth} commits",
                    ta,
                    tb,
                    goal=GOAL_AGAIN_ICECHUNK,
                    unit="open",
                )
            )
            ta, tb = alternate(open_it, ice_open, rounds, before_a=forget)
            results.append(
                comparison(
                    "  cold open vs Icechunk",
                    "open_stack(top), caches emptied",
                    f"Icechunk open, {ice_depth} commits",
                    ta,
                    tb,
                    goal=GOAL_COLD_ICECHUNK,
                    unit="open",
                )
            )

        beside = iter(range(10**6))

        def save_beside() -> None:
            """What a save does to the datasets folder: a new version folder appears in it."""
            folder = stacks.datasets / f"beside-{next(beside):06d}"
            folder.mkdir()
            (folder / "layer.json").write_bytes(Path(manifests[0]).read_bytes())

        Stack.resolve(top)  # cached
        ta, tb = alternate(lambda: Stack.resolve(top), lambda: Stack.resolve(top), rounds, before_a=save_beside)
        results.append(
            comparison(
                "reopen after a save beside",
                "Stack.resolve(top) after a version saved beside it",
                "Stack.resolve(top), nothing changed",
                ta,
                tb,
                goal=GOAL_BESIDE,
                unit="open",
            )
        )

        print(" breakdown of the cold open (not goals):")
        if ice_open is not None:
            # The floor of a walk that reads every manifest: no check, no object, just the bytes decoded.
            ta, tb = alternate(read_manifests, ice_open, rounds)
            results.append(
                comparison(
                    "  bare reads vs Icechunk",
                    f"read + json.loads {depth} manifests",
                    f"Icechunk open, {ice_depth} commits",
                    ta,
                    tb,
                    goal=None,
                    unit="open",
                )
            )
        ta, tb = alternate(lambda: Stack.resolve(top), read_manifests, rounds, before_a=forget)
        results.append(
            comparison(
                "  Stack.resolve only",
                "Stack.resolve(top), caches emptied",
                f"read + json.loads {depth} manifests",
                ta,
                tb,
                goal=None,
                unit="open",
            )
        )

        def fresh_stack() -> None:
            forget()
            nonlocal resolved
            resolved = Stack.resolve(top)

        resolved = Stack.resolve(top)
        ta, tb = alternate(lambda: StackStore(resolved).close(), read_manifests, rounds, before_a=fresh_stack)
        results.append(
            comparison(
                "  StackStore only",
                "StackStore(newly resolved stack)",
                f"read + json.loads {depth} manifests",
                ta,
                tb,
                goal=None,
                unit="open",
            )
        )
        manifest_paths = [Path(p) for p in manifests]

        def library_read() -> None:
            for path in manifest_paths:
                read_manifest(path)

        ta, tb = alternate(library_read, read_manifests, rounds)
        results.append(
            comparison(
                "  read_manifest x500",
                f"read_manifest of the {depth} manifests",
                f"read + json.loads {depth} manifests",
                ta,
                tb,
                goal=None,
                unit="open",
            )
        )
    emit("bench_open", results, depth=depth)


if __name__ == "__main__":
    main()
