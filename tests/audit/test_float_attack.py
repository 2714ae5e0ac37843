"""The floating-point membership attack (Mironov 2012) on textbook Laplace samplers, and
why it tells nothing about skhybrid's lattice mechanisms.

numpy's Laplace sampler returns ``b*log(2U)`` or ``-b*log(2 - 2U)`` with ``U = k / 2^53``:
only a sparse set of doubles can come out. An observer who sees ``y = x + noise`` checks
whether ``y - x0`` is such a double for a candidate input ``x0``: when the input was
``x0`` itself the test passes; after a shift by a neighbour's value it almost never does.
The event "the output is a possible noise value around 0" is fixed before sampling.
"""

import math

import numpy as np
import pytest

from skhybrid.hybrid import ParityThresholdClassifier, SelectThenEstimate
from skhybrid.mechanisms import laplace_mechanism

from ._stats import Event, audit_events

N = 4000  # per side: enough to show a leak of e^5+ and to bound the lattice outputs


def _is_numpy_laplace_noise(y, b):
    """Exact membership of each double ``y`` in the image of numpy's Laplace(0, b)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    out = np.zeros(y.shape, dtype=bool)
    two53 = 2.0**53
    for i, v in enumerate(y):  # numpy's own operation order: loc + scale * log(U + U) ...
        if v < 0:
            k0 = round(math.exp(v / b) / 2 * two53)
            us = (k / two53 for k in range(k0 - 2, k0 + 3) if 0 < k)
            cands = (0.0 + b * math.log(u + u) for u in us if u < 0.5)
        else:
            k0 = round((1 - math.exp(-v / b) / 2) * two53)
            us = (k / two53 for k in range(k0 - 2, k0 + 3) if k < two53)
            cands = (0.0 - b * math.log(2.0 - u - u) for u in us if u >= 0.5)
        out[i] = any(c == v for c in cands)
    return out


def _float_laplace(x, b, rng):
    return x + rng.laplace(0.0, b, np.shape(x))


def test_membership_attack_breaks_float_laplace():
    rng = np.random.default_rng(0)
    b, shift = 0.1, 0.1  # Laplace(Delta/epsilon) with Delta = 0.1, epsilon = 1
    y_d = _float_laplace(np.zeros(N), b, rng)
    y_d2 = _float_laplace(np.full(N, shift), b, rng)
    event = Event("noise image", lambda y: _is_numpy_laplace_noise(y, b), "forward")
    result = audit_events(y_d, y_d2, [event])
    # Every output of D is a noise value; about one in five of D' by coincidence: the
    # float sampler is provably not 1-DP.
    assert result.rows[0].k1 == N
    assert result.epsilon_lb > 1.3, result.summary()


def _lattice_audit(y_d, y_d2, b):
    """The same event, and every single output value, on lattice outputs."""
    events = [Event("noise image", lambda y: _is_numpy_laplace_noise(y, b), "forward")]
    return audit_events(np.ravel(y_d), np.ravel(y_d2), events)


def test_membership_attack_fails_on_the_lattice_laplace_mechanism():
    rng = np.random.default_rng(1)
    y_d = laplace_mechanism(np.zeros(N), sensitivity=0.1 * N, epsilon=1.0 * N, rng=rng)
    y_d2 = laplace_mechanism(np.full(N, 0.1), sensitivity=0.1 * N, epsilon=1.0 * N, rng=rng)
    # (one vector query of N coordinates at per-coordinate scale 0.1: the same noise
    # level as the float attack above, drawn in one call)
    result = _lattice_audit(y_d, y_d2, 0.1)
    assert result.epsilon_lb <= 1.0, result.summary()  # the event no longer separates them
    g = 2.0 ** math.floor(math.log2(0.1 * N / (1024 * N)))
    assert np.all(np.mod(np.concatenate([y_d, y_d2]), g) == 0)  # every output on the lattice


def test_tree_cdf_counts_and_select_estimate_are_lattice_points():
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.integers(0, 2, (3000, 4)), rng.integers(0, 256, 3000)])
    y = rng.integers(0, 2, 3000)
    clf = ParityThresholdClassifier(threshold_bits=8, epsilon=1.0, random_state=0).fit(X, y)
    counts = np.concatenate(clf.cdf_.counts_)
    step = 2.0 ** -math.ceil(math.log2(1024 * 0.5 / 16))  # the mechanism's lattice
    assert np.all(np.mod(counts, step) == 0)
    Z = np.where(rng.random((2000, 6)) < 0.5, 1, -1)
    est = SelectThenEstimate(epsilon=1.0, random_state=0).fit(Z)
    g = 2.0 ** math.floor(math.log2((2.0 / 2000) / 1024))
    assert est.estimate_ % g == 0


@pytest.mark.slow
def test_membership_attack_full_power():
    """20,000 runs per side on the float sampler; the lattice mechanism at the same size."""
    rng = np.random.default_rng(3)
    b, n = 0.1, 20_000
    y_d = _float_laplace(np.zeros(n), b, rng)
    y_d2 = _float_laplace(np.full(n, 0.1), b, rng)
    event = [Event("noise image", lambda y: _is_numpy_laplace_noise(y, b), "forward")]
    assert audit_events(y_d, y_d2, event).epsilon_lb > 1.4
    z_d = laplace_mechanism(np.zeros(n), sensitivity=0.1 * n, epsilon=1.0 * n, rng=rng)
    z_d2 = laplace_mechanism(np.full(n, 0.1), sensitivity=0.1 * n, epsilon=1.0 * n, rng=rng)
    assert audit_events(z_d, z_d2, event).epsilon_lb <= 1.0
