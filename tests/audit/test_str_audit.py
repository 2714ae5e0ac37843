"""White-box audit of STR's local test: one agent's Gaussian randomized-response report.

Each local agent answers one query RR_{ε,δ}(b) ~ N(b, 2 ln(2/δ)/ε²) about its loss bit
b ∈ {0, 1} (Kohen & Sheffet §2). Neighbouring inputs are b = 0 and b = 1. The claim
audited is the privacy curve the estimator charges (the local event's μ = 1/σ, Balle &
Wang 2018 Thm 8), on the ε-grid where δ(ε) lies in [1e-3, 0.1] (docs/notes/auditing.rst, layer C):
for each grid point the optimal event {y < 1/2 − ε'σ²} (privacy loss above ε') is fixed
*before* sampling from the claimed σ, and δ_lb = CP_lo(P_0[E]) − e^{ε'} CP_hi(P_1[E])
must stay below the claimed δ(ε'). Clopper–Pearson with total α = 1e-3, Bonferroni
over the grid. The mutation twin divides σ by 1.25 and must fail.
"""

import numpy as np
import pytest

from skhybrid.accounting import _composition as comp
from skhybrid.mechanisms import GaussianRandomizedResponse
from skhybrid.transfer import _str  # noqa: F401  (the estimator uses exactly this mechanism)

from ._stats import ALPHA, approx_dp_delta_lower_bound

N = 1_000_000


def _claimed_grid(mu, n_points=6):
    # ε' where the claimed δ(ε') is between 1e-3 and 0.1 (feasible to audit).
    grid = np.linspace(0.0, 3.0, 301)
    deltas = np.array([comp.gaussian_delta(mu, e) for e in grid])
    ok = grid[(deltas >= 1e-3) & (deltas <= 0.1)]
    return ok[np.linspace(0, ok.size - 1, n_points).astype(int)]


def _audit(mechanism, claimed_sigma, seed):
    """Largest δ_lb(ε') − δ_claimed(ε') over the grid (> 0 means the claim is refuted)."""
    mu = 1.0 / claimed_sigma
    grid = _claimed_grid(mu)
    rng = np.random.default_rng(seed)
    y0 = mechanism(np.zeros(N, dtype=np.int8), rng)  # N agents with bit 0
    y1 = mechanism(np.ones(N, dtype=np.int8), rng)   # N agents with bit 1
    a = ALPHA / len(grid)
    worst = -np.inf
    for eps in grid:
        cut = 0.5 - eps * claimed_sigma**2   # privacy loss of y (0 vs 1) exceeds eps below it
        k0, k1 = int(np.sum(y0 < cut)), int(np.sum(y1 < cut))
        lb = approx_dp_delta_lower_bound(k0, N, k1, N, eps, alpha=a)
        worst = max(worst, lb - comp.gaussian_delta(mu, eps))
    return worst


class _TooLittleNoise(GaussianRandomizedResponse):
    """Mutation twin: the noise the estimator would draw, divided by 1.25."""

    def __init__(self, epsilon, delta):
        super().__init__(epsilon, delta)
        self.sigma_int = max(1, round(self.sigma_int / 1.25))


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (2.0, 1e-3)])
def test_gaussian_rr_report_meets_its_claimed_curve(epsilon, delta):
    rr = GaussianRandomizedResponse(epsilon, delta)
    event = rr.event(population="local")
    claimed_sigma = rr.sigma  # the lattice noise: the paper's sigma, rounded up
    assert claimed_sigma == pytest.approx(np.sqrt(2 * np.log(2 / delta)) / epsilon, rel=1e-3)
    assert _audit(rr, claimed_sigma, seed=1) <= 0.0
    # The charge (rho, converted) covers the report's curve at the charged (ε, δ).
    assert comp.zcdp_epsilon(event.rho, delta) <= epsilon * (1 + 1e-12)
    assert comp.gaussian_delta(1.0 / claimed_sigma, epsilon) <= delta


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (2.0, 1e-3)])
def test_mutation_twin_with_less_noise_fails(epsilon, delta):
    claimed_sigma = GaussianRandomizedResponse(epsilon, delta).sigma
    assert _audit(_TooLittleNoise(epsilon, delta), claimed_sigma, seed=2) > 0.0
