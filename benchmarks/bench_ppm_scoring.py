"""Streamed block scorer for PPM halfspaces vs a fair vectorised baseline.

Both score the same candidates -- the exact class G of Bassily, Moran & Nandi (2020),
Algorithm 2: the empty hypothesis plus all intersections of at most d = 2 halfspaces of
Algorithm 1's family -- on n = 2000 rows, from the same precomputed containment matrix,
and select one with the library's exponential mechanism (exact lattice sampling; Gumbel-max
before it). The baseline a numpy user would write materialises every pair's error count
with ONE matrix product (``(C * private) @ C.T`` and its complement), then runs
:class:`~skhybrid.mechanisms.ExponentialMechanism` on the whole score vector; the
streamed scorer never materialises G. Contenders are interleaved and repeated, medians printed
(and the slowest stream: the final exact draw used to have a heavy tail). A naive per-candidate Python
loop (timed on a prefix of G) is shown for reference only: it is not what anyone would
run. BLAS threads are pinned to one (threadpoolctl).

Run: ``python benchmarks/bench_ppm_scoring.py [--n-public 60 100] [--n 2000] [--repeats 5]``
"""

import argparse
import inspect
import statistics
import time
from itertools import islice

import numpy as np
from threadpoolctl import threadpool_limits

from skhybrid.mechanisms import ExponentialMechanism
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


# Integer scores (-errors, Δ = 1) go in as they are where the library can say so (as the
# classifier does); older versions, compared by compare_revisions.py, cannot.
_INTEGER = ({"integer": True} if "integer" in
            inspect.signature(streamed_exponential_mechanism).parameters else {})


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


def matmul_select(C, is_priv, rng):
    """The fair baseline for d = 2: every pair's errors by one matrix product, then the
    exponential mechanism over the materialised score vector (singles and the empty set
    included)."""
    Cf = C.astype(np.float64)
    sign = np.where(is_priv, 1.0, -1.0)        # a private row inside errs, a public one not
    n_pub_class = float(np.sum(~is_priv))
    pair_err = n_pub_class + (Cf * sign) @ Cf.T  # errors of every intersection of two
    iu = np.triu_indices(C.shape[0], k=1)
    scores = -np.concatenate([[n_pub_class], np.diag(pair_err), pair_err[iu]])
    return ExponentialMechanism(1.0, 1.0, **_INTEGER)(scores, rng), scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-public", type=int, nargs="+", default=[60, 100])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--naive-candidates", type=int, default=20000)
    parser.add_argument("--block-size", type=int, default=1 << 20)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with threadpool_limits(1, "blas"):
        _run(args)


def _run(args):
    d = 2
    print(f"d={d}, n={args.n}, block_size={args.block_size}, n_jobs={args.n_jobs}, BLAS: 1 "
          f"thread, median of {args.repeats} interleaved repeats")
    print(f"{'n_pub':>5} {'|C_pub|':>8} {'|G|':>11} {'stream s':>9} {'(max)':>7} "
          f"{'matmul s':>9} {'matmul/stream':>14} {'naive loop hyp/s':>17}")
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

        def stream(seed=0):
            return streamed_exponential_mechanism(
                iter_error_blocks(
                    C, weights, n0, intersections_exact(h, d, block_size=args.block_size)
                ),
                1.0, 1.0, np.random.default_rng(seed), n_jobs=args.n_jobs, **_INTEGER,
            )

        assert stream().n_candidates == size_G
        _, scores = matmul_select(C, is_priv, np.random.default_rng(0))
        assert np.array_equal(-scores[: len(naive)], naive), "matmul baseline disagrees"
        times = {"stream": [], "matmul": []}
        for r in range(args.repeats):
            order = ("stream", "matmul") if r % 2 == 0 else ("matmul", "stream")
            for who in order:
                t0 = time.perf_counter()
                if who == "stream":  # a new seed each repeat: the draws' cost varies
                    stream(r)
                else:
                    matmul_select(C, is_priv, np.random.default_rng(r))
                times[who].append(time.perf_counter() - t0)
        t_stream, t_matmul = (statistics.median(times[k]) for k in ("stream", "matmul"))
        print(f"{n_public:>5} {h:>8} {size_G:>11} {t_stream:>9.3f} "
              f"{max(times['stream']):>7.3f} {t_matmul:>9.3f} "
              f"{t_matmul / t_stream:>14.2f} {len(naive) / t_naive:>17.3g}")


if __name__ == "__main__":
    main()
