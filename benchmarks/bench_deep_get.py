"""Reading one key from a 500-deep stack vs a 1-deep stack over the same base.

Data: see ``_deepstack.py`` (manifests written directly; every version has its
own overlay objects, half of them a whiteout).

A: the 500-deep stack; B: the 1-deep stack. Each timed run is a batch of calls:

* ``store.read_raw(<a base key>)``: the synchronous read (what flatten uses);
* ``sync(store.get(<a base key>))``: zarr's async API, through zarr's sync helper;
* ``store.read_raw(<an overlay key>)``: the lowest version's own object in the
  deep stack (500 versions above it) vs the one version's own object.

Goal: A / B <= 1.2 for each.
"""

from __future__ import annotations

from _common import alternate, begin, comparison, emit, workdir
from _deepstack import BASE_KEY, DeepStacks, build

GOAL = 1.2


def main() -> None:
    args = begin(__doc__)
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    from sds_jupyter.stack import open_stack

    depth = 500
    rounds = args.rounds or (5 if args.quick else 15)
    raw_batch = 500 if args.quick else 3000
    get_batch = 100 if args.quick else 1000
    print(f"bench_deep_get: a {depth}-deep stack vs a 1-deep stack over one base")
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        deep = open_stack(stacks.deep_top)
        shallow = open_stack(stacks.shallow_top)
        assert deep.stack.depth == depth and shallow.stack.depth == 1
        expected = (stacks.base / BASE_KEY).read_bytes()
        assert deep.read_raw(BASE_KEY) == shallow.read_raw(BASE_KEY) == expected
        prototype = default_buffer_prototype()

        def raw_batch_of(store, key):  # type: ignore[no-untyped-def]
            def run() -> None:
                read = store.read_raw
                for _ in range(raw_batch):
                    read(key)

            return run

        def get_batch_of(store, key):  # type: ignore[no-untyped-def]
            def run() -> None:
                get = store.get
                for _ in range(get_batch):
                    sync(get(key, prototype))

            return run

        results = []
        print(f" read_raw({BASE_KEY!r}), batches of {raw_batch}")
        ta, tb = alternate(raw_batch_of(deep, BASE_KEY), raw_batch_of(shallow, BASE_KEY), rounds)
        results.append(
            comparison(
                "deep read_raw (base key)",
                f"{depth}-deep stack",
                "1-deep stack",
                ta,
                tb,
                goal=GOAL,
                per=raw_batch,
                unit="call",
            )
        )

        print(f" sync(get({BASE_KEY!r})), batches of {get_batch}")
        ta, tb = alternate(get_batch_of(deep, BASE_KEY), get_batch_of(shallow, BASE_KEY), rounds)
        results.append(
            comparison(
                "deep get (base key)",
                f"{depth}-deep stack",
                "1-deep stack",
                ta,
                tb,
                goal=GOAL,
                per=get_batch,
                unit="call",
            )
        )

        own = DeepStacks.own_key(1)
        assert deep.read_raw(own) == shallow.read_raw(own)
        print(f" read_raw({own!r}): the lowest version's object, batches of {raw_batch}")
        ta, tb = alternate(raw_batch_of(deep, own), raw_batch_of(shallow, own), rounds)
        results.append(
            comparison(
                "deep read_raw (overlay key)",
                f"{depth}-deep stack (version 1 of {depth})",
                "1-deep stack",
                ta,
                tb,
                goal=GOAL,
                per=raw_batch,
                unit="call",
            )
        )
        print(f" for scale: 1-deep read_raw vs open().read() of the same base file, batches of {raw_batch}")
        path = stacks.base / BASE_KEY

        def plain() -> None:
            for _ in range(raw_batch):
                with open(path, "rb") as handle:
                    handle.read()

        ta, tb = alternate(raw_batch_of(shallow, BASE_KEY), plain, rounds)
        results.append(
            comparison(
                "read_raw vs plain file read",
                "1-deep stack read_raw (base key)",
                "open(file).read()",
                ta,
                tb,
                goal=None,
                per=raw_batch,
                unit="call",
            )
        )
        deep.close()
        shallow.close()
    emit("bench_deep_get", results, depth=depth)


if __name__ == "__main__":
    main()
