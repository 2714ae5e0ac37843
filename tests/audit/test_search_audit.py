"""End-to-end audit of PrivateSearchCV: the released (score, candidate) on neighbours.

Neighbours: 40 private rows labelled 0, and the same with row 0 labelled 1. The candidate
is a pure ε-DP noisy-majority classifier (it keeps the charge-before-compute contract), so
a run's fit and its score both see the changed row: in the validation part (a quarter of
the searches) it costs the selected model one hit out of ten. Output: ``best_score_``.
Thresholds are chosen on the first half of each side's searches, Clopper-Pearson bounds
(Bonferroni over the thresholds) taken on the second half.

Measured at claimed ε = 1: the search gives ε_lb = −0.14 (2 × 400 searches, the quick
run) and −0.04 (2 × 3,000, slow); its mutation twin that releases exact validation
scores gives 1.39 and 3.04, so even the quick audit catches a search whose score is not
private.
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from skhybrid._base import PrivateEstimatorMixin
from skhybrid.mechanisms import LaplaceMechanism
from skhybrid.model_selection import PrivateSearchCV
from skhybrid.model_selection import _search as search_module

from ._stats import ALPHA, pure_dp_lower_bound

EPS, N_ROWS = 1.0, 40


class NoisyMajority(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Predicts the majority label, decided by a Laplace-noised count (pure ε-DP)."""

    def __init__(self, shift=0.0, epsilon=1.0, delta=0.0, accountant=None, random_state=None):
        self.shift = shift
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X, y):
        self._check_privacy_params()
        mech = LaplaceMechanism(self.epsilon, 1.0)
        self._charge([mech.event()])
        count = mech(np.int64(np.sum(np.asarray(y) == 1)), self._make_rng())
        self.label_ = int(count + self.shift > len(y) / 2)
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


def _neighbours():
    X = np.zeros((N_ROWS, 1))
    y = np.zeros(N_ROWS, dtype=int)
    y2 = y.copy()
    y2[0] = 1
    return X, y, y2


def _scores(y, seeds):
    X = _neighbours()[0]
    out = []
    for seed in seeds:
        search = PrivateSearchCV(NoisyMajority(), {"shift": [0.0, 2.0]}, epsilon=EPS, n_iter=4,
                                 random_state=int(seed)).fit(X, y)
        out.append(search.best_score_)
    return np.array(out)


def _epsilon_lower_bound(runs):
    _, y, y2 = _neighbours()
    a = _scores(y, range(runs))
    b = _scores(y2, range(runs, 2 * runs))
    half = runs // 2
    # 0.95 separates "every validation hit" from "one miss"; the quantiles cover the rest.
    thresholds = np.unique(np.r_[0.95, np.quantile(np.r_[a[:half], b[:half]],
                                                  np.linspace(0.05, 0.95, 9))])
    alpha = ALPHA / len(thresholds)
    return max(pure_dp_lower_bound(np.sum(a[half:] < t), runs - half,
                                   np.sum(b[half:] < t), runs - half, alpha)
               for t in thresholds)


def _exact_scores(monkeypatch):
    noisy = search_module.noisy_mean_score
    monkeypatch.setattr(search_module, "noisy_mean_score",
                        lambda s, p, m, b, e, r: noisy(s, p, m, b, np.inf, r))


@pytest.mark.parametrize("runs", [pytest.param(400, id="quick"),
                                  pytest.param(3000, id="full", marks=pytest.mark.slow)])
def test_search_release_stays_within_its_claim(runs):
    assert _epsilon_lower_bound(runs) <= EPS


@pytest.mark.parametrize("runs", [pytest.param(400, id="quick"),
                                  pytest.param(3000, id="full", marks=pytest.mark.slow)])
def test_twin_with_exact_validation_scores_is_caught(monkeypatch, runs):
    _exact_scores(monkeypatch)
    assert _epsilon_lower_bound(runs) > EPS
