"""Streamed block scorer for PPM halfspaces vs a naive per-candidate Python loop.

Both score the same candidates — the exact class G of Bassily, Moran & Nandi (2020),
Algorithm 2: the empty hypothesis plus all intersections of at most d = 2 halfspaces of
Algorithm 1's family — on n = 2000 rows, from the same precomputed containment matrix.
The naive loop is timed on a prefix of G (it would take minutes on all of it); the
streamed scorer runs the whole of G through the one-pass Gumbel-max mechanism.

Run: ``python benchmarks/bench_ppm_scoring.py [--n-public 60 100] [--n 2000]``
"""

import argparse
import time
from itertools import islice

import numpy as np

from skhybrid.ppm._candidates import (
    exact_family_size,
    intersections_exact,
    membership_tolerance,
    supporting_halfspaces_exact,
)
from skhybrid.ppm._scoring import (
    containment_matrix,
    count_errors_blocked,
    error_weights,
    iter_error_blocks,
    streamed_exponential_mechanism,
)


def make_problem(n_public, n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    is_priv = X @ np.ones(d) > 0.5
    # Public rows: the first n_public public-class rows (label-determined model).
    public = np.zeros(n, dtype=bool)
    public[np.flatnonzero(~is_priv)[:n_public]] = True
    return X, public, is_priv


def naive_scores(C, is_priv, tuples):
    inside_c = C.astype(bool)
    out = []
    for members in tuples:
        inside = inside_c[list(members)].all(axis=0) if members else np.zeros(C.shape[1], bool)
        out.append(int(np.sum(inside & is_priv) + np.sum(~inside & ~is_priv)))
    return np.array(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-public", type=int, nargs="+", default=[60, 100])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--naive-candidates", type=int, default=20000)
    parser.add_argument("--block-size", type=int, default=1 << 20)
    parser.add_argument("--n-jobs", type=int, default=None)
    args = parser.parse_args()
    d = 2
    print(f"d={d}, n={args.n}, block_size={args.block_size}, n_jobs={args.n_jobs}")
    print(f"{'n_pub':>5} {'|C_pub|':>8} {'|G|':>11} {'stream s':>9} {'stream hyp/s':>13} "
          f"{'naive hyp/s':>12} {'ratio':>7}")
    for n_public in args.n_public:
        X, public, is_priv = make_problem(n_public, args.n, d, seed=n_public)
        Xp = X[public]
        W, B = supporting_halfspaces_exact(Xp)
        C = containment_matrix(W, B, X, tol=membership_tolerance(Xp))
        weights, n0 = error_weights(is_priv)
        h, size_G = exact_family_size(n_public, d)

        # Naive loop on a prefix of G; check it agrees with the block scorer there.
        stream = (tuple(t) for b in intersections_exact(h, d) for t in b)
        prefix = list(islice(stream, args.naive_candidates))
        t0 = time.perf_counter()
        naive = naive_scores(C, is_priv, prefix)
        t_naive = time.perf_counter() - t0
        blocked = np.concatenate(
            [count_errors_blocked(C, weights, n0, b)
             for b in islice(intersections_exact(h, d, block_size=args.naive_candidates), 3)]
        )[: len(naive)]
        assert np.array_equal(naive, blocked), "block scorer disagrees with the naive loop"

        t0 = time.perf_counter()
        sel = streamed_exponential_mechanism(
            iter_error_blocks(
                C, weights, n0, intersections_exact(h, d, block_size=args.block_size)
            ),
            1.0, 1.0, np.random.default_rng(0), n_jobs=args.n_jobs,
        )
        t_stream = time.perf_counter() - t0
        assert sel.n_candidates == size_G
        rate_stream = size_G / t_stream
        rate_naive = len(naive) / t_naive
        print(f"{n_public:>5} {h:>8} {size_G:>11} {t_stream:>9.2f} {rate_stream:>13.3g} "
              f"{rate_naive:>12.3g} {rate_stream / rate_naive:>7.0f}x")


if __name__ == "__main__":
    main()
