"""PrivateParityClassifier: recovery, exact baseline, charging, noise spy, bad input."""

import math

import numpy as np
import pytest

from skhybrid.accounting import BudgetExceededError, PrivacyAccountant
from skhybrid.learners._parity import PrivateParityClassifier, select_candidate
from skhybrid.mechanisms._noise import record_noise


def _planted(n=4000, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d))
    r = rng.integers(0, 2, size=d)
    return X, X @ r % 2, r


def test_recovers_planted_parity_at_epsilon_one():
    X, y, r = _planted()
    hits = 0
    for seed in range(8):
        clf = PrivateParityClassifier(epsilon=1.0, random_state=seed).fit(X, y)
        hits += clf.parity_ is not None and np.array_equal(clf.parity_, r)
    # each of 4 chunks is ⊥ w.p. 1/2 (floor) and otherwise exact: P(all ⊥) = 1/16
    assert hits >= 6
    clf = PrivateParityClassifier(epsilon=1.0, random_state=1).fit(X, y)
    np.testing.assert_array_equal(clf.parity_, r)
    assert clf.score(X, y) == 1.0


def test_inf_matches_exact_solve_and_labels():
    X, y, r = _planted(n=200, d=8, seed=3)
    clf = PrivateParityClassifier(epsilon=np.inf).fit(X, 5 + 2 * y)  # classes {5, 7}
    np.testing.assert_array_equal(clf.parity_, r)
    np.testing.assert_array_equal(clf.classes_, [5, 7])
    np.testing.assert_array_equal(clf.predict(X), 5 + 2 * y)
    assert clf.privacy_spent_["central"][0] == math.inf


def test_inf_inconsistent_predicts_constant_first_class():
    X = np.array([[1, 0], [1, 0], [0, 1]])
    clf = PrivateParityClassifier(epsilon=np.inf).fit(X, [0, 1, 1])
    assert clf.parity_ is None
    np.testing.assert_array_equal(clf.predict(X), [0, 0, 0])


def test_one_central_event_and_accountant():
    X, y, _ = _planted(n=500)
    acc = PrivacyAccountant(epsilon=1.5)
    clf = PrivateParityClassifier(epsilon=1.0, n_chunks=7, accountant=acc, random_state=0)
    clf.fit(X, y)
    assert clf.privacy_spent_ == {"central": (1.0, 0.0), "local": (0.0, 0.0)}
    assert len(clf.privacy_events_) == 1 and clf.privacy_events_[0].count == 1
    with pytest.raises(BudgetExceededError):
        clf.fit(X, y)
    with pytest.raises(BudgetExceededError):  # a baseline on budgeted data is refused
        PrivateParityClassifier(epsilon=np.inf, accountant=PrivacyAccountant(epsilon=9)).fit(X, y)


def test_noise_spy_matches_event():
    X, y, _ = _planted(n=600)
    with record_noise() as draws:
        PrivateParityClassifier(epsilon=1.0, n_chunks=5, floor=0.5, random_state=0).fit(X, y)
    floors = [d for d in draws if d.tag == "parity_floor"]
    subs = [d for d in draws if d.tag == "parity_drop"]
    assert len(floors) == 5 and all(d.scale == 0.5 for d in floors)
    # each row of a chunk is dropped w.p. 1 − tanh(ε/2); chunks partition the rows
    assert all(d.scale == pytest.approx(1 - math.tanh(0.5)) for d in subs)
    assert sum(d.count for d in subs) <= 600


def test_floor_min_and_too_small_floor():
    X, y, _ = _planted(n=300)
    p = math.tanh(0.5)
    with record_noise() as draws:
        PrivateParityClassifier(floor="min", random_state=0).fit(X, y)
    (permutation,) = [d for d in draws if d.kind == "permutation"]
    assert permutation.scale == 300 and permutation.tag == "parity-chunks"  # data-independent
    floors = [d for d in draws if d.kind == "bernoulli"]
    assert floors[0].scale == pytest.approx((1 - p) / (3 - p))
    with pytest.raises(ValueError, match="floor"):
        PrivateParityClassifier(floor=0.01).fit(X, y)


def test_bad_input():
    X, y, _ = _planted(n=50)
    with pytest.raises(ValueError, match="binary 0/1"):
        PrivateParityClassifier().fit(X + 0.5, y)
    with pytest.raises(ValueError, match="exactly two classes"):
        PrivateParityClassifier().fit(X, np.zeros(50))
    clf = PrivateParityClassifier(epsilon=np.inf).fit(X, y)
    with pytest.raises(ValueError, match="binary 0/1"):
        clf.predict(2 * X)


def test_select_candidate_majority():
    a, b = np.array([1, 0], np.uint8), np.array([0, 1], np.uint8)
    assert select_candidate([None, None]) is None
    np.testing.assert_array_equal(select_candidate([None, a, b, b]), b)
    np.testing.assert_array_equal(select_candidate([None, a, b]), a)  # tie: earliest
