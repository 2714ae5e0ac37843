"""How large a problem the faithful exact mode of PPM halfspaces handles in a time budget.

``PPMHalfspaceClassifier(candidates="exact")`` scores the whole class G of Bassily,
Moran & Nandi (2020), Algorithm 2: the empty hypothesis plus every intersection of at
most d halfspaces of Algorithm 1's family C_pub, with ``|C_pub| = 2 Σ_{m≤d} C(n_pub, m)``
and ``|G| ≈ |C_pub|^d / d!``. For d = 2 and d = 3 this times full fits (ε = 1, public
rows = the public-class rows of a halfspace problem with ``n = 2 n_pub`` rows) for
increasing ``n_pub`` while a fit stays under ``--stop`` seconds, then extrapolates the
measured rate (hypotheses/s of the largest fit) to the largest ``n_pub`` whose predicted
time is within ``--budget`` seconds. Extrapolated rows are marked ``~``.

It then prints the streamed-vs-naive scoring ratio of ``bench_ppm_scoring.py``.

Run: ``python benchmarks/bench_ppm_exact_limit.py [--budget 60] [--stop 25]``
"""

import argparse
import os
import sys
import time

import numpy as np

from skhybrid.ppm import PPMHalfspaceClassifier
from skhybrid.ppm._candidates import exact_family_size

GRID = {2: [25, 50, 75, 100, 125, 150, 175, 200, 210, 220, 230, 240, 250, 300],
        3: [6, 8, 10, 12, 14, 15, 16, 17, 18, 20, 24]}


def make_problem(n_public, d, seed=0):
    """A halfspace problem with exactly ``n_public`` public and ``n_public`` private rows."""
    rng = np.random.default_rng([seed, n_public, d])
    X = rng.uniform(-1, 1, size=(4 * n_public + 50, d))
    private = X @ np.full(d, 1 / np.sqrt(d)) > 0
    keep = np.concatenate([np.flatnonzero(~private)[:n_public],
                           np.flatnonzero(private)[:n_public]])
    if keep.size != 2 * n_public:
        raise RuntimeError("too few rows drawn; increase the oversampling")
    X, y = X[keep], private[keep].astype(int)
    return X, y, y == 0


def time_fit(n_public, d):
    X, y, public = make_problem(n_public, d)
    clf = PPMHalfspaceClassifier(1.0, candidates="exact", max_candidates=10**13,
                                 random_state=0)
    t0 = time.perf_counter()
    clf.fit(X, y, public_mask=public)
    seconds = time.perf_counter() - t0
    if clf.n_candidates_ != exact_family_size(n_public, d)[1]:
        raise RuntimeError("the public rows are not in general position")
    return seconds, clf.n_candidates_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0,
                        help="time limit whose largest n_public is reported (s)")
    parser.add_argument("--stop", type=float, default=25.0,
                        help="stop measuring once one fit takes longer than this (s)")
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--no-scoring-ratio", action="store_true",
                        help="skip the streamed-vs-naive ratio of bench_ppm_scoring.py")
    args = parser.parse_args(argv)
    time_fit(10, 2)  # warm-up
    print("exact mode, eps=1, n = 2 n_pub rows; '~' = extrapolated from the measured rate")
    print(f"{'d':>2} {'n_pub':>6} {'|C_pub|':>9} {'|G|':>14} {'fit s':>9} {'hyp/s':>10}")
    limits = {}
    for d in args.dims:
        rate = None  # set once a fit exceeds --stop: extrapolate from then on
        for n_pub in GRID[d]:
            h, size = exact_family_size(n_pub, d)
            if rate is None:
                seconds, size = time_fit(n_pub, d)
                mark = ""
                if seconds > args.stop:
                    rate = size / seconds
            else:
                seconds, mark = size / rate, "~"
            print(f"{d:>2} {n_pub:>6} {h:>9} {size:>14} {mark + format(seconds, '.2f'):>9} "
                  f"{size / seconds:>10.3g}", flush=True)
            if seconds <= args.budget:
                limits[d] = (n_pub, mark)
            else:
                break
    for d, (n_pub, mark) in limits.items():
        how = "extrapolated" if mark else "measured"
        print(f"largest n_pub within {args.budget:g} s at d={d}: {n_pub} ({how}, grid {GRID[d]})")

    if not args.no_scoring_ratio:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_ppm_scoring

        print("\nstreamed block scorer vs naive per-candidate loop (bench_ppm_scoring.py):")
        saved = sys.argv
        try:
            sys.argv = ["bench_ppm_scoring.py", "--n-public", "60", "100"]
            bench_ppm_scoring.main()
        finally:
            sys.argv = saved


if __name__ == "__main__":
    main()
