"""Committing one changed obs column at depth 1 and at depth 500 vs Icechunk's commit of the same change.

Data: see ``_deepstack.py`` (an AnnData table written by anndata, 4,000 x 64, with
an integer obs column ``n``; a 1-deep and a 500-deep stack on it). Icechunk: the
same base copied into a repository, then 1 or 500 commits of the versions' objects.

A: on an already resolved stack (0 or 499 versions, so the new one is at depth 1 or 500) (as a session that keeps its stack does),
   ``VersionWriter(stack)``, ``set_obs("table", "n", values)``, ``commit(dest)``:
   the column encoded in the format's layout, the root's consolidated index and the
   manifest written, the version folder renamed into place (removed after each run,
   outside the timing).
B: Icechunk: ``writable_session("main")``, ``group["tables/table/obs/n"][:] = values``,
   ``commit``.

Goals: A / B <= 1.5 at both depths, and depth 500 within 1.2x of depth 1 (flat).
"""

from __future__ import annotations

import shutil

from _common import alternate, begin, comparison, emit, workdir
from _deepstack import build, icechunk_repository

GOAL = 1.5
FLAT = 1.2


def main() -> None:
    args = begin(__doc__)
    import _icechunk
    import numpy as np
    import zarr

    from sds_jupyter import VersionWriter
    from sds_jupyter.stack import Stack

    depth = 500
    rounds = args.rounds or (5 if args.quick else 15)
    print(f"bench_commit: one obs column committed at depth 1 and {depth}, vs Icechunk")
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        values = np.arange(4000, dtype=np.int64)[::-1].copy()
        dest = stacks.datasets / "new-version"

        def commit_on(stack: Stack):  # type: ignore[no-untyped-def]
            def run() -> None:
                writer = VersionWriter(stack)
                writer.set_obs("table", "n", values)
                writer.commit(dest, title="n reversed", created_by="bench")

            return run

        def remove() -> None:
            shutil.rmtree(dest, ignore_errors=True)

        # The new version is the 500th: the deepest a reader follows.
        shallow, deep = Stack.resolve(stacks.shallow_top), Stack.resolve(stacks.deep_top).at(depth - 1)
        commit_on(deep)()
        assert Stack.resolve(dest).depth == depth
        remove()

        results = []
        ta, tb = alternate(commit_on(deep), commit_on(shallow), rounds, after_a=remove, after_b=remove)
        results.append(
            comparison(
                "commit, depth 500 vs 1",
                f"commit at depth {depth}",
                "commit at depth 1",
                ta,
                tb,
                goal=FLAT,
                unit="commit",
            )
        )
        if _icechunk.available():
            ice_depth = 50 if args.quick else depth
            for label, stack, commits in (("1", shallow, 1), (str(depth), deep, ice_depth)):
                path = root / f"icechunk-{commits}"
                icechunk_repository(stacks, path, commits)
                repo = _icechunk.open_repository(path)

                def ice_commit(repo=repo) -> None:  # type: ignore[no-untyped-def]
                    session = repo.writable_session("main")
                    zarr.open_group(session.store, mode="r+")["tables/table/obs/n"][:] = values
                    session.commit("n reversed")

                ta, tb = alternate(commit_on(stack), ice_commit, rounds, after_a=remove)
                results.append(
                    comparison(
                        f"commit vs Icechunk, depth {label}",
                        f"commit at depth {label}",
                        f"Icechunk commit, {commits} commits before",
                        ta,
                        tb,
                        goal=GOAL,
                        unit="commit",
                    )
                )
    emit("bench_commit", results, depth=depth)


if __name__ == "__main__":
    main()
