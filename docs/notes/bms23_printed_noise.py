"""BMS23 §7 with the paper's printed Laplace noise: the measurement in private_adaptation.rst.

Runs Algorithms 1 and 2 (single-stage and two-stage-fw) on the §7 data with the printed
sensitivity (``sensitivity_bound="paper"``) and with the per-step epsilon replaced by the
printed one, so that report-noisy-min's Laplace scale is the paper's
``b = 2 tau sqrt(2K ln(1/delta)) / eps`` (Algorithm 2) and twice that ratio (Algorithm 1).
Prints the target test MSE x 1e-4 (mean +- std over the data sets).

Usage (from the repository root; about 13 s per 5 data sets on one core)::

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python docs/notes/bms23_printed_noise.py [reps] [mu]
"""

import math
import sys
import time

import numpy as np

import skhybrid.adaptation._solvers as solvers
from skhybrid.adaptation import make_adaptation_data
from skhybrid.adaptation._exact import weighted_ridge
from skhybrid.experiments.adaptation import _fit

K, DELTA, LAM, M, D = 1000, 1 / 8000, 1e-3, 1000, 10
EPSILONS = (math.inf, 1.0, 10.0, 100.0, 1000.0)
# printed b = FACTOR * 2 tau sqrt(2K ln(1/delta)) / eps, i.e. eps0 = eps / (FACTOR sqrt(...))
FACTOR = {"single-stage": 2.0, "two-stage-fw": 1.0}


def main(reps=5, mu=100.0):
    results = {}
    start = time.time()
    for rep in range(reps):
        data = make_adaptation_data(M, 8000, 10000, D, random_state=rep)
        for n in (1000, 8000):
            X = np.vstack([data.X_source, data.X_target[:n]])
            y = np.concatenate([data.y_source, np.full(n, np.nan)])
            public = np.arange(M + n) < M

            def mse(coef, data=data):
                return float(np.mean((data.X_test @ coef - data.y_test) ** 2)) * 1e4

            q = np.full(M, 1 / M)
            coef = weighted_ridge(data.X_source, data.y_source, q, 1e-3)[0]
            results.setdefault(("public-only", "-", n), []).append(mse(coef))
            for solver, factor in FACTOR.items():
                for eps in EPSILONS:
                    def printed(epsilon, delta, k, _factor=factor, **kwargs):
                        return epsilon / (_factor * math.sqrt(2 * k * math.log(1 / delta)))

                    calibrate = solvers.comp.calibrate_pure_epsilon
                    solvers.comp.calibrate_pure_epsilon = printed
                    try:
                        reg = _fit(dict(solver=solver, max_iter=K, sensitivity_bound="paper",
                                        mu=mu), X, y, public, eps, DELTA, LAM,
                                   np.random.default_rng([rep, n, int(min(eps, 1e6))]))
                    finally:
                        solvers.comp.calibrate_pure_epsilon = calibrate
                    results.setdefault((solver, eps, n), []).append(mse(reg.coef_))
        print(f"data set {rep + 1}/{reps} done ({time.time() - start:.0f} s)", flush=True)
    print(f"target test MSE x 1e-4, mean +- std over {reps} data sets; printed noise, mu = {mu}")
    for (method, eps, n), values in results.items():
        print(f"{method:14s} eps={eps!s:7s} n={n:5d}: {np.mean(values):6.2f} +- "
              f"{np.std(values):.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5,
         float(sys.argv[2]) if len(sys.argv) > 2 else 100.0)
