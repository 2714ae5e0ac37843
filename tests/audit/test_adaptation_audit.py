"""White-box DP audits of DiscrepancyAdaptationRegressor's two private primitives.

(a) One report-noisy-min step of the Frank-Wolfe solvers (BMS23 Algorithms 1-2), built by
    :func:`skhybrid.adaptation._solvers.selection_mechanism`, on worst-case neighbouring
    score vectors; pure-DP audit of the declared per-step ε0.
(b) The Gaussian release of the target second moment (``"noisy-moments"``), through
    :func:`skhybrid.adaptation._solvers.noisy_upper_moment`, on neighbouring datasets that
    attain the Frobenius sensitivity ``sqrt(2) r^2 / n``; approximate-DP audit of the 1-d
    projection on the difference direction, on the ε-grid where δ(ε) ∈ [1e-3, 0.1].

Each audit has a mutation twin (noise scale divided by 1.25) that must fail. Statistics:
one-sided Clopper-Pearson bounds at total α = 1e-3 (``tests/audit/_stats.py``); the events
are fixed from the *claimed* privacy loss before sampling; seeds are fixed.
"""

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skhybrid.accounting import _composition as comp
from skhybrid.adaptation._discrepancy import (
    discrepancy_gradient_sensitivity,
    second_moment,
    smoothed_discrepancy_grad,
)
from skhybrid.adaptation._solvers import (
    moments_sensitivity,
    noisy_upper_moment,
    selection_mechanism,
)
from skhybrid.mechanisms import GaussianMechanism, ReportNoisyMax

from ._stats import Event, audit_events

SHRINK = 1.25
N_RNM = 300_000
N_GAUSS = 1_000_000
M_CANDIDATES = 40
EPS = 1.0


# --------------------------------------------------------------------------- premise


def test_gradient_sensitivity_premise():
    """The l_inf change of grad_q F~ between neighbours stays below the tight tau."""
    rng = np.random.default_rng(0)
    m, n, d, r, mu = 30, 6, 3, 1.0, 50.0
    X_src = rng.normal(size=(m, d)) * 0.5
    r_hat = float(np.max(np.linalg.norm(X_src, axis=1)))
    tau = discrepancy_gradient_sensitivity(r, r_hat, mu, n, bound="tight")
    worst = 0.0
    for _ in range(300):
        T = rng.normal(size=(n, d))
        T *= r / np.maximum(np.linalg.norm(T, axis=1, keepdims=True), r)
        T2 = T.copy()
        T2[0] = rng.normal(size=d)
        T2[0] *= r * rng.random() / np.linalg.norm(T2[0])
        q = rng.dirichlet(np.ones(m) * 0.3)
        S = second_moment(X_src, q)
        g1 = smoothed_discrepancy_grad(second_moment(T) - S, X_src, mu)[1]
        g2 = smoothed_discrepancy_grad(second_moment(T2) - S, X_src, mu)[1]
        worst = max(worst, float(np.max(np.abs(g1 - g2))))
    assert 0 < worst <= tau


# --------------------------------------------------------------------------- (a) RNM step


class _ShrunkRNM(ReportNoisyMax):
    """Mutant: the noise 1.25 times too small while declaring the same ε0."""

    def _scaled_epsilon(self):
        return super()._scaled_epsilon() * Fraction(SHRINK)


def _rnm_select_many(mech, scores, n, rng):
    """``n`` independent runs of ``mech(scores, rng)`` (minimize=True), vectorised."""
    return mech._select(scores, rng, n)


def _worst_case_scores(tau):
    """Candidate 0 moves by +tau, every other by -tau (the minimiser's worst case).

    On D all scores are 0, so P_D[select 0] = 1/m; on D' candidate 0 must beat the
    minimum of m - 1 competitors by 2 tau more. With many competitors that minimum is far
    in the Laplace left tail, where the density ratio is exactly e^(2 tau / b) = e^eps0:
    the event {select 0} realises (almost) the full claimed loss.
    """
    d = np.zeros(M_CANDIDATES)
    d2 = np.full(M_CANDIDATES, -tau)
    d2[0] = tau
    return d, d2


def _rnm_audit(mech, eps0, tau, seed):
    s_d, s_d2 = _worst_case_scores(tau)
    assert np.max(np.abs(s_d - s_d2)) <= tau * (1 + 1e-12)
    events = [
        Event("select 0", lambda y: y == 0, "forward"),
        Event("select other", lambda y: y != 0, "reverse"),
    ]
    rng = np.random.default_rng(seed)
    y_d = _rnm_select_many(mech, s_d, N_RNM, rng)
    y_d2 = _rnm_select_many(mech, s_d2, N_RNM, rng)
    return audit_events(y_d, y_d2, events)


def _calibrated_step():
    # One step of a K = 1 run: the selector's per-step eps0 equals the total eps.
    tau = 0.37
    selector, event = selection_mechanism(EPS, 0.0, 1, tau, "laplace")
    mech = selector.mechanism
    assert isinstance(mech, ReportNoisyMax) and mech.minimize
    assert event.epsilon == pytest.approx(EPS) and event.count == 1
    return mech, event.epsilon, tau


def test_vectorised_rnm_matches_public_api():
    mech, _, tau = _calibrated_step()
    scores, _ = _worst_case_scores(tau)
    rng = np.random.default_rng(3)
    direct = np.bincount([mech(scores, rng) for _ in range(3000)], minlength=scores.size)
    many = np.bincount(_rnm_select_many(mech, scores, 3000, np.random.default_rng(4)),
                       minlength=scores.size)
    assert stats.chi2_contingency(np.vstack([direct, many]))[1] > 1e-6


def test_report_noisy_min_step_audit():
    mech, eps0, tau = _calibrated_step()
    result = _rnm_audit(mech, eps0, tau, seed=21)
    assert 0.8 < result.epsilon_lb <= eps0, result.summary()


def test_report_noisy_min_mutant_fails_audit():
    mech, eps0, tau = _calibrated_step()
    mutant = _ShrunkRNM(mech.epsilon, mech.sensitivity, minimize=True)
    result = _rnm_audit(mutant, eps0, tau, seed=21)
    assert result.epsilon_lb > eps0, result.summary()


# --------------------------------------------------------------------------- (b) moments


def _gaussian_events(mu):
    """{L > e} / {L < -e} of the claimed loss of a 1-d Gaussian at noise ratio mu.

    With the projection z scaled so that D sits at 0 and D' at 1, the claimed loss is
    L(z) = mu^2 (1/2 - z), and P_D[L > e] - e^e P_D'[L > e] is exactly the Balle–Wang
    curve δ(e); the grid covers δ(e) ∈ [1e-3, 0.1].
    """
    grid = np.linspace(comp.gaussian_epsilon(mu, 0.1), comp.gaussian_epsilon(mu, 1e-3), 5)
    events = []
    for e in grid:
        t = 0.5 - e / mu**2
        events.append(Event(f"L>{e:.3f}", lambda z, t=t: z < t, "forward", float(e)))
        events.append(Event(f"L<-{e:.3f}", lambda z, t=t: z > 1 - t, "reverse", float(e)))
    return events


def _moment_neighbours(r, n, d):
    """Two datasets differing in one row, x = r e1 vs x' = r e2 (Frobenius-worst case)."""
    T = np.zeros((n, d))
    T[1:, 2] = 0.3 * r  # the other rows are shared
    T2 = T.copy()
    T[0, 0] = r
    T2[0, 1] = r
    return T, T2


def _projected_samples(mech, T, T2, seed):
    """N runs of the release on each side, projected on the unit difference direction."""
    rng = np.random.default_rng(seed)
    d = T.shape[1]
    iu = np.triu_indices(d)
    u_d, u_d2 = second_moment(T)[iu], second_moment(T2)[iu]
    diff = u_d2 - u_d
    delta_norm = float(np.linalg.norm(diff))
    direction = diff / delta_norm
    # One call on N stacked copies = N independent runs of noisy_upper_moment (checked below).
    k = u_d.size  # each stacked row is one release of k coordinates
    y_d = mech(np.tile(u_d, (N_GAUSS, 1)), rng, n_values=k) @ direction
    y_d2 = mech(np.tile(u_d2, (N_GAUSS, 1)), rng, n_values=k) @ direction
    base = u_d @ direction
    return (y_d - base) / delta_norm, (y_d2 - base) / delta_norm, delta_norm


def _moments_setup():
    r, n, d = 1.3, 50, 3
    T, T2 = _moment_neighbours(r, n, d)
    mech = GaussianMechanism(EPS, 1e-5, moments_sensitivity(r, n))
    return mech, T, T2


def test_stacked_release_matches_noisy_upper_moment():
    """A stacked call with n_values=k is k-coordinate releases on the same lattice as the
    estimator's own release (the exact sampler consumes random bits per batch, so the
    draws themselves differ; their law does not)."""
    mech, T, _ = _moments_setup()
    iu = np.triu_indices(T.shape[1])
    k = len(iu[0])
    g, sigma_int, _ = mech.lattice(k)
    direct = np.array([noisy_upper_moment(T, mech, np.random.default_rng(s)) for s in range(200)])
    stacked = mech(np.tile(second_moment(T)[iu], (200, 1)), np.random.default_rng(4),
                   n_values=k)
    for release in (direct, stacked):
        assert np.all(np.mod(release, g) == 0)  # lattice points of the k-value lattice
    assert np.std(direct - second_moment(T)[iu]) == pytest.approx(g * sigma_int, rel=0.1)
    assert np.std(stacked - second_moment(T)[iu]) == pytest.approx(g * sigma_int, rel=0.1)


def test_moments_neighbours_attain_the_sensitivity():
    mech, T, T2 = _moments_setup()
    iu = np.triu_indices(T.shape[1])
    gap = np.linalg.norm(second_moment(T)[iu] - second_moment(T2)[iu])
    assert gap == pytest.approx(mech.sensitivity, rel=1e-12)


def _released_mu(mech, T):
    """Δ/σ of the lattice noise of one release of the d(d+1)/2 upper-moment entries."""
    d = T.shape[1]
    g, sigma_int, _ = mech.lattice(d * (d + 1) // 2)
    return mech.sensitivity / (g * sigma_int)


def _moments_audit(mech, mu, seed=31):
    T, T2 = _moments_setup()[1:]
    z_d, z_d2, _ = _projected_samples(mech, T, T2, seed)
    result = audit_events(z_d, z_d2, _gaussian_events(mu))
    return result, result.delta_excess(lambda e: comp.gaussian_delta(mu, e))


def test_moments_release_audit():
    mech, T, _ = _moments_setup()
    ev = mech.event()
    mu = _released_mu(mech, T)
    result, excess = _moments_audit(mech, mu)
    assert excess <= 0, result.summary()
    # The zCDP charge covers the released noise's curve at the declared (ε, δ).
    assert comp.zcdp_epsilon(ev.rho, ev.delta) <= ev.epsilon * (1 + 1e-12)
    assert comp.gaussian_delta(mu, ev.epsilon) <= ev.delta


def test_moments_release_mutant_fails_audit(monkeypatch):
    mech, T, _ = _moments_setup()
    mu = _released_mu(mech, T)  # the claim, fixed before the mutation
    shrunk = mech.lattice

    def lattice(n_values, integer=False, **_):  # 1.25 times less noise than declared
        g, sigma_int, rho = shrunk(n_values, integer)
        return g, max(1, round(sigma_int / SHRINK)), rho

    monkeypatch.setattr(mech, "lattice", lattice)
    result, excess = _moments_audit(mech, mu)
    assert excess > 0, result.summary()
