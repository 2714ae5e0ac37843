"""One private single-stage fit (BMS23 Algorithm 1, K = 1000) versus a scipy.linalg.expm loop.

Setting of Bassily, Mohri & Suresh (2023) §7: m = 1000 labelled source rows, n = 8000
unlabelled target rows, d = 10, K = 1000, ε = 1, δ = 1/8000, μ = 100.

- ``fit``: ``DiscrepancyAdaptationRegressor(solver="single-stage").fit`` — validation,
  calibration, clipping and the Frank-Wolfe loop, whose q-gradient comes from one
  symmetric ``eigh`` of the d x d matrix M(q) per iteration.
- ``loop (eigh)``: the estimator's loop alone
  (:func:`skhybrid.adaptation._solvers.private_frank_wolfe`).
- ``loop (expm)``: the same loop written naively, the q-gradient of
  ``F~ = (1/mu) log Tr exp(mu diag(M, -M))`` from ``E = scipy.linalg.expm`` of the
  2d x 2d block matrix: ``grad_i = -x_i^T (E11 - E22) x_i / Tr E`` (BMS23 Corollary 1
  proof), and ``M(q)`` re-formed from q in O(m d^2) every iteration.

Both loops use the same calibrated selector and the same noise seed, so they select the
same vertices up to rounding ties: the script prints how far their outputs differ.
The goal is the whole fit under 1 s.

Usage: python benchmarks/bench_adaptation_fit.py [--K 1000] [--m 1000] [--n 8000] [--repeat 3]
"""

import argparse
import time

import numpy as np
from scipy import linalg

from skhybrid.adaptation import DiscrepancyAdaptationRegressor, make_adaptation_data
from skhybrid.adaptation._discrepancy import clip_rows
from skhybrid.adaptation._solvers import private_frank_wolfe


def expm_grad(M, X_src, mu):
    """q-gradient of F~ at M through the matrix exponential of diag(mu M, -mu M)."""
    d = M.shape[0]
    B = np.zeros((2 * d, 2 * d))
    B[:d, :d] = mu * M
    B[d:, d:] = -mu * M
    E = linalg.expm(B)
    G = (E[:d, :d] - E[d:, d:]) / np.trace(E)
    return -np.einsum("ij,jk,ik->i", X_src, G, X_src)


def naive_frank_wolfe(M0, X_src, y_src, *, coef_norm, mu, max_iter, selector, rng):
    """BMS23 Algorithm 1 as written: expm gradient, M(q) rebuilt from q each step."""
    m, d = X_src.shape
    q = np.full(m, 1.0 / m)
    w = np.zeros(d)
    c = 4.0 * coef_norm**2
    for k in range(max_iter):
        resid = X_src @ w - y_src
        M = M0 - X_src.T @ (q[:, None] * X_src)
        grad_q = resid * resid + c * expm_grad(M, X_src, mu)
        grad_w = 2.0 * (X_src.T @ (q * resid))
        j = selector(grad_q, rng)
        gn = np.linalg.norm(grad_w)
        u = -coef_norm * grad_w / gn if gn > 0 else w
        eta = 2.0 / (k + 2.0)
        q = (1.0 - eta) * q
        q[j] += eta
        w = (1.0 - eta) * w + eta * u
    return q, w


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--K", type=int, default=1000)
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--n", type=int, default=8000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--mu", type=float, default=100.0)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    D = make_adaptation_data(args.m, args.n, 0, args.d, random_state=0)
    X = np.vstack([D.X_source, D.X_target])
    y = np.concatenate([D.y_source, np.full(args.n, np.nan)])
    public = np.arange(len(X)) < args.m
    params = dict(epsilon=args.epsilon, delta=1.0 / 8000, solver="single-stage",
                  max_iter=args.K, mu=args.mu, data_norm=1.0, fit_intercept=False)

    # The calibrated selector and the loop inputs, exactly as the estimator builds them.
    reg = DiscrepancyAdaptationRegressor(**params, random_state=0)
    reg._validate_params()
    plan = reg._plan(D.X_source, args.n, reg.data_norm, 1.0)
    Xt = clip_rows(D.X_target, reg.data_norm)
    M0 = Xt.T @ Xt / args.n
    loop_kw = dict(coef_norm=reg.coef_norm, mu=args.mu, max_iter=args.K,
                   selector=plan["selector"])

    def fit():
        return DiscrepancyAdaptationRegressor(**params, random_state=0).fit(
            X, y, public_mask=public)

    def loop_eigh():
        return private_frank_wolfe(M0, D.X_source, D.y_source, rng=np.random.default_rng(1),
                                   **loop_kw)

    def loop_expm():
        return naive_frank_wolfe(M0, D.X_source, D.y_source, rng=np.random.default_rng(1),
                                 **loop_kw)

    methods = {"fit": fit, "loop (eigh)": loop_eigh, "loop (expm)": loop_expm}
    for fn in methods.values():  # warm-up (imports, BLAS threads)
        fn()
    times = {name: [] for name in methods}
    out = {}
    for _ in range(args.repeat):  # interleaved: the machine is shared
        for name, fn in methods.items():
            t0 = time.perf_counter()
            out[name] = fn()
            times[name].append(time.perf_counter() - t0)
    med = {name: float(np.median(t)) for name, t in times.items()}

    (q_h, w_h), (q_e, w_e) = out["loop (eigh)"], out["loop (expm)"]
    print(f"m={args.m} n={args.n} d={args.d} K={args.K} mu={args.mu:g} eps={args.epsilon:g} "
          f"delta=1/8000 (median of {args.repeat}); per-step eps0={plan['info']['eps0']:.4g}, "
          f"Laplace scale={plan['info']['noise_scale']:.4g}")
    print(f"eigh vs expm loop: max |q diff| = {np.abs(q_h - q_e).max():.2e}, "
          f"max |w diff| = {np.abs(w_h - w_e).max():.2e}")
    print(f"{'method':<14}{'seconds':>10}{'us/iter':>10}{'expm/this':>11}")
    for name, t in med.items():
        print(f"{name:<14}{t:>10.3f}{1e6 * t / args.K:>10.1f}{med['loop (expm)'] / t:>11.2f}")
    print(f"goal fit < 1 s: {'met' if med['fit'] < 1.0 else 'NOT met'}")
    return med


if __name__ == "__main__":
    main()
