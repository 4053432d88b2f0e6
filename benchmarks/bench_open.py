"""Opening a 500-deep stack vs only reading and parsing its 500 manifests.

Data: see ``_deepstack.py``.

A: ``open_stack(top)``: walk the parent references, read and check every
   manifest, resolve every folder, open the base, build the layer index.
B: for each of the 500 ``layer.json`` (paths known in advance): open, read,
   ``json.loads``. The least any reader must do.

Goal: A / B <= 2. More lines break A down (not goals), each against B:
``Stack.resolve`` alone; ``StackStore(stack)`` on an already resolved stack;
the library's ``read_manifest`` of the 500 manifests; and read + ``json.loads`` +
``parse_manifest`` (the checks every manifest must pass: the least an open that
validates can cost).
"""

from __future__ import annotations

import json

from _common import alternate, begin, comparison, emit, workdir
from _deepstack import build

GOAL = 2.0


def main() -> None:
    args = begin(__doc__)
    from pathlib import Path

    from sds_jupyter.stack import Stack, StackStore, open_stack
    from sds_jupyter.stack.manifest import parse_manifest, read_manifest

    depth = 500
    rounds = args.rounds or (5 if args.quick else 21)
    print(f"bench_open: open_stack on a {depth}-deep stack vs reading its {depth} manifests")
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        manifests = [str(p) for p in stacks.deep_manifests]
        top = stacks.deep_top

        def open_it() -> None:
            store = open_stack(top)
            store.close()

        def read_manifests() -> None:
            for path in manifests:
                with open(path, "rb") as handle:
                    json.loads(handle.read())

        store = open_stack(top)
        assert store.stack.depth == depth
        store.close()

        results = []
        ta, tb = alternate(open_it, read_manifests, rounds)
        results.append(
            comparison(
                "open 500-deep",
                "open_stack(top)",
                f"read + json.loads {depth} manifests",
                ta,
                tb,
                goal=GOAL,
                unit="open",
            )
        )

        print(" breakdown (not goals):")
        ta, tb = alternate(lambda: Stack.resolve(top), read_manifests, rounds)
        results.append(
            comparison(
                "  Stack.resolve only",
                "Stack.resolve(top)",
                f"read + json.loads {depth} manifests",
                ta,
                tb,
                goal=None,
                unit="open",
            )
        )
        resolved = Stack.resolve(top)
        ta, tb = alternate(lambda: StackStore(resolved).close(), read_manifests, rounds)
        results.append(
            comparison(
                "  StackStore only",
                "StackStore(resolved stack)",
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

        def read_and_check() -> None:
            for path in manifests:
                with open(path, "rb") as handle:
                    parse_manifest(json.loads(handle.read()), path)

        ta, tb = alternate(read_and_check, read_manifests, rounds)
        results.append(
            comparison(
                "  read+loads+parse_manifest",
                "read + json.loads + parse_manifest",
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
