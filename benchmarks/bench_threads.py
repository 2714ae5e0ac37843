"""BLAS threads on small dense fits: one thread vs the default pool, per estimator.

On these 2-core machines OpenBLAS starts one thread per core, and small dense products
(d up to a few hundred) pay more in thread hand-off than they gain. This script fits each
estimator under ``threadpoolctl.threadpool_limits(1, "blas")`` and under the default pool,
interleaved and repeated, and prints median times and the ratio. Run it WITHOUT
``OPENBLAS_NUM_THREADS`` set (the point is the default pool)::

    python benchmarks/bench_threads.py --repeats 5
    python benchmarks/bench_threads.py --load 1    # one busy process: a shared machine
"""

import argparse
import multiprocessing
import os
import statistics
import time
import warnings
from contextlib import nullcontext

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

warnings.filterwarnings("ignore")


def cases():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from skhybrid.adaptation import DiscrepancyAdaptationRegressor, make_adaptation_data
    from skhybrid.learners import DPLogisticRegression
    from skhybrid.transfer import HardMarginLinearSVC, NoisySGDClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    w = rng.normal(size=60)
    Xs = rng.normal(size=(8000, 60))
    ys = np.where(Xs @ w > 0, 1, -1)
    D = make_adaptation_data(2000, 20_000, 10, d=10, random_state=0)
    Xa = np.vstack([D.X_source, D.X_target])
    ya = np.r_[D.y_source, np.full(len(D.X_target), np.nan)]
    pa = np.arange(len(Xa)) < 2000
    return {
        "DPLogisticRegression (569 x 30)": lambda: DPLogisticRegression(
            epsilon=1.0, data_norm=5.0, classes=[0, 1], random_state=0).fit(X, y),
        "HardMarginLinearSVC active-set (8000 x 60)": lambda: HardMarginLinearSVC().fit(Xs, ys),
        "HardMarginLinearSVC interior-point (8000 x 60)": lambda: HardMarginLinearSVC(
            solver="interior-point").fit(Xs, ys),
        "DiscrepancyAdaptation noisy-moments (22k x 10)": lambda: DiscrepancyAdaptationRegressor(
            epsilon=1.0, random_state=0).fit(Xa, ya, public_mask=pa),
        "NoisySGDClassifier (569 x 30)": lambda: NoisySGDClassifier(
            epsilon=1.0, delta=1e-5, random_state=0).fit(X / 6, y),
    }


def _spin():
    while True:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--load", type=int, default=0,
                        help="busy processes to run alongside (emulates a shared machine)")
    args = parser.parse_args(argv)
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    for p in spinners:
        p.start()
    if os.environ.get("OPENBLAS_NUM_THREADS"):
        print("warning: OPENBLAS_NUM_THREADS is set; the 'default' column is then not the default")
    pools = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    print(f"# BLAS pools: {pools}; {args.load} busy processes; {args.repeats} interleaved "
          "repeats, median seconds")
    print(f"{'fit':<48} {'1 thread':>9} {'default':>9} {'default/1':>10}")
    for name, fit in cases().items():
        fit()  # warm-up (imports, caches)
        one, default = [], []
        for r in range(args.repeats):
            for limited in ((True, False) if r % 2 == 0 else (False, True)):  # alternate
                with threadpool_limits(1, "blas") if limited else nullcontext():
                    t = time.perf_counter()
                    fit()
                    (one if limited else default).append(time.perf_counter() - t)
        a, b = statistics.median(one), statistics.median(default)
        print(f"{name:<48} {a:9.3f} {b:9.3f} {b / a:10.2f}")
    for p in spinners:
        p.terminate()


if __name__ == "__main__":
    main()
