"""A warm ``get`` of a small metadata document: a stack vs plain zarr ``LocalStore`` vs Icechunk.

Data: see ``_deepstack.py`` (the base store, a 1-deep and a 500-deep stack on it);
Icechunk: the base copied into a local Icechunk repository.

Each timed run is a batch of ``sync(store.get("tables/table/X/zarr.json"))``
through zarr's async API (a worker thread per get, as zarr reads), the file in
the OS cache:

A: the 500-deep stack's store (a base key: the read goes through the layer index
   and a containment check, with no ``realpath`` per read);
B: ``zarr.storage.LocalStore(base, read_only=True)``, plain zarr on the same folder;
C: Icechunk's store (a read-only session of the repository's ``main``).

Goal: A / B <= 1.1. A / C is printed (no goal).
"""

from __future__ import annotations

from _common import alternate, begin, comparison, emit, workdir
from _deepstack import BASE_DOC_KEY, build

GOAL = 1.1


def main() -> None:
    args = begin(__doc__)
    import _icechunk
    import zarr
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    from sds_jupyter.stack import open_stack

    depth = 500
    rounds = args.rounds or (5 if args.quick else 15)
    batch = 300 if args.quick else 2000
    print(f"bench_meta_get: get({BASE_DOC_KEY!r}) from a {depth}-deep stack vs LocalStore vs Icechunk")
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        stack = open_stack(stacks.deep_top)
        plain = zarr.storage.LocalStore(stacks.base, read_only=True)
        prototype = default_buffer_prototype()
        expected = (stacks.base / BASE_DOC_KEY).read_bytes()
        assert sync(stack.get(BASE_DOC_KEY, prototype)).to_bytes() == expected  # type: ignore[union-attr]
        assert sync(plain.get(BASE_DOC_KEY, prototype)).to_bytes() == expected  # type: ignore[union-attr]

        def gets(store):  # type: ignore[no-untyped-def]
            def run() -> None:
                get = store.get
                for _ in range(batch):
                    sync(get(BASE_DOC_KEY, prototype))

            return run

        results = []
        ta, tb = alternate(gets(stack), gets(plain), rounds)
        results.append(
            comparison(
                "warm get, metadata doc",
                f"{depth}-deep stack store",
                "zarr LocalStore",
                ta,
                tb,
                goal=GOAL,
                per=batch,
                unit="get",
            )
        )
        if _icechunk.available():
            repo = _icechunk.repository(root / "icechunk")
            _icechunk.copy_store(stacks.base, repo)
            ice = repo.readonly_session("main").store
            assert sync(ice.get(BASE_DOC_KEY, prototype)).to_bytes() == expected
            tc, tb2 = alternate(gets(ice), gets(plain), rounds)
            results.append(
                comparison(
                    "  Icechunk, same get",
                    f"Icechunk {_icechunk.version()} store",
                    "zarr LocalStore",
                    tc,
                    tb2,
                    goal=None,
                    per=batch,
                    unit="get",
                )
            )
        stack.close()
    emit("bench_meta_get", results, depth=depth)


if __name__ == "__main__":
    main()
