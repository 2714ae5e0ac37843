"""Fit time of DPLogisticRegression against scikit-learn's LogisticRegression.

Every estimator is timed on the same data in the same run, so the ratios are meaningful
on a shared machine even when the absolute times are not. For each (n, d) the script
fits

* ``DPLogisticRegression(epsilon=1)`` — objective perturbation, the private fit;
* ``DPLogisticRegression(epsilon=np.inf)`` — the same objective without noise;
* ``LogisticRegression(solver="lbfgs")`` and ``LogisticRegression(solver="liblinear")``,

``--repeat`` times each, interleaved, and reports the median wall time and the ratios
DP / sklearn. All fits use C = 1 on standardised features, and the norm bound
``data_norm`` is the largest row norm (read from the data, which is fine for timing but
not for a release), so nothing is clipped and ``epsilon=np.inf`` solves the same problem
as liblinear (which also regularises the intercept). A ``*`` marks a size at which some
fit stopped at ``max_iter`` (a ``ConvergenceWarning``).

Run::

    python benchmarks/bench_dp_logistic.py                 # n = 1e3, 1e4, 1e5; d = 10, 50
    python benchmarks/bench_dp_logistic.py --n 1000 10000 --d 10 --repeat 3
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from skhybrid.learners import DPLogisticRegression


def make_data(n, d, seed=0):
    """A binary problem with standardised features, and its largest row norm."""
    X, y = make_classification(n_samples=n, n_features=d, n_informative=max(2, d // 2),
                               random_state=seed)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y, float(np.linalg.norm(X, axis=1).max())


def estimators(seed, data_norm=1.0):
    return {
        "DP eps=1": DPLogisticRegression(epsilon=1.0, data_norm=data_norm, random_state=seed),
        "DP eps=inf": DPLogisticRegression(epsilon=np.inf, data_norm=data_norm),
        "lbfgs": LogisticRegression(solver="lbfgs", C=1.0),
        "liblinear": LogisticRegression(solver="liblinear", C=1.0),
    }


def time_fits(X, y, data_norm, repeat):
    """Median fit time (s) of each estimator (fits interleaved), and whether any fit
    raised a ConvergenceWarning."""
    times = {name: [] for name in estimators(0)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        for r in range(repeat):
            for name, est in estimators(r, data_norm).items():
                start = time.perf_counter()
                est.fit(X, y)
                times[name].append(time.perf_counter() - start)
    unconverged = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return {name: float(np.median(t)) for name, t in times.items()}, unconverged


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--d", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--repeat", type=int, default=5,
                        help="fits per estimator and size (the median is reported)")
    args = parser.parse_args(argv)

    # Warm-up: first calls pay for imports and caches, which is not fit time.
    X, y, data_norm = make_data(200, 5)
    time_fits(X, y, data_norm, 1)

    header = (f"{'n':>7} {'d':>3} | {'DP eps=1':>9} {'DP inf':>9} {'lbfgs':>9} "
              f"{'liblinear':>9} | {'eps1/lbfgs':>10} {'eps1/liblin':>11} {'inf/lbfgs':>9}")
    print("median fit time in ms over", args.repeat, "repeats; ratio > 1: DP is slower")
    print(header)
    print("-" * len(header))
    for n in args.n:
        for d in args.d:
            X, y, data_norm = make_data(n, d)
            t, unconverged = time_fits(X, y, data_norm, args.repeat)
            ms = {k: 1e3 * v for k, v in t.items()}
            print(f"{n:>7} {d:>3} | {ms['DP eps=1']:>9.1f} {ms['DP eps=inf']:>9.1f} "
                  f"{ms['lbfgs']:>9.1f} {ms['liblinear']:>9.1f} | "
                  f"{t['DP eps=1'] / t['lbfgs']:>10.2f} {t['DP eps=1'] / t['liblinear']:>11.2f} "
                  f"{t['DP eps=inf'] / t['lbfgs']:>9.2f}{' *' if unconverged else ''}", flush=True)


if __name__ == "__main__":
    main()
