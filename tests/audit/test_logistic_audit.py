"""Black-box canary audit of objective perturbation (docs/notes/auditing.rst, layer D).

Neighbours: ten private rows at x = 1 with label +1, and the same with one label flipped —
the replace-one change that moves the perturbed gradient the most once rows are clipped
to ``data_norm``. The noise comes from ``ObjectivePerturbation.draw_noise`` (the code the
estimator runs); the minimiser from a vectorised 1-d Newton solve that is checked against
the estimator's own L-BFGS solve. A threshold on the output is chosen on one half of the
runs and Clopper-Pearson bounds are taken on the other half.

Measured power (ε_lb at 2e4 runs per side): noise as calibrated −0.19; shrunk 4× 0.13,
10× 0.62, 30× 1.97, 1000× 7.1. CMS's analysis is loose on such data, so only a ≳ 30× bug
is caught: this audit is a canary for gross bugs (missing noise, clipping ignored); the
calibration itself is pinned by the exact tests in tests/learners/test_logistic.py.
"""

import numpy as np
import pytest
from scipy.special import expit

from skhybrid.learners._objective_perturbation import ObjectivePerturbation

from ._stats import pure_dp_lower_bound

EPS, LAM, N_ROWS, RUNS = 1.0, 0.05, 10, 20_000


def _neighbours():
    x = np.ones(N_ROWS)
    y = np.ones(N_ROWS)
    y_flip = y.copy()
    y_flip[0] = -1.0
    return x, y, y_flip


def _newton(x, y, b, mech, iters=60):
    """Minimise (1/n)Σ log(1+exp(−y u x)) + (Λ+Δ)u²/2 + b u/n for every run at once."""
    n, reg, xy = len(x), mech.lam + mech.extra_reg, x * y
    u = np.zeros(b.shape[0])
    for _ in range(iters):
        s = expit(-np.outer(u, xy))
        grad = -(s * xy).sum(1) / n + reg * u + b / n
        hess = (s * (1 - s) * xy**2).sum(1) / n + reg
        u -= grad / hess
    return u


def _outputs(y, rng, shrink=1.0):
    x = np.ones(N_ROWS)
    mech = ObjectivePerturbation(EPS, LAM, N_ROWS)
    b = np.array([mech.draw_noise(1, rng)[0] for _ in range(RUNS)]) / shrink
    return _newton(x, y, b, mech)


def _epsilon_lower_bound(shrink):
    _, y, y_flip = _neighbours()
    a = _outputs(y, np.random.default_rng(1), shrink)
    b = _outputs(y_flip, np.random.default_rng(2), shrink)
    half = RUNS // 2
    grid = np.quantile(np.r_[a[:half], b[:half]], np.linspace(0.01, 0.99, 99))

    def empirical(t):
        return np.log((np.mean(a[:half] > t) + 1e-9) / (np.mean(b[:half] > t) + 1e-9))

    t = max(grid, key=empirical)
    return pure_dp_lower_bound((a[half:] > t).sum(), half, (b[half:] > t).sum(), half)


def test_vectorised_solver_matches_the_estimators_solver():
    x, y, _ = _neighbours()
    mech = ObjectivePerturbation(EPS, LAM, N_ROWS)
    rng = np.random.default_rng(0)
    b = np.array([mech.draw_noise(1, rng)[0] for _ in range(20)])
    ours = _newton(x, y, b, mech)
    ref = [mech.solve(x[:, None], y, np.array([bi]))[0][0] for bi in b]
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)


def test_objective_perturbation_respects_epsilon():
    assert _epsilon_lower_bound(shrink=1.0) <= EPS


@pytest.mark.parametrize("shrink", [30.0, 1e3])
def test_mutation_twin_without_real_noise_is_caught(shrink):
    assert _epsilon_lower_bound(shrink) > EPS
