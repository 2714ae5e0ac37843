"""Stage 1 of DiscrepancyAdaptationRegressor at 10^4 .. 10^6 public rows: SDP vs dual Newton.

BLAS is pinned to one thread (threadpoolctl) for every contender.

Data: the section 7 setting of Bassily, Mohri & Suresh (2023), d = 10, n = 8000 private
target rows, m public source rows, centred by the source mean, target clipped to the
source radius, ``lam = 1e-3``. Both contenders solve BMS23 problem (5) on the same
``(M0, X_src)``:

- ``sdp``: the reference, :func:`~skhybrid.adaptation._exact.minimize_discrepancy_cvxpy`
  (cvxpy + CLARABEL, one variable per public row) -- the estimator's stage 1 before;
- ``dual``: :func:`~skhybrid.adaptation._dual_solver.minimize_discrepancy_dual`, Newton on
  the d x d dual, stopped on its duality gap -- the estimator's stage 1 now.

For every m up to ``--max-old`` (default 200,000) the two run interleaved, ``--repeat``
times; the table gives medians, the ratio, both objectives ``P(q)`` and the dual's
certified gap. Above it only ``dual`` runs (the SDP needed 4.7 GB and failed at 200k rows
in the issue's measurement, so ``--max-old 50000`` keeps a run short). A last line times
a whole ``DiscrepancyAdaptationRegressor(epsilon=1).fit`` at the largest m.

Usage: python benchmarks/bench_adaptation_scale.py [--m 10000 50000 200000 1000000]
       [--repeat 3] [--max-old 200000] [--scale 1.0] [--skip-fit]

``--scale 3`` multiplies M0 by 3, which puts it outside the hull of the source's
``x x^T``: positive discrepancy at the optimum, weight on a few rows, the solver's harder
case.
"""

import argparse
import resource
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from skhybrid.adaptation import DiscrepancyAdaptationRegressor, make_adaptation_data
from skhybrid.adaptation._discrepancy import clip_rows, second_moment
from skhybrid.adaptation._dual_solver import minimize_discrepancy_dual
from skhybrid.adaptation._exact import discrepancy_objective, minimize_discrepancy_cvxpy

LAM = 1e-3


def problem(m, n=8000, d=10, seed=0, scale=1.0):
    D = make_adaptation_data(m, n, 0, d, random_state=seed)
    X_src = D.X_source - D.X_source.mean(0)
    r = float(np.sqrt(np.max(np.sum(X_src**2, axis=1))))
    M0 = scale * second_moment(clip_rows(D.X_target - D.X_source.mean(0), r))
    return D, M0, X_src


def sdp(M0, X_src):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        return minimize_discrepancy_cvxpy(M0, X_src, LAM), None


def dual(M0, X_src):
    return minimize_discrepancy_dual(M0, X_src, LAM, return_info=True)


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, nargs="+", default=[10000, 50000, 200000, 1000000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-old", type=int, default=200000)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply M0: > 1 puts it outside the hull of the source's "
                             "x x^T (positive discrepancy, few weighted rows: the hard case)")
    parser.add_argument("--skip-fit", action="store_true")
    args = parser.parse_args(argv)

    with threadpool_limits(limits=1):
        print(f"BLAS threads: 1 (threadpoolctl); d = 10, n = 8000, lam = 1e-3, M0 x {args.scale:g}; "
              f"median of {args.repeat}, contenders interleaved")
        print(f"{'m':>9} {'sdp s':>9} {'dual s':>9} {'sdp/dual':>9} {'P(q) sdp':>12} "
              f"{'P(q) dual':>12} {'dual gap':>9} {'passes':>7}")
        M0, X_src = problem(1000)[1:]
        dual(M0, X_src)  # warm-up (imports)
        sdp(M0, X_src)
        medians = {}
        for m in args.m:
            _, M0, X_src = problem(m, scale=args.scale)
            contenders = {"dual": dual}
            if m <= args.max_old:
                contenders["sdp"] = sdp
            times = {k: [] for k in contenders}
            outs = {}
            for _ in range(args.repeat):
                for name, fn in contenders.items():
                    t, outs[name] = timed(fn, M0, X_src)
                    times[name].append(t)
            med = {k: float(np.median(v)) for k, v in times.items()}
            medians[m] = med
            q, info = outs["dual"]
            f_dual = discrepancy_objective(q, M0, X_src, LAM)
            if "sdp" in med:
                f_sdp = discrepancy_objective(outs["sdp"][0], M0, X_src, LAM)
                old = f"{med['sdp']:>9.2f}"
                ratio = f"{med['sdp'] / med['dual']:>9.1f}"
                fs = f"{f_sdp:>12.5e}"
            else:
                old, ratio, fs = f"{'-':>9}", f"{'-':>9}", f"{'-':>12}"
            print(f"{m:>9} {old} {med['dual']:>9.3f} {ratio} {fs} {f_dual:>12.5e} "
                  f"{info['gap']:>9.1e} {info['n_passes']:>7}", flush=True)
        ms = sorted(medians)
        if len(ms) > 1:
            lo, hi = ms[0], ms[-1]
            print(f"dual time ratio {hi}/{lo} rows: "
                  f"{medians[hi]['dual'] / medians[lo]['dual']:.1f}x for {hi / lo:.0f}x rows")

        if args.skip_fit:
            return medians
        # One whole private fit at the largest m (validation, centring, release, stage 2).
        m = ms[-1]
        D = make_adaptation_data(m, 8000, 0, 10, random_state=0)
        X = np.vstack([D.X_source, D.X_target])
        y = np.concatenate([D.y_source, np.full(8000, np.nan)])
        public = np.arange(len(X)) < m
        reg = DiscrepancyAdaptationRegressor(epsilon=1.0, delta=1e-6, random_state=0)
        t, _ = timed(lambda: reg.fit(X, y, public_mask=public))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"whole fit, m = {m}, eps = 1: {t:.2f} s; peak RSS of this process "
              f"{rss:.0f} MB")
    return medians


if __name__ == "__main__":
    main()
