"""Black-box canary audit of PPMHalfspaceClassifier.

Layer D of docs/notes/auditing.rst (issue 4, item 8).

Neighbours ``D``, ``D'`` differ in one private row, the canary, placed at ``+100`` in
``D`` and ``-100`` in ``D'`` on a 1-d problem: 10 public rows at ``0..9`` and 2 private
rows at ``20, 21``. With ``candidates="exact"`` the class is the empty hypothesis and
the 20 rays ``{x <= p_i}`` / ``{x >= p_i}`` through public points (21 candidates).
Moving the canary adds one error to every ``<=`` ray and removes one from every
``>=`` ray, the worst case for the exponential mechanism: the ``>=`` rays are rare on
``D`` and their probability ratio approaches ``e^ε`` (about ``e^0.73`` here at ε = 1).

The audit only sees fitted models: its statistic is ``decision_function`` at the
probe ``x = -100`` (positive iff a ``>=`` ray or the empty hypothesis was chosen). The
events are fixed by this analysis before sampling: ``{T > 0}`` and its complement, each
in both directions. Every run counts towards the Clopper–Pearson bounds
(``_stats.pure_dp_lower_bound``, total α = 1e-3 split over the two events, so a correct
learner fails with probability at most 1e-3; seeds fixed, hence deterministic). The
mutation twin halves the score sensitivity (the exact sampler's rate ``ε`` instead of
``ε/2`` per error, so the true loss is ``2ε``) and must be caught.

Measured (2 × 2,000 fits per test, about 2 ms a fit): ε_lb = 0.47 for the estimator,
1.20 for the twin (on D, P[T > 0] = 0.19 against 0.39 on D'; 0.05 against 0.27 for the
twin). Choosing the event on half of the runs, as before, needed 2 × 3,000 fits for the
same twin bound.
"""

import numpy as np

from skhybrid.mechanisms import ExponentialMechanism
from skhybrid.ppm._classifier import PPMHalfspaceClassifier

from ._stats import ALPHA, pure_dp_lower_bound

EPSILON = 1.0
PROBE = np.array([[-100.0]])


def _neighbours():
    X = np.r_[np.arange(10.0), 20.0, 21.0][:, None]
    y = np.r_[np.zeros(10, int), 1, 1]
    D = (np.vstack([X, [[100.0]]]), np.r_[y, 1])
    D2 = (np.vstack([X, [[-100.0]]]), np.r_[y, 1])
    return D, D2


def _statistics(data, n_runs, seed):
    X, y = data
    clf = PPMHalfspaceClassifier(EPSILON, candidates="exact",
                                 random_state=np.random.default_rng(seed))
    out = np.empty(n_runs)
    for i in range(n_runs):  # black box: fit, then look only at the released model
        out[i] = clf.fit(X, y, public_mask=y == 0).decision_function(PROBE)[0]
    return out


def _audit(n_runs):
    D, D2 = _neighbours()
    T1, T2 = _statistics(D, n_runs, 1), _statistics(D2, n_runs, 2)
    return max(pure_dp_lower_bound(np.count_nonzero(event(T1)), n_runs,
                                   np.count_nonzero(event(T2)), n_runs, alpha=ALPHA / 2)
               for event in (lambda T: T > 0, lambda T: T <= 0))


def test_canary_audit_respects_epsilon():
    eps_lb = _audit(2000)
    assert 0.3 < eps_lb <= EPSILON  # the audit has power, and the claim holds


def test_mutation_twin_with_halved_sensitivity_is_caught(monkeypatch):
    rate = ExponentialMechanism._scaled_epsilon  # ε/(2Δ) per unit: doubled, as for Δ/2
    monkeypatch.setattr(ExponentialMechanism, "_scaled_epsilon", lambda self: 2 * rate(self))
    eps_lb = _audit(2000)
    assert eps_lb > EPSILON
