"""Value + q-gradient of the smoothed discrepancy: one eigh versus scipy.linalg.expm.

Setting of Bassily, Mohri & Suresh (2023) §7: m = 1000 source rows, n = 8000 target rows,
d = 10, K = 1000 evaluations at different weights q. ``M0`` is computed once (it does not
depend on q), so each evaluation costs forming ``M(q)`` (O(m d^2)), one decomposition, and
the gradient over the m rows (O(m d^2)).

- eigh: :func:`skhybrid.adaptation._discrepancy.smoothed_discrepancy_grad` (validated
  public function), and the same computation without input checks ("kernel").
- expm: ``E = expm(mu * diag(M, -M))`` (2d x 2d), value ``log Tr E / mu``, gradient
  ``-x_i^T (E11 - E22) x_i / Tr E`` (BMS23 Corollary 1 proof, trace formula), evaluated
  with the same BLAS product as the eigh path so the ratio isolates expm vs eigh.

Contenders are interleaved and repeated; medians are printed, under one BLAS thread by
default (``--blas-threads``; the d = 10 products gain nothing from more, and a default
two-thread pool on a shared machine made the expm path look 5-11x slower than it is).

Usage: python benchmarks/bench_discrepancy_gradient.py [--mu 100] [--K 1000]
"""

import argparse
import statistics
import time

import numpy as np
from scipy import linalg
from threadpoolctl import threadpool_limits

from skhybrid.adaptation._data import make_adaptation_data
from skhybrid.adaptation._discrepancy import (
    _spectral_softmax,
    discrepancy_matrix,
    second_moment,
    smoothed_discrepancy_grad,
)


def eigh_public(M0, X, q, mu):
    return smoothed_discrepancy_grad(discrepancy_matrix(M0, X, q), X, mu)


def eigh_kernel(M0, X, q, mu):
    M = M0 - X.T @ (q[:, None] * X)
    value, U, g = _spectral_softmax(M, mu)
    P = X @ U
    return value, -((P * P) @ g)


def expm_based(M0, X, q, mu):
    M = M0 - X.T @ (q[:, None] * X)
    d = M.shape[0]
    B = np.zeros((2 * d, 2 * d))
    B[:d, :d] = mu * M
    B[d:, d:] = -mu * M
    E = linalg.expm(B)
    Z = np.trace(E)
    G = (E[:d, :d] - E[d:, d:]) / Z
    return np.log(Z) / mu, -np.sum((X @ G) * X, axis=1)


def run(fn, M0, X, Q, mu):
    t0 = time.perf_counter()
    out = [fn(M0, X, q, mu) for q in Q]
    return time.perf_counter() - t0, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mu", type=float, default=100.0)
    parser.add_argument("--K", type=int, default=1000)
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--n", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args()
    with threadpool_limits(args.blas_threads, "blas"):
        _run(args)


def _run(args):
    data = make_adaptation_data(args.m, args.n, 0, random_state=0)
    X = data.X_source
    M0 = second_moment(data.X_target)
    rng = np.random.default_rng(1)
    Q = rng.dirichlet(np.ones(args.m) * 0.1, size=args.K)

    methods = {"eigh (public)": eigh_public, "eigh (kernel)": eigh_kernel, "expm": expm_based}
    samples = {name: [] for name in methods}
    outputs = {}
    # Interleave the methods (rotating the order) and take medians: the machine is shared.
    names = list(methods)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            t, outputs[name] = run(methods[name], M0, X, Q, args.mu)
            samples[name].append(t)
    timings = {name: statistics.median(ts) for name, ts in samples.items()}

    ref = outputs["expm"]
    for name in ("eigh (public)", "eigh (kernel)"):
        dv = max(abs(a[0] - b[0]) for a, b in zip(outputs[name], ref))
        dg = max(np.abs(a[1] - b[1]).max() for a, b in zip(outputs[name], ref))
        print(f"{name:14s} vs expm: max |value diff| = {dv:.2e}, max |grad diff| = {dg:.2e}")
    print(f"m={args.m} n={args.n} d={X.shape[1]} K={args.K} mu={args.mu} "
          f"(median of {args.repeats}, BLAS threads {args.blas_threads})")
    for name, t in timings.items():
        print(f"{name:14s}: {t:7.3f} s total, {1e6 * t / args.K:7.1f} us per evaluation")
    for name in ("eigh (public)", "eigh (kernel)"):
        print(f"ratio expm / {name}: {timings['expm'] / timings[name]:.2f}x")

    # Stability: exp(mu * lam) overflows float64 once mu ||M(q)||_2 > ~709.
    q = np.full(args.m, 1.0 / args.m)
    for mu in (1e2, 1e3, 1e4):
        with np.errstate(all="ignore"):
            v_e, g_e = expm_based(M0, X, q, mu)
        v_h, g_h = eigh_kernel(M0, X, q, mu)
        print(f"mu={mu:7.0f}: eigh value {v_h:.6f} finite={np.all(np.isfinite(g_h))}; "
              f"expm value {v_e:.6f} finite={bool(np.isfinite(v_e) and np.all(np.isfinite(g_e)))}")


if __name__ == "__main__":
    main()
