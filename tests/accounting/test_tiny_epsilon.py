"""At the bottom of the ε range the optimal composition reports what the calibration
certified: its root-finding tolerances are relative to the scale (an absolute 1e-13 step
was a 10 % over-report at ε = 1e-12, and an accountant sized to ε refused the fit)."""

import pytest

from skhybrid.accounting import PrivacyAccountant, PrivacyEvent, best_view, compose_events
from skhybrid.accounting import _composition as comp


@pytest.mark.parametrize("epsilon, k", [(1e-12, 2), (1e-9, 1000), (1e-6, 50)])
def test_calibrated_tiny_epsilon_is_reported_within_its_target(epsilon, k):
    eps0 = comp.calibrate_pure_epsilon(epsilon, 1e-5, k)
    events = [PrivacyEvent("m", "pure", eps0, count=k)]
    name, (eps, delta) = best_view(compose_events(events, 1e-5))
    assert name == "optimal" and delta == 1e-5
    assert 0.9 * epsilon <= eps <= epsilon  # (the calibration itself is a bit conservative)
    PrivacyAccountant(epsilon=epsilon, delta=1e-5).spend(events)  # fits its own budget


def test_tiny_epsilon_matches_the_exact_optimal_composition():
    # k = 2 pure ε0-DP steps: δ(ε) = Σ_l C(2,l) max(0, e^{(2−l)ε0} − e^ε e^{lε0}) / (1+e^ε0)^2;
    # its root at δ = 1e-5 is 9.59996746e-13 (60-digit arithmetic, mpmath), and the
    # reported ε must lie at or above it (the safe side), within 1e-5 relative.
    eps0 = 2.000000048065544e-05
    eps = comp.optimal_homogeneous_epsilon(eps0, 0.0, 2, 1e-5)
    assert 9.59996746e-13 <= eps <= 9.59996746e-13 * (1 + 1e-5)
