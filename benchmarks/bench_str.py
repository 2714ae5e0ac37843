"""STR (App. C setting, reduced): naive LinearSVC refit loop vs the working-set hard-margin SVM.

Runs ``max_iter`` rounds of non-private STR on the same data and seed with three base
learners and prints wall time per round and ratios against the naive loop:

* naive: ``LinearSVC(loss="hinge", C=1e4)`` (a near-hard-margin soft SVM, as KS's C = 10³⁰);
* cold:  :class:`~skhybrid.transfer.HardMarginLinearSVC`, refitted from scratch;
* warm:  the same with ``SubsampleTestReweigh(warm_start=True)``.

Cold and warm compute the same hypotheses (checked); LinearSVC approximates them.

    python benchmarks/bench_str.py [--n 20000] [--d 100] [--rounds 8]
"""

import argparse
import math
import time
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from skhybrid.transfer import HardMarginLinearSVC, SubsampleTestReweigh


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=0.02)
    args = ap.parse_args(argv)
    X, y, mask = app_c_data(args.n, 5000, args.d, alpha=args.alpha)
    m1 = int((args.d + math.log(0.05 / args.rounds)) / args.alpha)  # KS App. C (typo'd sign)
    kw = dict(epsilon=np.inf, alpha=args.alpha, max_iter=args.rounds, subsample_size=m1,
              tau=0.0, random_state=0)
    runs = {
        "naive LinearSVC(C=1e4)": SubsampleTestReweigh(
            LinearSVC(loss="hinge", C=1e4, max_iter=20000, tol=1e-6), **kw),
        "hard-margin cold": SubsampleTestReweigh(HardMarginLinearSVC(), **kw),
        "hard-margin warm": SubsampleTestReweigh(HardMarginLinearSVC(), warm_start=True, **kw),
    }
    print(f"App. C reduced: n_curator={args.n}, d={args.d}, k=10, sigma=0.02, "
          f"alpha={args.alpha}, m1={m1}, rounds={args.rounds}")
    times, fits = {}, {}
    for name, est in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            fits[name] = est.fit(X, y, curator_mask=mask)
            times[name] = (time.perf_counter() - t0) / est.n_iter_
    base = times["naive LinearSVC(C=1e4)"]
    print(f"{'learner':<24}{'s/round':>10}{'speed-up':>10}{'rounds':>8}{'last err est':>14}")
    for name, t in times.items():
        f = fits[name]
        print(f"{name:<24}{t:>10.3f}{base / t:>10.1f}{f.n_iter_:>8}"
              f"{f.target_error_estimates_[-1]:>14.4f}")
    same = np.array_equal(fits["hard-margin cold"].target_error_estimates_,
                          fits["hard-margin warm"].target_error_estimates_)
    print(f"cold and warm runs identical: {same}")


if __name__ == "__main__":
    main()
