"""ParityTransfer (KS App. B): recovery under S ≠ T, the local test's role, charges, noise spy."""

import math

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid.accounting import PrivacyAccountant
from skhybrid.learners._parity_core import predict_parity
from skhybrid.mechanisms._noise import record_noise
from skhybrid.transfer import ParityTransfer

R = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1], dtype=np.uint8)


def _data(n_c=3000, n_l=3000, p_one=0.3, seed=0, dead=()):
    """S: independent bits, P[1] = p_one (bits in `dead` always 0); T: uniform bits."""
    rng = np.random.default_rng(seed)
    d = R.size
    Xs = (rng.random((n_c, d)) < p_one).astype(np.int64)
    Xs[:, list(dead)] = 0
    Xt = rng.integers(0, 2, size=(n_l, d))
    X = np.vstack([Xs, Xt])
    return X, predict_parity(R, X), np.r_[np.ones(n_c, bool), np.zeros(n_l, bool)]


@pytest.mark.parametrize("seed", range(4))
def test_recovers_planted_parity_when_source_is_biased(seed):
    X, y, mask = _data(seed=seed)
    clf = ParityTransfer(epsilon=1.0, random_state=seed).fit(X, y, curator_mask=mask)
    np.testing.assert_array_equal(clf.parity_, R)
    assert clf.validated_
    Xt = np.random.default_rng(99).integers(0, 2, size=(2000, R.size))
    assert np.mean(clf.predict(Xt) != predict_parity(R, Xt)) == 0.0


def test_local_test_picks_the_right_candidate_the_curator_cannot_identify():
    # S never sets bit 0, so the curator's systems leave r_0 free: chunks output R or
    # R ⊕ e_0 at random. Under the uniform T the wrong one errs on half the agents.
    # If no chunk happened to output R (prob. 0.75^12), the test must reject what it has.
    wins = 0
    for seed in range(6):
        X, y, mask = _data(seed=seed, dead=(0,))
        clf = ParityTransfer(epsilon=1.0, n_chunks=12, random_state=seed).fit(
            X, y, curator_mask=mask)
        right = np.all(clf.candidates_ == R, axis=1)
        assert np.all(clf.target_error_estimates_[~right] > 0.3)
        if right.any():
            wins += 1
            np.testing.assert_array_equal(clf.parity_, R)
            assert clf.validated_
        else:
            assert not clf.validated_
    assert wins >= 4


def test_privacy_charges_and_local_epsilon():
    X, y, mask = _data()
    acc = PrivacyAccountant()
    clf = ParityTransfer(epsilon=0.7, local_epsilon=2.0, n_chunks=6, accountant=acc,
                         random_state=0).fit(X, y, curator_mask=mask)
    central, local = clf.privacy_events_
    assert central.population == "central" and central.kind == "pure"
    assert central.epsilon == pytest.approx(0.7)  # rate="tanh": exactly ε, parallel chunks
    assert local.population == "local" and local.epsilon == 2.0 and local.count == 1
    assert clf.privacy_spent_["central"][0] == pytest.approx(0.7)
    assert clf.privacy_spent_["local"][0] == pytest.approx(2.0)
    # KS's rate p = ε/4 is ε-DP only up to ε ≈ 3.83; at ε = 1 it spends about ε/2
    klnrs = ParityTransfer(epsilon=1.0, rate="klnrs", random_state=0).fit(
        X, y, curator_mask=mask)
    p = 0.25
    assert klnrs.privacy_spent_["central"][0] == pytest.approx(math.log((1 + p) / (1 - p)))


def test_noise_spy_matches_charges():
    X, y, mask = _data()
    n_local = int((~mask).sum())
    with record_noise() as draws:
        clf = ParityTransfer(epsilon=1.0, n_chunks=5, random_state=1).fit(
            X, y, curator_mask=mask)
    rr = [d for d in draws if d.tag == "randomized_response"]
    assert sum(d.count for d in rr) == n_local  # every agent reports exactly once
    eps_l = clf.privacy_events_[1].epsilon
    assert all(d.scale == pytest.approx(1 / (1 + math.exp(eps_l))) for d in rr)
    other = [d for d in draws if d.tag != "randomized_response"]
    assert other  # the parity learner's floor / subsampling coins go through _noise


def test_nonprivate_baseline_and_degenerate_mask():
    X, y, mask = _data()
    clf = ParityTransfer(epsilon=np.inf, random_state=0).fit(X, y, curator_mask=mask)
    np.testing.assert_array_equal(clf.parity_, R)
    assert np.all(clf.target_error_estimates_[np.all(clf.candidates_ == R, axis=1)] == 0.0)
    deg = ParityTransfer(epsilon=1.0, random_state=0).fit(X[mask], y[mask])
    np.testing.assert_array_equal(deg.parity_, R)
    assert deg.privacy_spent_["local"][0] == 0.0


def test_bad_input():
    X, y, mask = _data(n_c=200, n_l=100)
    with pytest.raises(ValueError, match="no local rows"):
        ParityTransfer().fit(X, y, curator_mask=np.ones(len(y), bool))
    with pytest.raises(ValueError, match="0/1 parity features"):
        ParityTransfer().fit(X * 2.0, y, curator_mask=mask)
    with pytest.raises(ValueError, match="exactly two"):
        ParityTransfer().fit(X, np.zeros(len(y)), curator_mask=mask)
    with pytest.raises(ValueError, match="curator_mask"):
        ParityTransfer().fit(X, y, curator_mask=np.zeros(len(y), bool))


class _Recording(ParityTransfer):
    log = []

    def fit(self, X, y, *, curator_mask=None):
        _Recording.log.append((np.asarray(X)[:, -1].copy(), np.asarray(curator_mask)))
        return super().fit(X[:, :-1], y, curator_mask=curator_mask)


def test_routing_cross_validate_and_grid_search():
    X, y, mask = _data(n_c=600, n_l=600)
    # last column = row index in binary-safe form (checked, then dropped before fitting)
    Xi = np.column_stack([X, np.arange(len(y))])
    _Recording.log = []

    class R2(_Recording):
        def fit(self, X, y, *, curator_mask=None):
            rows = np.asarray(X)[:, -1].astype(int)
            np.testing.assert_array_equal(np.asarray(curator_mask), mask[rows])
            _Recording.log.append(rows)
            return ParityTransfer.fit(self, np.asarray(X)[:, :-1], y, curator_mask=curator_mask)

        def predict(self, X):
            return super().predict(np.asarray(X)[:, :-1])

    cross_validate(R2(random_state=0), Xi, y, cv=KFold(3, shuffle=True, random_state=0),
                   params={"curator_mask": mask})
    GridSearchCV(R2(random_state=0), {"epsilon": [1.0, 2.0]}, cv=2).fit(
        Xi, y, curator_mask=mask)
    assert len(_Recording.log) == 3 + 4 + 1


def test_fractional_features_are_rejected_not_truncated():
    X, y, mask = _data(n_c=200, n_l=100)
    X = X.astype(float)
    X[0, 0] = 0.5  # an int cast would silently read this as 0
    with pytest.raises(ValueError, match="0/1 parity features"):
        ParityTransfer().fit(X, y, curator_mask=mask)


@pytest.mark.parametrize("floor", [0.0, 0.05])
def test_a_floor_below_the_proven_one_is_refused_before_the_charge(floor):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (400, 6))
    y = X[:, 0] ^ X[:, 1]
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="floor=.* is too low"):
        ParityTransfer(epsilon=1.0, floor=floor, classes=[0, 1], accountant=acc).fit(
            X, y, curator_mask=np.arange(400) < 300)
    assert acc.events == []
