"""Shared helpers for the benchmarks: side-by-side timing and one result line.

Every benchmark measures two things, A (the stack) and B (the reference), in the
same process, alternating A, B, A, B ... so that drift (CPU frequency, page cache,
other load) hits both alike. It reports the medians of A and of B and the ratio
A / B, taken as the median over rounds of each round's A / B (the ratio of the
two medians is printed too). It never fails on timing: a missed goal is
printed, not raised.

The last line a benchmark prints is ``RESULT <json>``; ``run_all.py`` collects
those lines into its summary table.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Run from a checkout without installing: make the package importable.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULT_PREFIX = "RESULT "

# A benchmark measures derived cell geometry as it is derived, and never writes into the user's
# cache: the kept-geometry folder is off for every benchmark and the servers it starts (they inherit
# this environment), unless the run names a folder. bench_tissue_disk.py measures the kept geometry
# with a fresh folder of its own per round.
os.environ.setdefault("SDS_GEOMETRY_CACHE", "off")


def quiet_warnings() -> None:
    """anndata/zarr/spatialdata warn about things a benchmark does not care about."""
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("spatialdata").setLevel(logging.ERROR)
    logging.getLogger("ome_zarr").setLevel(logging.ERROR)


def parse_args(description: str) -> argparse.Namespace:
    return arg_parser(description).parse_args()


def arg_parser(description: str) -> argparse.ArgumentParser:
    """Every benchmark's options (--quick, --rounds, --full, --keep); a benchmark may add its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smaller data and fewer rounds: checks that the benchmark runs, figures mean little",
    )
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (A then B)")
    parser.add_argument("--full", action="store_true", help="the full size where a benchmark has one (slow)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    return parser


def begin(doc: str | None) -> argparse.Namespace:
    """A benchmark's command line (described by its docstring's first line), with the noise quieted."""
    args = parse_args(doc.splitlines()[0] if doc else "")
    quiet_warnings()
    return args


@contextmanager
def workdir(keep: bool = False) -> Iterator[Path]:
    """A temporary folder for one benchmark's data, removed at the end."""
    path = Path(tempfile.mkdtemp(prefix="sds-bench-"))
    try:
        yield path
    finally:
        if keep:
            print(f"(data kept in {path})")
        else:
            shutil.rmtree(path, ignore_errors=True)


def alternate(
    a: Callable[[], Any],
    b: Callable[[], Any],
    rounds: int,
    *,
    warmup: int = 1,
    before_a: Callable[[], Any] | None = None,
    before_b: Callable[[], Any] | None = None,
    after_a: Callable[[], Any] | None = None,
    after_b: Callable[[], Any] | None = None,
    gc_during: bool = False,
) -> tuple[list[float], list[float]]:
    """Time ``a`` and ``b`` alternately, ``rounds`` times each, after ``warmup`` untimed pairs.

    Rounds run A B, then B A, and so on, so neither side always goes first.

    ``before_*`` / ``after_*`` run outside the timed region (set-up and clean-up of
    one run, such as removing a flatten's output). The garbage collector is run
    before each timed call, so that a collection one run triggered is not billed to
    the other, and disabled during it unless ``gc_during``: with it, the call pays
    for the collections its own allocations trigger, as it does where users run it.
    """
    times_a, times_b = Timings(), Timings()
    for index in range(warmup + rounds):
        pair = [(a, before_a, after_a, times_a), (b, before_b, after_b, times_b)]
        if index % 2:
            pair.reverse()  # A B, B A, A B ...: neither always runs first
        for fn, before, after, sink in pair:
            if before is not None:
                before()
            gc.collect()
            if not gc_during:
                gc.disable()
            try:
                start, cpu_start = time.perf_counter(), cpu_time()
                fn()
                elapsed, cpu = time.perf_counter() - start, cpu_time() - cpu_start
            finally:
                gc.enable()
            if after is not None:
                after()
            if index >= warmup:
                sink.append(elapsed)
                sink.cpu.append(cpu)
    return times_a, times_b


def cpu_time() -> float:
    """CPU seconds of this process (all its threads) and of the children it has waited for.

    Why the children: a side that runs a program (``cp -r`` in ``bench_flatten``) spends its CPU
    in another process; counting only this one's would bill that side almost nothing. A child
    still running when the call returns (a worker started before timing) is not counted.
    """
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Timings(list[float]):
    """Wall times of the timed calls, with ``cpu``: the CPU time of each (:func:`cpu_time`).

    Why both: on a shared machine a call waits for the CPU as long as it runs, so two rounds'
    wall times swing several-fold with the others' load, and their ratio with them (a cold open
    took 89 to 235 ms of wall time for 19 to 31 ms of CPU in one run at load 12 to 15). The CPU
    time is what the call costs wherever it runs: its ratio travels between machines and loads.
    It misses what a call waits for outside the process (a disk, a server), so both are given.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[float] = []


def median(values: list[float]) -> float:
    return statistics.median(values)


def fmt_short_time(seconds: float) -> str:
    """A time as the summary tables show it (run_all's table and the docs' tables): 2 decimals, 1 for µs."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} µs"


def comparison(
    name: str,
    label_a: str,
    label_b: str,
    times_a: list[float],
    times_b: list[float],
    *,
    goal: float | None,
    per: int = 1,
    unit: str = "run",
    goal_seconds: float | None = None,
) -> dict[str, Any]:
    """Print medians and the ratio of one A/B pair; return it as a dict.

    ``per`` divides each timed run into that many operations (a timed batch of
    ``per`` calls), so the printed times are per ``unit``. ``goal_seconds`` is a
    goal on A's median itself (per ``unit``) instead of on the ratio.
    """
    med_a = median(times_a) / per
    med_b = median(times_b) / per
    of_medians = med_a / med_b if med_b > 0 else float("inf")
    # The ratio is the median of the per-round ratios: A and B of one round ran
    # back to back, so load that comes and goes (a shared machine) cancels out.
    pair_ratios = sorted(x / y for x, y in zip(times_a, times_b) if y > 0)
    ratio = median(pair_ratios) if pair_ratios else of_medians
    low = pair_ratios[len(pair_ratios) // 4] if pair_ratios else ratio
    high = pair_ratios[(3 * len(pair_ratios)) // 4] if pair_ratios else ratio
    met = None if goal is None else ratio <= goal
    verdict = "" if goal is None else (f"  goal <= {goal:g}: " + ("met" if met else "MISSED"))
    if goal_seconds is not None:
        met = med_a <= goal_seconds
        verdict = f"  goal A <= {fmt_time(goal_seconds)}: " + ("met" if met else "MISSED")
    cpu_a, cpu_b = getattr(times_a, "cpu", None), getattr(times_b, "cpu", None)
    cpu = None
    if cpu_a and cpu_b and len(cpu_a) == len(times_a) and len(cpu_b) == len(times_b):
        cpu_ratios = sorted(x / y for x, y in zip(cpu_a, cpu_b) if y > 0)
        if cpu_ratios:
            cpu = {"cpu_ratio": median(cpu_ratios), "cpu_a_s": median(cpu_a) / per, "cpu_b_s": median(cpu_b) / per}
    print(f"  {label_a:<44} median {fmt_time(med_a):>10} per {unit}")
    print(f"  {label_b:<44} median {fmt_time(med_b):>10} per {unit}")
    print(
        f"  ratio {ratio:.3f} (median of {len(pair_ratios)} rounds' A/B; quartiles "
        f"{low:.3f}..{high:.3f}; ratio of medians {of_medians:.3f}){verdict}"
    )
    if cpu is not None:
        print(
            f"  CPU time: {fmt_time(cpu['cpu_a_s'])} / {fmt_time(cpu['cpu_b_s'])} per {unit}, "
            f"ratio {cpu['cpu_ratio']:.3f} (median of the rounds' CPU A/B)"
        )
    return {
        "name": name,
        "a": label_a,
        "b": label_b,
        "median_a_s": med_a,
        "median_b_s": med_b,
        "ratio": ratio,
        "ratio_of_medians": of_medians,
        "ratio_q1": low,
        "ratio_q3": high,
        "rounds": len(times_a),
        "unit": unit,
        "goal": goal,
        "goal_seconds": goal_seconds,
        "met": met,
        **(cpu or {}),
    }


def emit(benchmark: str, comparisons: list[dict[str, Any]], **extra: Any) -> None:
    """The machine-readable line ``run_all.py`` reads."""
    print(RESULT_PREFIX + json.dumps({"benchmark": benchmark, "comparisons": comparisons, **extra}))
    sys.stdout.flush()


def settle() -> None:
    """Wait until files just written are old enough for the stack's caches to key on them.

    A file changed within the last ``RACY_SECONDS`` may change again without its
    size or times showing it, so the caches skip it; data a benchmark has just built
    would never be cached without this pause.
    """
    from sds_jupyter.stack import locator

    time.sleep(locator.RACY_SECONDS + 0.2)


def load_average() -> str:
    try:
        return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on this platform
        return "load average unknown"


def machine() -> str:
    cpus = os.cpu_count()
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    return (
        f"{cpus} cores, {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def versions() -> str:
    import anndata
    import zarr

    try:
        import spatialdata

        sd = f", spatialdata {spatialdata.__version__}"
    except Exception:  # pragma: no cover - only the table benchmark needs it
        sd = ""
    return f"zarr {zarr.__version__}, anndata {anndata.__version__}{sd}"


def commit_versions(base: Path, datasets: Path, steps: list[tuple[str, Callable[[Any], None]]]) -> Path:
    """Save one version per ``(title, step)`` on ``base``, each on the last; return the top.

    Each step receives a ``VersionWriter`` and makes its changes through it.
    """
    from sds_jupyter import Stack, VersionWriter

    stack = Stack.resolve(base)
    top = base
    for number, (title, step) in enumerate(steps, 1):
        writer = VersionWriter(stack)
        step(writer)
        top = writer.commit(datasets / f"version-{number:04d}", title=title, created_by="bench")
        stack = Stack.resolve(top)
    return top


#: The table benchmarks' size (cells, genes), full and with --quick.
TABLE_SIZE = (200_000, 50)
QUICK_TABLE_SIZE = (20_000, 50)


def table_base(datasets: Path, n_obs: int, n_vars: int) -> tuple[Path, Any]:
    """Write the table benchmarks' base: ``datasets/base-0000/table.sdata.zarr``, one AnnData table.

    The table: ``n_obs`` x ``n_vars``, dense float32 X, categorical (cell_type, sample) and
    numeric (n_counts, area) obs columns, written by spatialdata. Returns the store and the
    random generator it was drawn from, to draw the versions' changes from next.
    """
    import anndata
    import numpy as np
    import pandas as pd
    import spatialdata

    rng = np.random.default_rng(0)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(12)], n_obs)),
            "sample": pd.Categorical(rng.choice(["s1", "s2", "s3"], n_obs)),
            "n_counts": rng.poisson(200, n_obs).astype(np.float64),
            "area": rng.integers(10, 500, n_obs),
        },
        index=[f"cell-{i}" for i in range(n_obs)],
    )
    var = pd.DataFrame(index=[f"gene-{j}" for j in range(n_vars)])
    x = rng.standard_normal((n_obs, n_vars), dtype=np.float32)
    base = datasets / "base-0000" / "table.sdata.zarr"
    base.parent.mkdir(parents=True)
    spatialdata.SpatialData(tables={"table": anndata.AnnData(X=x, obs=obs, var=var)}).write(base)
    return base, rng
