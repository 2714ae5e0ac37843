"""Black-box audit of DPLogisticRegression through ``fit`` (the whole estimator).

Neighbours: ten private rows at x = 1 labelled 1, and the same with row 0 labelled 0 —
the replace-one change that moves the perturbed gradient the most. Each run is a full
``DPLogisticRegression.fit`` (validation, clipping, charge, noise, Newton solve, the
released ``coef_``); a threshold on ``coef_`` is chosen on the first half of the runs and
Clopper-Pearson bounds are taken on the second half. The mutation twin shrinks the noise
the fit draws 100-fold (objective perturbation's analysis is loose on such data, so a
smaller shrink is not caught at this size: see test_logistic_audit.py).

Measured at claimed ε = 1 (2 × 500 fits, the quick run): ε_lb = −6.1; twin 3.39 (at
2 × 1,000 fits: −2.15 and 4.09).
"""

import numpy as np
import pytest

from skhybrid import DPLogisticRegression
from skhybrid.learners import _objective_perturbation as op

from ._stats import pure_dp_lower_bound

EPS, N_ROWS = 1.0, 10
RUNS = [pytest.param(500, id="quick"), pytest.param(4000, id="full", marks=pytest.mark.slow)]


def _coefs(y, seeds):
    X = np.ones((N_ROWS, 1))
    return np.array([DPLogisticRegression(epsilon=EPS, C=2.0, data_norm=1.0,
                                          fit_intercept=False, classes=[0, 1],
                                          random_state=int(s)).fit(X, y).coef_[0, 0]
                     for s in seeds])


def _epsilon_lower_bound(runs):
    y = np.ones(N_ROWS, dtype=int)
    y2 = y.copy()
    y2[0] = 0
    a, b = _coefs(y, range(runs)), _coefs(y2, range(runs, 2 * runs))
    half = runs // 2
    grid = np.quantile(np.r_[a[:half], b[:half]], np.linspace(0.01, 0.99, 99))

    def empirical(t):
        return np.log((np.mean(a[:half] > t) + 1e-9) / (np.mean(b[:half] > t) + 1e-9))

    t = max(grid, key=empirical)
    return pure_dp_lower_bound((a[half:] > t).sum(), half, (b[half:] > t).sum(), half)


@pytest.mark.parametrize("runs", RUNS)
def test_fit_respects_epsilon(runs):
    assert _epsilon_lower_bound(runs) <= EPS


@pytest.mark.parametrize("runs", RUNS)
def test_twin_with_shrunk_noise_is_caught(monkeypatch, runs):
    draw = op.ObjectivePerturbation.draw_noise
    monkeypatch.setattr(op.ObjectivePerturbation, "draw_noise",
                        lambda self, d, rng: draw(self, d, rng) / 100.0)
    assert _epsilon_lower_bound(runs) > EPS
