"""What scikit-learn meta-estimators do to a DP learner's guarantee (docs:
the privacy model page, "Meta-estimators around a DP learner").

``BaggingClassifier`` around an ε-DP Laplace count (sensitivity 1 under replacing one row):
neighbours D (row 0 holds 1, the rest 0) and D' (row 0 holds 0). With bootstrap a member
sees row 0 K ~ Binomial(n, 1/n) times, so its loss exceeds the ε it is charged; without
replacement (``bootstrap=False``, ``max_samples=0.5``) it stays below. Measured with
40,000 members per side (slow run): ln P[out >= 3 | D] / P[out >= 3 | D'] = 1.58 ± 0.07
(exact 1.524) with bootstrap and 0.60 ± 0.08 (exact 0.620) without, charged 1.0.
"""

import math

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import BaggingClassifier

EPS, N, T = 1.0, 200, 3.0


class NoisyCount(ClassifierMixin, BaseEstimator):
    """ε-DP under replacing one row: the sum of X[:, 0] in {0, 1} plus Laplace(1/ε)."""

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon, self.random_state = epsilon, random_state

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        rng = np.random.default_rng(self.random_state)
        self.count_ = X[:, 0].sum() + rng.laplace(0.0, 1.0 / self.epsilon)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def _laplace_sf(x):
    return 0.5 * math.exp(-EPS * x) if x >= 0 else 1 - 0.5 * math.exp(EPS * x)


def _members(first_row, members, **bagging):
    X = np.zeros((N, 1))
    X[0, 0] = first_row
    bag = BaggingClassifier(NoisyCount(EPS), n_estimators=members, **bagging)
    bag.fit(X, np.arange(N) % 2)
    return np.array([m.count_ for m in bag.estimators_])


def test_exact_losses_quoted_in_the_docs():
    p = binom.pmf(np.arange(N + 1), N, 1 / N)
    with_replacement = math.log(sum(p[k] * _laplace_sf(T - k) for k in range(N + 1))
                                / _laplace_sf(T))
    assert with_replacement == pytest.approx(1.524, abs=5e-4) and with_replacement > EPS
    worst = N * math.log1p(math.expm1(EPS) / N)  # output beyond n: ln E[e^(K eps)]
    assert worst == pytest.approx(1.711, abs=5e-4)
    without = math.log((0.5 * _laplace_sf(T - 1) + 0.5 * _laplace_sf(T)) / _laplace_sf(T))
    assert without == pytest.approx(0.620, abs=5e-4) and without < EPS
    # (k eps, P(K > k)): the tail the docs quote for n >= 1,000.
    assert binom.sf(8, 1000, 1e-3) == pytest.approx(1.1e-6, rel=0.05)
    assert binom.sf(9, 1000, 1e-3) == pytest.approx(1.1e-7, rel=0.05)


def test_bagging_stores_a_replayable_seed_in_every_member():
    # Whoever holds the fitted ensemble can refit a member with its stored seed on the same
    # rows and get the same noise: the member's noise is no longer secret.
    X = np.zeros((N, 1))
    X[:20, 0] = 1
    bag = BaggingClassifier(NoisyCount(EPS), n_estimators=3, bootstrap=False,
                            max_samples=0.5).fit(X, np.arange(N) % 2)
    for member, rows in zip(bag.estimators_, bag.estimators_samples_):
        assert isinstance(member.random_state, (int, np.integer))
        assert clone(member).fit(X[rows], np.arange(N)[rows] % 2).count_ == member.count_


@pytest.mark.slow
@pytest.mark.parametrize("bagging, exceeds", [
    ({"bootstrap": True}, True),
    ({"bootstrap": False, "max_samples": 0.5}, False),
], ids=["bootstrap", "without-replacement"])
def test_bootstrap_members_lose_more_than_their_charge(bagging, exceeds):
    members = 40_000
    p = (_members(1, members, **bagging) >= T).mean()
    q = (_members(0, members, **bagging) >= T).mean()
    loss = math.log(p / q)
    half_width = 3 * math.sqrt((1 - p) / (p * members) + (1 - q) / (q * members))
    if exceeds:
        assert loss - half_width > EPS, (loss, half_width)
    else:
        assert loss + half_width < EPS, (loss, half_width)
