"""STR (App. C setting): the naive LinearSVC refit loop vs the exact hard-margin SVM.

Runs ``--rounds`` rounds of non-private STR on the same data and seed with each base
learner and prints wall time per round and the speed-up over the naive loop:

* naive: ``LinearSVC(loss="hinge", C=1e4)`` (a near-hard-margin soft SVM, as KS's C = 10³⁰);
* :class:`~skhybrid.transfer.HardMarginLinearSVC` with the interior-point working-set
  solver and with the Goldfarb–Idnani active-set solver (the default), each refitted from
  scratch ("cold") and warm-started from the previous round's hyperplane ("warm").

The four exact runs compute the same hypotheses (checked: identical target-error
estimates); LinearSVC approximates them. A digest of each exact run's whole sequence of
target-error estimates is printed, to compare two versions of the code (e.g. with
``compare_revisions.py``). ``--skip-naive`` leaves the naive loop out (at the paper's size,
--n 90000 --d 500 --m1 48022, one LinearSVC fit takes minutes); ``--skip-interior-point``
and ``--skip-cold`` leave those exact runs out.

Contenders run interleaved (rotating order) ``--repeats`` times; the table shows the
median over repeats of the seconds per round over the whole run, and the median of the
single rounds after the first (each round timed from one base-learner fit to the next:
sampling, fit, test and reweighting; the first fit starts from the class means, every
later warm fit from the previous one, so this column is what a long run costs per round),
and the time that per-round median projects for ``--project-rounds`` rounds (default
1,250, App. C's run at n = 90,000). BLAS runs on ``--blas-threads`` threads (default 1,
threadpoolctl).

    python benchmarks/bench_str.py [--n 20000] [--d 100] [--rounds 8] [--m1 M] [--repeats 3]
        [--skip-naive] [--skip-interior-point] [--skip-cold] [--blas-threads 1]
        [--project-rounds 1250]
"""

import argparse
import hashlib
import math
import statistics
import time
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from skhybrid.transfer import HardMarginLinearSVC, SubsampleTestReweigh
from skhybrid.transfer._sample_complexity import (
    chi2_plus_one_gaussian_scale,
    str_max_iterations,
    str_subsample_size_app_c,
)


def app_c_data(n_c, n_l, d, k=10, sigma=0.02, alpha=0.01, seed=0):
    """KS App. C: S = N(0, I_d); T has std σ on k coordinates; the target halfspace on
    those k coordinates labels α of T's mass −1."""
    rng = np.random.default_rng(seed)
    w = np.zeros(d)
    w[:k] = 1 / math.sqrt(k)
    b = sigma * norm.ppf(alpha)
    Xs = rng.normal(size=(n_c, d))
    Xt = rng.normal(size=(n_l, d))
    Xt[:, :k] *= sigma
    X = np.vstack([Xs, Xt])
    return X, np.where(X @ w > b, 1, -1), np.r_[np.ones(n_c, bool), np.zeros(n_l, bool)]


_FIT_STARTS = []  # wall-clock start of every base-learner fit of the current STR run


def _timed(cls):
    """``cls`` whose fits record their start times in ``_FIT_STARTS``."""

    class Timed(cls):
        def fit(self, X, y, sample_weight=None):
            _FIT_STARTS.append(time.perf_counter())
            return super().fit(X, y, sample_weight=sample_weight)

    Timed.__name__ = Timed.__qualname__ = cls.__name__
    # What the class declares about its fit (read from the class itself, not inherited:
    # SubsampleTestReweigh then hands it each drawn row once, in a reused buffer) holds for
    # this subclass, which only records times. Without it the benchmark timed STR's
    # reference path (every draw, a fresh array per round), not what a user runs.
    for flag in ("_fit_depends_on_distinct_rows_only", "_fit_keeps_no_view_of_X"):
        if flag in vars(cls):
            setattr(Timed, flag, vars(cls)[flag])
    return Timed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=0.02)
    ap.add_argument("--m1", type=int, default=None,
                    help="subsample size (default: KS App. C's (d + ln(beta/T))/alpha)")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--skip-interior-point", action="store_true")
    ap.add_argument("--skip-cold", action="store_true",
                    help="only the warm-started exact runs (what the App. C reproduction uses)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--blas-threads", type=int, default=1)
    ap.add_argument("--project-rounds", type=int, default=1250,
                    help="rounds to project the per-round median to (App. C's run: 1,250)")
    args = ap.parse_args(argv)
    with threadpool_limits(args.blas_threads, "blas"):
        _run(args)


def _run(args):
    X, y, mask = app_c_data(args.n, 5000, args.d, alpha=args.alpha)
    # KS App. C: (d + ln(0.05/T))/alpha with Algorithm 1's T = 32 log2(8(chi2 + 1)/alpha)
    # / alpha^2 (the union bound's T, not the number of rounds run here).
    t_alg1 = str_max_iterations(args.alpha, chi2_plus_one_gaussian_scale(1.0, 0.02, 10) - 1,
                                constant=32)
    m1 = args.m1 or min(args.n, str_subsample_size_app_c(args.d, args.alpha, t_alg1))
    kw = dict(epsilon=np.inf, alpha=args.alpha, max_iter=args.rounds, subsample_size=m1,
              tau=0.0, random_state=0)
    runs = {}
    if not args.skip_naive:
        runs["naive LinearSVC(C=1e4)"] = SubsampleTestReweigh(
            _timed(LinearSVC)(loss="hinge", C=1e4, max_iter=20000, tol=1e-6), **kw)
    solvers = ["active-set"] + ([] if args.skip_interior_point else ["interior-point"])
    for solver in solvers:
        for warm in (True,) if args.skip_cold else (False, True):
            runs[f"{solver} {'warm' if warm else 'cold'}"] = SubsampleTestReweigh(
                _timed(HardMarginLinearSVC)(solver=solver), warm_start=warm, **kw)
    print(f"App. C: n_curator={args.n}, d={args.d}, k=10, sigma=0.02, "
          f"alpha={args.alpha}, m1={m1}, rounds={args.rounds}; median of {args.repeats} "
          f"interleaved repeats, BLAS threads {args.blas_threads}")
    samples, later, fits = {name: [] for name in runs}, {name: [] for name in runs}, {}
    names = list(runs)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            est = runs[name]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                _FIT_STARTS.clear()
                t0 = time.perf_counter()
                fits[name] = est.fit(X, y, curator_mask=mask)
                t1 = time.perf_counter()
                samples[name].append((t1 - t0) / est.n_iter_)
                # one-class subsamples skip the learner: time only runs with a fit per round
                if est.n_iter_ > 1 and len(_FIT_STARTS) == est.n_iter_:
                    later[name].extend(np.diff(np.r_[_FIT_STARTS, t1])[1:])
    times = {name: statistics.median(ts) for name, ts in samples.items()}
    after = {name: statistics.median(ts) if ts else float("nan") for name, ts in later.items()}
    base_name = next(iter(times))
    base = times[base_name]
    print(f"{'learner':<24}{'s/round':>10}{'med/round':>11}{'speed-up':>10}{'rounds':>8}"
          f"{'last err est':>14}")
    for name, t in times.items():
        f = fits[name]
        print(f"{name:<24}{t:>10.3f}{after[name]:>11.3f}{base / t:>10.1f}{f.n_iter_:>8}"
              f"{f.target_error_estimates_[-1]:>14.4f}")
    print(f"(speed-up over: {base_name}; med/round: median of the single rounds after the "
          "first)")
    for name, t in after.items():
        print(f"projected {args.project_rounds:,} rounds, {name}: "
              f"{args.project_rounds * t / 60:.1f} min")
    exact = [f for name, f in fits.items() if not name.startswith("naive")]
    same = all(np.array_equal(exact[0].target_error_estimates_, f.target_error_estimates_)
               for f in exact[1:])
    print(f"exact hard-margin runs identical: {same}")
    for name, f in fits.items():
        if not name.startswith("naive"):
            est = np.asarray(f.target_error_estimates_, dtype=float)
            print(f"error-estimate digest, {name}: "
                  f"{hashlib.sha256(est.tobytes()).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
