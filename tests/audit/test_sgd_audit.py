"""White-box audit of ONE noisy SGD step of KS Algorithm 4 on worst-case neighbours.

One step draws an index from μ (the κ-dense / uniform distribution), clips that row's
hinge gradient to norm L and adds N(0, σ²). Worst-case neighbours (1-d, θ = 0, L = 1):
D has every row (x = 5, y = +1), whose clipped gradient is −1; D' replaces one row by
(x = 5, y = −1), gradient +1 (Δ = 2L). With μ uniform over n = 4 rows the changed row has
mass η = 1/4, so the release is N(−1, σ²) on D and (1 − η)N(−1, σ²) + ηN(1, σ²) on D'.

Claimed curve: :func:`skhybrid.accounting._rdp.mixture_pair_delta`, the hockey-stick
bound H_{e^ε}(A_η‖B) from which the charged RDP bound is derived (it bounds both
directions). On an ε-grid where it lies in [1e-3, 0.1] the optimal events (privacy loss
above ε, resp. below −ε) are fixed from the claimed σ before sampling; δ_lb =
CP_lo − e^ε CP_hi must not exceed the claim (Clopper–Pearson, total α = 1e-3). The
mutation twin draws the noise with σ/1.25 and must fail.
"""

import math

import numpy as np
import pytest

from skhybrid.accounting._rdp import mixture_pair_delta, subsampled_gaussian_epsilon
from skhybrid.mechanisms import _noise
from skhybrid.transfer._exact_subsample import sample_kappa_dense
from skhybrid.transfer._sgd import clipped_gradients

from ._stats import ALPHA, approx_dp_delta_lower_bound

N = 1_000_000
L, SIGMA, ETA = 1.0, 1.0, 0.25
MU = 2 * L / SIGMA


def _releases(changed, sigma, rng):
    """N independent one-step releases of the implementation's step on D or D'."""
    Xa = np.full((4, 1), 5.0)
    ya = np.ones(4)
    if changed:
        ya[0] = -1.0
    idx = sample_kappa_dense(np.zeros(4), 1.0, N, rng)  # κ = 1: uniform, as Algorithm 4 draws
    g = clipped_gradients(np.zeros(1), Xa[idx], ya[idx], L)
    return (g + _noise.gaussian(rng, sigma, size=(N, 1), tag="sgd-noise"))[:, 0]


def _grid():
    eps = np.linspace(0.0, 3.0, 301)
    d = mixture_pair_delta(eps, ETA, MU)
    ok = eps[(d >= 1e-3) & (d <= 0.1)]
    return ok[np.linspace(0, ok.size - 1, 6).astype(int)]


def _audit(sigma, seed):
    rng = np.random.default_rng(seed)
    on_d, on_d2 = _releases(False, sigma, rng), _releases(True, sigma, rng)
    grid = _grid()
    a = ALPHA / (2 * len(grid))  # two directions per grid point
    worst = -np.inf
    for eps in grid:
        claim = mixture_pair_delta(eps, ETA, MU)
        # Forward (D' vs D): loss ln((1−η) + η e^{μu − μ²/2}) > ε, u = (z + L)/σ_claimed.
        u_cut = (math.log((math.expm1(eps) + ETA) / ETA) + MU * MU / 2) / MU
        cut = u_cut * SIGMA - L
        k2, k1 = int(np.sum(on_d2 > cut)), int(np.sum(on_d > cut))
        worst = max(worst, approx_dp_delta_lower_bound(k2, N, k1, N, eps, alpha=a) - claim)
        # Reverse (D vs D'): loss < −ε is possible only when e^{−ε} > 1 − η.
        if math.exp(-eps) > 1 - ETA:
            u_cut = (math.log((math.exp(-eps) - 1 + ETA) / ETA) + MU * MU / 2) / MU
            cut = u_cut * SIGMA - L
            k1, k2 = int(np.sum(on_d < cut)), int(np.sum(on_d2 < cut))
            worst = max(worst, approx_dp_delta_lower_bound(k1, N, k2, N, eps, alpha=a) - claim)
    return worst


def test_one_sgd_step_meets_its_claimed_curve():
    assert len(_grid()) == 6
    assert _audit(SIGMA, seed=3) <= 0.0


def test_mutation_twin_with_less_noise_fails():
    assert _audit(SIGMA / 1.25, seed=4) > 0.0


def test_charged_epsilon_covers_the_exact_curve():
    # The charged (ε, δ) from the RDP bound lies above the exact hockey-stick curve.
    for delta in (1e-2, 1e-3, 1e-5):
        eps, _ = subsampled_gaussian_epsilon(ETA, MU, 1, delta)
        assert mixture_pair_delta(eps, ETA, MU) <= delta


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
def test_claimed_curve_is_attained_by_worst_case_events(eps):
    # Sanity (exact, no sampling): the forward event above has D'-mass − e^ε·D-mass = claim.
    from scipy.stats import norm

    u_cut = (math.log((math.expm1(eps) + ETA) / ETA) + MU * MU / 2) / MU
    p2 = (1 - ETA) * norm.sf(u_cut) + ETA * norm.sf(u_cut - MU)
    p1 = norm.sf(u_cut)
    assert p2 - math.exp(eps) * p1 == pytest.approx(mixture_pair_delta(eps, ETA, MU), rel=1e-9)
