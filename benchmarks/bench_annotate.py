"""Labelling cells by drawn regions (annotate's containment) vs shapely's vectorized point-in-polygon.

Data: 1,000,000 cells (100,000 with --quick) uniform over a 10,000 × 10,000 field, and
three regions drawn as a lasso would draw them: star-shaped outlines of 500 points each,
overlapping, the last drawn winning.

A: ``region_codes`` (the service's rule: box filter, cells sorted by y, each edge swept over
   the cells in its y-span).
B: ``shapely.contains_xy`` per region (GEOS, prepared), the same last-wins assignment.

Both give the same labels (checked before timing). Goal: A / B <= 2: the service's own
rule (which matches the browser's counts exactly) costs at most twice the GEOS reference.
"""

from __future__ import annotations

from _common import alternate, begin, comparison, emit

GOAL = 2.0


def main() -> None:
    args = begin(__doc__)
    import numpy as np
    import shapely

    from sds_jupyter.service.features.annotate.regions import checked_regions, region_codes

    n = 100_000 if args.quick else 1_000_000
    rounds = args.rounds or (3 if args.quick else 9)
    rng = np.random.default_rng(27)
    x = rng.uniform(0, 10_000, n).astype(np.float32)
    y = rng.uniform(0, 10_000, n).astype(np.float32)
    regions = {}
    for k in range(3):
        angles = np.sort(rng.uniform(0, 2 * np.pi, 500))
        radii = rng.uniform(1_000, 3_500, 500)
        cx, cy = 3_500 + 1_500 * k, 5_000
        regions[f"r{k}"] = np.c_[cx + radii * np.cos(angles), cy + radii * np.sin(angles)].tolist()
    checked = checked_regions(regions)
    polygons = [shapely.Polygon(region.polygon) for region in checked]
    xd, yd = x.astype(np.float64), y.astype(np.float64)

    def ours() -> np.ndarray:
        return region_codes(x, y, checked)

    def geos() -> np.ndarray:
        codes = np.full(n, -1, dtype=np.int64)
        for index, polygon in enumerate(polygons):
            shapely.prepare(polygon)
            codes[shapely.contains_xy(polygon, xd, yd)] = index
        return codes

    assert np.array_equal(ours(), geos()), "the two rules disagree"
    print(f"bench_annotate: {n:,} cells, 3 regions of 500 points; {int((ours() >= 0).sum()):,} cells labelled")
    times_a, times_b = alternate(ours, geos, rounds)
    result = comparison(
        "label cells by drawn regions",
        "region_codes (y-sorted edge sweep)",
        "shapely.contains_xy (prepared GEOS)",
        times_a,
        times_b,
        goal=GOAL,
        unit="annotation",
    )
    emit("annotate", [result], n_cells=n)


if __name__ == "__main__":
    main()
