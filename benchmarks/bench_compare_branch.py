"""Compare against a version on another branch: the branch's folder kept, beside the tree built each time.

Data: the Xenium demo (six versions on a line and a "Coarser clusters" branch off v4),
3,000 cells (``--quick``: 1,500), built once; a warm service (both sides asked before).

A: ``compare(6, <branch dataset ID>)``: the branch's folder found through the tree's
folders, kept until the listing's fingerprint changes.

B: the same compare with the folders forgotten before each run: the tree built again
each time, as the lookup did before.

Also printed, for scale: ``compare(6, 5)`` inside the chain. What is left between it and A
is the difference itself (the branch differs from v6 in more columns and figures than v5
does), not the lookup. Never fails on time.
"""

from __future__ import annotations

from pathlib import Path

from _common import alternate, begin, comparison, emit, workdir


def main() -> None:
    args = begin(__doc__)
    from sds_jupyter.demo import demo_dataset_id
    from sds_jupyter.demo.xenium import build_xenium_demo
    from sds_jupyter.service import StackService

    rounds = args.rounds or (5 if args.quick else 20)
    with workdir() as root:
        top: Path = build_xenium_demo(root, n_cells=1500 if args.quick else 3000, side=1024)
        branch = demo_dataset_id("xenium-Coarser clusters")
        service = StackService(top)
        service.compare(6, branch)  # warm: both sides' tables read, the folders known
        service.compare(6, 5)
        print("compare against a branch, warm service")

        def forget() -> None:
            service._branch_folders = None  # the tree built again, as before the cache

        a, b = alternate(
            lambda: service.compare(6, branch), lambda: service.compare(6, branch), rounds, before_b=forget
        )
        kept = comparison(
            "compare with a branch: folders kept vs tree each time",
            "compare(6, branch), folders kept",
            "compare(6, branch), tree each time",
            a,
            b,
            goal=1.0,
        )
        c, d = alternate(lambda: service.compare(6, branch), lambda: service.compare(6, 5), rounds)
        chain = comparison(
            "compare with a branch vs inside the chain",
            "compare(6, branch), folders kept",
            "compare(6, 5)",
            c,
            d,
            goal=None,
        )
    emit("compare_branch", [kept, chain])


if __name__ == "__main__":
    main()
