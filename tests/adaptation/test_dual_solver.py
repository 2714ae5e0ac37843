"""The dual Newton solver of the discrepancy problem: agreement with the SDP, its
certificate, and what the estimator hands it (the noisy moment and public rows only)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skhybrid.adaptation import _regressor
from skhybrid.adaptation._data import make_adaptation_data
from skhybrid.adaptation._discrepancy import clip_rows, second_moment
from skhybrid.adaptation._dual_solver import minimize_discrepancy_dual, simplex_threshold
from skhybrid.adaptation._exact import (
    discrepancy_objective,
    minimize_discrepancy,
    minimize_discrepancy_cvxpy,
    minimize_discrepancy_smoothed,
    project_simplex,
)
from skhybrid.adaptation._regressor import DiscrepancyAdaptationRegressor

cp = pytest.importorskip("cvxpy")

LAM = 1e-3


def _problem(seed, m=40, n=200, d=4, scale=1.0):
    """Source rows and a target moment; scale > 1 pushes M0 outside the source's hull."""
    rng = np.random.default_rng(seed)
    X_src = rng.normal(size=(m, d)) / np.sqrt(d) + rng.normal(size=d) * 0.3
    T = rng.normal(size=(n, d)) / np.sqrt(d) - 0.2
    return scale * second_moment(T), X_src


def _section7(m, scale=1.0, seed=0):
    """The BMS23 section 7 data, centred by the source mean, target clipped to the source radius."""
    D = make_adaptation_data(m, 2000, 0, 10, random_state=seed)
    X_src = D.X_source - D.X_source.mean(0)
    r = float(np.sqrt(np.max(np.sum(X_src**2, axis=1))))
    X_tgt = clip_rows(D.X_target - D.X_source.mean(0), r)
    return scale * second_moment(X_tgt), X_src


def _sdp(M0, X_src, lam=LAM):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        return minimize_discrepancy_cvxpy(M0, X_src, lam)


def test_simplex_threshold_is_the_euclidean_projection():
    rng = np.random.default_rng(0)
    for lam in (1e-3, 0.1, 10.0):
        for _ in range(10):
            s = rng.normal(size=int(rng.integers(1, 300))) * rng.choice([1e-3, 1.0, 100.0])
            theta = simplex_threshold(s, lam)
            q = np.maximum(s - theta, 0.0) / lam
            scale = max(1.0, float(np.abs(s).max()) / lam)  # rounding of s / lam
            np.testing.assert_allclose(q, project_simplex(s / lam), atol=1e-14 * scale)
            assert q.sum() == pytest.approx(1.0, abs=1e-15 * scale * s.size)


@pytest.mark.parametrize("scale", [1.0, 3.0, 0.3])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_agrees_with_the_sdp(seed, scale):
    # scale 1: the target moment is matched (zero discrepancy at the optimum); 3: it lies
    # outside the hull of the x x^T (positive discrepancy, few rows carry the weight).
    M0, X_src = _problem(seed, scale=scale)
    q, info = minimize_discrepancy_dual(M0, X_src, LAM, return_info=True)
    f = discrepancy_objective(q, M0, X_src, LAM)
    q_sdp = _sdp(M0, X_src)
    f_sdp = discrepancy_objective(q_sdp, M0, X_src, LAM)
    assert info["converged"]
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0)
    assert info["objective"] == pytest.approx(f, rel=1e-9, abs=1e-14)
    # the certificate: no feasible point, the SDP's included, beats f by more than the gap
    assert f <= f_sdp + info["gap"] + 1e-12
    # and the SDP (interior point, tolerance ~1e-8) is not better than the certified value
    assert f_sdp >= f - info["gap"] - 1e-12
    # stated tolerance: the SDP solver's own accuracy (CLARABEL's gap tolerance ~1e-8)
    assert abs(f - f_sdp) <= 1e-8 + 1e-6 * f
    # the weights themselves: both within their bounds of the unique optimum
    assert np.linalg.norm(q - q_sdp) <= info["weights_error_bound"] + np.sqrt(
        2 * max(f_sdp - f + info["gap"], 0.0) / LAM) + 1e-9


def test_certificate_bounds_every_feasible_point():
    M0, X_src = _problem(4, m=30, scale=2.0)
    q, info = minimize_discrepancy_dual(M0, X_src, LAM, return_info=True)
    lower = info["objective"] - info["gap"]  # a lower bound on the optimum
    rng = np.random.default_rng(4)
    others = [np.full(30, 1 / 30), *np.eye(30), *rng.dirichlet(np.ones(30) * 0.3, size=300),
              minimize_discrepancy_smoothed(M0, X_src, LAM)]
    assert all(discrepancy_objective(p, M0, X_src, LAM) >= lower - 1e-12 for p in others)
    assert info["weights_error_bound"] == pytest.approx(np.sqrt(2 * max(info["gap"], 0) / LAM))


def test_zero_discrepancy_when_target_is_a_reweighted_source():
    rng = np.random.default_rng(5)
    X_src = rng.normal(size=(50, 3))
    M0 = second_moment(X_src, rng.dirichlet(np.ones(50)))
    q, info = minimize_discrepancy_dual(M0, X_src, 1e-6, return_info=True)
    M = M0 - second_moment(X_src, q)
    assert np.max(np.abs(np.linalg.eigvalsh(M))) <= 1e-9
    assert info["converged"]


def test_section7_matches_sdp_and_passes_do_not_grow_with_rows():
    M0, X_src = _section7(1000)
    q, info = minimize_discrepancy_dual(M0, X_src, LAM, return_info=True)
    f_sdp = discrepancy_objective(_sdp(M0, X_src), M0, X_src, LAM)
    assert info["objective"] <= f_sdp + info["gap"] + 1e-12
    passes = [info["n_passes"]]
    for m in (5000, 20000):
        M0, X_src = _section7(m)
        _, info = minimize_discrepancy_dual(M0, X_src, LAM, return_info=True)
        assert info["converged"]
        passes.append(info["n_passes"])
    # the work is a number of passes over the rows that does not grow with m
    assert max(passes) <= 2 * min(passes) + 5


def test_minimize_discrepancy_dispatches_and_bad_inputs():
    M0, X_src = _problem(6)
    np.testing.assert_allclose(minimize_discrepancy(M0, X_src, LAM, method="dual"),
                               minimize_discrepancy_dual(M0, X_src, LAM))
    with pytest.raises(ValueError, match="lam must be > 0"):
        minimize_discrepancy_dual(M0, X_src, 0.0)
    with pytest.raises(ValueError, match="tol"):
        minimize_discrepancy_dual(M0, X_src, LAM, tol=-1.0)
    with pytest.raises(ValueError, match="max_iter"):
        minimize_discrepancy_dual(M0, X_src, LAM, max_iter=0)
    with pytest.raises(ValueError, match="columns"):
        minimize_discrepancy_dual(M0, X_src[:, :2], LAM)


def test_step_budget_exhausted_warns_and_returns_best_feasible():
    M0, X_src = _problem(7, scale=3.0)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        q, info = minimize_discrepancy_dual(M0, X_src, LAM, max_iter=2, return_info=True)
    assert not info["converged"] and info["n_iter"] == 2
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0)


# ----------------------------------------------------------------------------- estimator


def _stack(D):
    m, n = len(D.X_source), len(D.X_target)
    X = np.vstack([D.X_source, D.X_target])
    y = np.concatenate([D.y_source, np.full(n, np.nan)])
    return X, y, np.arange(m + n) < m


def test_estimator_hands_the_solver_the_released_moment_and_public_rows_only(monkeypatch):
    D = make_adaptation_data(80, 500, 0, d=4, random_state=2)
    X, y, pub = _stack(D)
    seen = []
    real = _regressor.minimize_discrepancy_dual

    def spy(M, rows, lam, **kw):
        seen.append((M.copy(), rows.copy()))
        return real(M, rows, lam, **kw)

    monkeypatch.setattr(_regressor, "minimize_discrepancy_dual", spy)
    reg = DiscrepancyAdaptationRegressor(epsilon=1.0, delta=1e-5, random_state=0)
    reg.fit(X, y, public_mask=pub)
    assert len(seen) == 1
    M, rows = seen[0]
    # the released (noisy, PSD) moment, not the raw target moment ...
    np.testing.assert_array_equal(M, reg.target_moment_)
    X_tgt = clip_rows(D.X_target - D.X_source.mean(0), reg.solver_info_["r"])
    assert not np.allclose(M, second_moment(X_tgt))
    # ... and the centred public rows; no target row is passed
    np.testing.assert_array_equal(rows, D.X_source - D.X_source.mean(0))


def test_estimator_falls_back_to_the_smoothed_solver_without_a_certificate(monkeypatch):
    D = make_adaptation_data(60, 300, 0, d=4, random_state=3)
    X, y, pub = _stack(D)
    ref = DiscrepancyAdaptationRegressor(epsilon=np.inf, solver="exact").fit(
        X, y, public_mask=pub)

    def no_certificate(M, rows, lam, **kw):
        q = np.full(rows.shape[0], 1.0 / rows.shape[0])
        return q, {"converged": False}

    monkeypatch.setattr(_regressor, "minimize_discrepancy_dual", no_certificate)
    with pytest.warns(ConvergenceWarning, match="smoothed numpy solver"):
        reg = DiscrepancyAdaptationRegressor(epsilon=np.inf, solver="exact").fit(
            X, y, public_mask=pub)
    M0, rows = None, D.X_source - D.X_source.mean(0)
    X_tgt = clip_rows(D.X_target - D.X_source.mean(0), reg.solver_info_["r"])
    M0 = second_moment(X_tgt)
    f_ref = discrepancy_objective(ref.sample_weights_, M0, rows, reg.lam)
    f_fallback = discrepancy_objective(reg.sample_weights_, M0, rows, reg.lam)
    # the smoothed solver's accuracy: about 1e-4 of the uniform weights' discrepancy
    f_uniform = discrepancy_objective(np.full(len(rows), 1 / len(rows)), M0, rows, reg.lam)
    assert abs(f_fallback - f_ref) <= 1e-4 * f_uniform
