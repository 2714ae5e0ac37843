"""White-box statistical DP audits of skhybrid's mechanisms (docs/notes/auditing.rst, layer C).

Each audit

1. builds a worst-case neighbouring pair through the mechanism's public API;
2. fixes its events *before* sampling, by thresholding the **claimed** privacy loss
   (computed from the declared :class:`~skhybrid.accounting.PrivacyEvent`, never from
   the noise the code actually draws);
3. draws N outputs per side with a fixed seed (one call on N copies of the input is
   N independent runs);
4. asserts, with Clopper-Pearson bounds at total α = 1e-3 (``tests/audit/_stats.py``),
   that the lower bound on the privacy loss does not exceed the claim;
5. runs the same audit on a **mutation twin** (noise scaled down by 1.25, or the
   classic exp(εu/Δ) bug for the exponential mechanism) and asserts that it fails.
   An audit that cannot fail proves nothing.

A correct mechanism fails one audit with probability at most 1e-3 (union bound over
every Clopper-Pearson bound; see ``_stats``); the seeds are fixed, so the suite is
deterministic. ``AUDIT_RESULTS`` collects the measured bounds (the audit power).
"""

import math
import types
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skhybrid.accounting import PrivacyAccountant
from skhybrid.accounting import _composition as comp
from skhybrid.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GaussianRandomizedResponse,
    LaplaceMechanism,
    RandomizedResponse,
)
from skhybrid.mechanisms import _noise
from skhybrid.mechanisms import gaussian as gaussian_module
from skhybrid.mechanisms import randomized_response as rr_module

from ._stats import ALPHA, Event, audit_events

SHRINK = 1.25  # the noise-scale bug every mutation twin carries
N_PURE = 100_000
N_GAUSS = 1_000_000

#: name -> measured bound (ε_lb for pure DP; max δ_lb − δ_claimed(ε) for approx DP).
AUDIT_RESULTS = {}


def _rng(seed):
    return np.random.default_rng(seed)


def _scaled_noise(factor):
    """A stand-in for the ``_noise`` module whose Gaussian draws are ``factor`` times too small."""
    ns = types.SimpleNamespace(**{name: getattr(_noise, name) for name in _noise.__all__})
    ns.gaussian = lambda rng, sigma, size=None, *, tag=None: _noise.gaussian(
        rng, np.asarray(sigma) / factor, size, tag=tag)
    ns.discrete_gaussian = lambda rng, sigma, size, *, unit=1.0, tag=None: (
        _noise.discrete_gaussian(rng, max(1, round(sigma / factor)), size, unit=unit, tag=tag))
    return ns


def _effective_mu(mech, sens, n):
    """Δ/σ of the noise a release of ``n`` coordinates actually carries (the lattice's).

    The lattice noise is a discrete Gaussian; its privacy curve for a shift by a lattice
    vector is that of the continuous Gaussian at the same μ to within the audit's
    resolution (Canonne, Kamath & Steinke 2020, §2), so the Balle–Wang curve at this μ is
    the sampler's claim; the accountant's zCDP charge must cover it (checked below)."""
    if hasattr(mech, "lattice"):
        g, sigma_int, _ = mech.lattice(n)
        return sens / (g * sigma_int)
    return sens / mech.sigma


# --------------------------------------------------------------------------- Laplace


class _ShrunkLaplace(LaplaceMechanism):
    """Mutant: lattice noise calibrated for 1.25ε while declaring ε."""

    def __call__(self, value, rng):
        return LaplaceMechanism(SHRINK * self.epsilon, self.sensitivity)(value, rng)


def _laplace_audit(mech, seed):
    """D = 0, D' = Δ (a query of sensitivity Δ moving by Δ)."""
    event = mech.event()
    eps, sens = event.epsilon, mech.sensitivity

    # Claimed privacy loss ln p_D(y)/p_D'(y) = ε(|y−Δ| − |y|)/Δ: it equals +ε exactly on
    # y ≤ 0 and −ε on y ≥ Δ, the events where the ratio of probabilities is e^±ε.
    def loss(y):
        return eps * (np.abs(y - sens) - np.abs(y)) / sens

    events = [
        Event("loss=+eps", lambda y: loss(y) >= eps * (1 - 1e-9), "forward"),
        Event("loss=-eps", lambda y: loss(y) <= -eps * (1 - 1e-9), "reverse"),
    ]
    rng = _rng(seed)
    y_d = mech(np.zeros(N_PURE), rng)
    y_d2 = mech(np.full(N_PURE, sens), rng)
    return audit_events(y_d, y_d2, events), eps


def test_laplace_audit():
    result, eps = _laplace_audit(LaplaceMechanism(epsilon=1.0, sensitivity=2.0), seed=11)
    AUDIT_RESULTS["laplace"] = result.epsilon_lb
    assert result.epsilon_lb <= eps, result.summary()
    # Power sanity: the bound is informative, not just -inf.
    assert result.epsilon_lb > 0.9


def test_laplace_mutant_fails_audit():
    result, eps = _laplace_audit(_ShrunkLaplace(epsilon=1.0, sensitivity=2.0), seed=11)
    AUDIT_RESULTS["laplace_mutant"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


# --------------------------------------------------------------------------- randomized response


class _LeakyRR(RandomizedResponse):
    """Mutant: keeps the bit as if ε were 1.25 times larger, while declaring ε."""

    @property
    def flip_probability(self):
        return 1.0 / (1.0 + math.exp(SHRINK * self.epsilon))


def _rr_audit(mech, seed):
    """One agent with bit 0 (D) or bit 1 (D'); claimed loss is +ε on report 0, −ε on 1."""
    eps = mech.event(population="local").epsilon
    events = [
        Event("report=0", lambda r: r == 0, "forward"),
        Event("report=1", lambda r: r == 1, "reverse"),
    ]
    rng = _rng(seed)
    r_d = mech(np.zeros(N_PURE, dtype=int), rng)
    r_d2 = mech(np.ones(N_PURE, dtype=int), rng)
    return audit_events(r_d, r_d2, events), eps


def test_randomized_response_audit():
    result, eps = _rr_audit(RandomizedResponse(epsilon=1.0), seed=12)
    AUDIT_RESULTS["randomized_response"] = result.epsilon_lb
    assert 0.9 < result.epsilon_lb <= eps, result.summary()


def test_randomized_response_mutant_fails_audit():
    result, eps = _rr_audit(_LeakyRR(epsilon=1.0), seed=12)
    AUDIT_RESULTS["randomized_response_mutant"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


# --------------------------------------------------------------------------- exponential mechanism

N_CANDIDATES = 10


class _ShrunkExponential(ExponentialMechanism):
    """Mutant: the rate 1.25 times too large (selects as if ε were 1.25ε)."""

    def _scaled_epsilon(self):
        return super()._scaled_epsilon() * Fraction(SHRINK)


class _ClassicBugExponential(ExponentialMechanism):
    """Mutant: the classic bug, exp(εu/Δ) for scores that are not monotone (2× the loss)."""

    def _scaled_epsilon(self):
        return Fraction(self.epsilon)


def _select_many(mech, scores, n, rng):
    """``n`` independent runs of ``mech(scores, rng)``, vectorised (the exact sampler's
    kept proposals are i.i.d.; :func:`test_vectorised_selection_matches_public_api`
    checks the law against ``n`` public calls)."""
    return mech._select(scores, rng, n)


def _worst_case_scores(sensitivity, monotonic):
    """Neighbouring score vectors with the largest privacy loss on a measurable event.

    Non-monotone: candidate 0 moves by +Δ and every other candidate by −Δ, which makes
    the two-point privacy loss {ε − c on 0, −c elsewhere} (the mechanism is
    ε-bounded-range); the gap between candidate 0 and the rest (0 on D, −2Δ on D')
    balances the two events, P_D(0) = 0.1, so both are cheap to estimate.
    Monotone: the other candidates all gain Δ, candidate 0 stays.
    """
    base = np.zeros(N_CANDIDATES)
    if monotonic:
        d, d2 = base.copy(), base + sensitivity
        d[0] = d2[0] = -0.5 * sensitivity
        return d, d2
    shift = np.full(N_CANDIDATES, -sensitivity / 2)
    shift[0] = sensitivity / 2
    base[0] = -sensitivity
    return base + shift, base - shift


def _softmax(x):
    w = np.exp(x - x.max())
    return w / w.sum()


def _exponential_audit(mech, seed, monotonic=False):
    event = mech.event()
    eps, sens = event.epsilon, mech.sensitivity
    u_d, u_d2 = _worst_case_scores(sens, monotonic)
    assert np.max(np.abs(u_d - u_d2)) <= sens * (1 + 1e-12)
    # Claimed output law: softmax(ε u/(2Δ)), or ε u/Δ for monotone scores.
    factor = eps / (sens if monotonic else 2 * sens)
    loss = np.log(_softmax(factor * u_d)) - np.log(_softmax(factor * u_d2))
    plus, minus = np.flatnonzero(loss > 0), np.flatnonzero(loss < 0)
    events = [
        Event("loss>0", lambda y: np.isin(y, plus), "forward"),
        Event("loss<0", lambda y: np.isin(y, minus), "reverse"),
    ]
    rng = _rng(seed)
    y_d = _select_many(mech, u_d, N_PURE, rng)
    y_d2 = _select_many(mech, u_d2, N_PURE, rng)
    return audit_events(y_d, y_d2, events), eps


def test_vectorised_selection_matches_public_api():
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=2.0)
    scores, _ = _worst_case_scores(2.0, monotonic=False)
    rng = _rng(0)
    direct = np.bincount([mech(scores, rng) for _ in range(3000)], minlength=scores.size)
    many = np.bincount(_select_many(mech, scores, 3000, _rng(1)), minlength=scores.size)
    assert stats.chi2_contingency(np.vstack([direct, many]))[1] > 1e-6


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_mechanism_audit(monotonic):
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=2.0, monotonic=monotonic)
    result, eps = _exponential_audit(mech, seed=13, monotonic=monotonic)
    AUDIT_RESULTS[f"exponential(monotonic={monotonic})"] = result.epsilon_lb
    assert 0.75 < result.epsilon_lb <= eps, result.summary()


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_mutant_fails_audit(monotonic):
    mech = _ShrunkExponential(epsilon=1.0, sensitivity=2.0, monotonic=monotonic)
    result, eps = _exponential_audit(mech, seed=13, monotonic=monotonic)
    AUDIT_RESULTS[f"exponential(monotonic={monotonic})_mutant"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


def test_exponential_classic_bug_fails_audit():
    mech = _ClassicBugExponential(epsilon=1.0, sensitivity=2.0)
    result, eps = _exponential_audit(mech, seed=14)
    AUDIT_RESULTS["exponential_classic_bug"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


# --------------------------------------------------------------------------- Gaussian (approx DP)


def _gaussian_events(mu):
    """Events {L > ε} and {L < −ε} of the claimed loss, on an ε-grid where δ(ε) ∈ [1e-3, 0.1].

    With D = 0, D' = Δ and σ = Δ/μ the claimed loss is L(y) = μ²/2 − μ y/σ, and
    P_D[L > ε] − e^ε P_D'[L > ε] is exactly the Balle–Wang curve δ(ε) (2018, Thm 8), so
    these events are the optimal ones for every ε. δ = 1e-5 itself is not testable.
    """
    grid = np.linspace(comp.gaussian_epsilon(mu, 0.1), comp.gaussian_epsilon(mu, 1e-3), 5)
    events = []
    for e in grid:
        # L(y) > e  <=>  y/Δ < 1/2 − e/μ²  (the threshold scales with Δ: pass y/Δ).
        t = 0.5 - e / mu**2
        events.append(Event(f"L>{e:.3f}", lambda z, t=t: z < t, "forward", float(e)))
        events.append(Event(f"L<-{e:.3f}", lambda z, t=t: z > 1 - t, "reverse", float(e)))
    return events


def _gaussian_audit(mech, x_d, x_d2, sens, seed, population="central"):
    event = mech.event(population=population)
    mu = _effective_mu(mech, sens, 1)  # fixed before any (possibly mutated) draw
    events = _gaussian_events(mu)
    rng = _rng(seed)
    kw = {"n_values": 1} if hasattr(mech, "lattice") else {}  # N one-value releases
    y_d = mech(np.full(N_GAUSS, x_d), rng, **kw) / sens
    y_d2 = mech(np.full(N_GAUSS, x_d2), rng, **kw) / sens
    result = audit_events(y_d - x_d / sens, y_d2 - x_d / sens, events)
    return result, event, result.delta_excess(lambda e: comp.gaussian_delta(mu, e))


def test_gaussian_audit():
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    result, event, excess = _gaussian_audit(mech, 0.0, 2.0, 2.0, seed=15)
    AUDIT_RESULTS["gaussian(delta_excess)"] = excess
    assert excess <= 0, result.summary()
    # The charge covers the audited curve: the declared ρ gives the declared (ε, δ), and
    # the curve at the released noise stays under it.
    mu = _effective_mu(mech, 2.0, 1)
    assert comp.zcdp_epsilon(event.rho, event.delta) <= event.epsilon * (1 + 1e-12)
    assert comp.gaussian_delta(mu, event.epsilon) <= event.delta


def test_gaussian_mutant_fails_audit(monkeypatch):
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    monkeypatch.setattr(gaussian_module, "_noise", _scaled_noise(SHRINK))
    result, _, excess = _gaussian_audit(mech, 0.0, 2.0, 2.0, seed=15)
    AUDIT_RESULTS["gaussian_mutant(delta_excess)"] = excess
    assert excess > 0, result.summary()


def test_gaussian_randomized_response_audit():
    mech = GaussianRandomizedResponse(epsilon=1.0, delta=1e-5)
    result, event, excess = _gaussian_audit(mech, 0, 1, 1.0, seed=16, population="local")
    AUDIT_RESULTS["gaussian_rr(delta_excess)"] = excess
    assert event.population == "local"
    assert excess <= 0, result.summary()


def test_gaussian_randomized_response_mutant_fails_audit(monkeypatch):
    mech = GaussianRandomizedResponse(epsilon=1.0, delta=1e-5)
    monkeypatch.setattr(rr_module, "_noise", _scaled_noise(SHRINK))
    result, _, excess = _gaussian_audit(mech, 0, 1, 1.0, seed=16, population="local")
    AUDIT_RESULTS["gaussian_rr_mutant(delta_excess)"] = excess
    assert excess > 0, result.summary()


# --------------------------------------------------------------------------- composition vs accountant

K_FOLD = 10


def _composed_laplace_audit(mech_cls, seed):
    """10 adaptive Laplace releases (ε₀ = 0.3 each) against the accountant's spend.

    The accountant (δ budget 0.1) reports its tightest view -- here the optimal
    homogeneous composition (KOV 2015, Thm 3.3), ε ≈ 1.06 at δ = 0.1 -- so the claim is
    approximate DP: the audit bounds δ at the reported ε with the events
    {L > ε} / {L < −ε} of the claimed 10-fold loss L(y) = Σ ε₀(|yᵢ−Δ| − |yᵢ|)/Δ.
    """
    eps0, sens = 0.3, 1.0
    mechs = [mech_cls(epsilon=eps0, sensitivity=sens) for _ in range(K_FOLD)]
    acc = PrivacyAccountant(delta=0.1)
    acc.spend([m.event() for m in mechs])
    eps_acc, delta_acc = acc.spent()

    def loss(y):
        return (eps0 * (np.abs(y - sens) - np.abs(y)) / sens).sum(axis=1)

    events = [
        Event("L>eps", lambda y: loss(y) > eps_acc, "forward", eps_acc),
        Event("L<-eps", lambda y: loss(y) < -eps_acc, "reverse", eps_acc),
    ]
    rng = _rng(seed)
    y_d = np.column_stack([m(np.zeros(N_PURE), rng) for m in mechs])
    y_d2 = np.column_stack([m(np.full(N_PURE, sens), rng) for m in mechs])
    result = audit_events(y_d, y_d2, events)
    return result, eps_acc, delta_acc, result.delta_excess(lambda e: delta_acc)


def test_composed_laplace_audit_against_accountant():
    result, eps_acc, delta_acc, excess = _composed_laplace_audit(LaplaceMechanism, seed=17)
    AUDIT_RESULTS["laplace_x10(delta_excess)"] = excess
    # The tight view is the one audited: well below basic composition's 3.0.
    assert eps_acc < K_FOLD * 0.3 and delta_acc == pytest.approx(0.1)
    assert excess <= 0, result.summary()


def test_composed_laplace_mutant_fails_audit():
    result, _, _, excess = _composed_laplace_audit(_ShrunkLaplace, seed=17)
    AUDIT_RESULTS["laplace_x10_mutant(delta_excess)"] = excess
    assert excess > 0, result.summary()


def test_audit_alpha_is_the_documented_one():
    assert ALPHA == 1e-3


# --------------------------------------------------------------------------- the statistics themselves


def test_clopper_pearson_known_values():
    from ._stats import clopper_pearson, cp_lower, cp_upper

    # The textbook 95 % interval for 5/10 is [0.1871, 0.8129].
    lo, hi = clopper_pearson(5, 10, 0.05)
    assert lo == pytest.approx(0.18709, abs=1e-4) and hi == pytest.approx(0.81291, abs=1e-4)
    assert cp_lower(0, 10, 0.01) == 0.0 and cp_upper(10, 10, 0.01) == 1.0
    # k = 0: the one-sided upper bound solves (1 − p)^n = α.
    assert cp_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))


def test_bounds_converge_to_the_true_values():
    from ._stats import approx_dp_delta_lower_bound, pure_dp_lower_bound

    n = 10**9
    k1, k2 = n // 2, n // 10
    assert pure_dp_lower_bound(k1, n, k2, n) == pytest.approx(math.log(5), abs=1e-3)
    assert pure_dp_lower_bound(k2, n, k1, n, symmetric=True) == pytest.approx(math.log(5), abs=1e-3)
    assert pure_dp_lower_bound(k2, n, k1, n, symmetric=False) < 0
    assert approx_dp_delta_lower_bound(k1, n, k2, n, 1.0) == pytest.approx(0.5 - math.e * 0.1, abs=1e-3)
    assert pure_dp_lower_bound(0, 100, 5, 100, symmetric=False) == -math.inf


def test_false_alarm_rate_on_an_exactly_tight_mechanism():
    """2,000 simulated audits of binary RR at ε = 1 (tight: ratio exactly e^ε): no false alarm.

    The union bound promises a rate ≤ 1e-3; Clopper-Pearson is conservative, so the
    observed rate is 0 here.
    """
    rng = _rng(99)
    eps, n, reps = 1.0, 10_000, 2_000
    keep = 1 / (1 + math.exp(-eps))
    k_d = rng.binomial(n, keep, reps)
    k_d2 = rng.binomial(n, 1 - keep, reps)
    events = [Event("report=0", lambda c: c, "both")]
    alarms = 0
    for a, b in zip(k_d, k_d2):
        # Counts stand in for samples: an indicator over a 0/1 array with a ones.
        res = audit_events(np.arange(n) < a, np.arange(n) < b, events)
        alarms += res.epsilon_lb > eps
    assert alarms == 0
