"""Parity XOR threshold (BKNSS Lemma 3.3), the local threshold learner, parity-and-threshold."""

import math

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid.accounting import PrivacyAccountant
from skhybrid.hybrid._local_threshold import (
    LocalThresholdClassifier,
    ParityAndThresholdClassifier,
    threshold_from_cdf,
)
from skhybrid.hybrid._parity_threshold import (
    EmpiricalCDF,
    LaplaceTreeCDF,
    ParityThresholdClassifier,
    decode_class,
    fill_bottoms,
    route,
)
from skhybrid.mechanisms._noise import record_noise


def _data(n, c, b, seed, theta_frac=0.37):
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 2, c)
    theta = int(theta_frac * 2**b)
    X = np.column_stack([rng.integers(0, 2, (n, c)), rng.integers(0, 2**b, n)])
    return X, (X[:, :c] @ k + (X[:, -1] >= theta)) % 2


@pytest.mark.parametrize("c, b, alpha, m, n", [(16, 10, 0.1, 10_000, 100_000),
                                               (12, 8, 0.2, 10_000, 50_000)])
def test_hybrid_learns_where_local_only_cannot(c, b, alpha, m, n):
    X, y = _data(m + n + 20_000, c, b, seed=c)
    Xt, yt = X[m + n:], y[m + n:]
    X, y = X[:m + n], y[:m + n]
    mask = np.arange(m + n) < m
    hyb = [1 - ParityThresholdClassifier(threshold_bits=b, alpha=alpha, random_state=s)
           .fit(X, y, curator_mask=mask).score(Xt, yt) for s in range(3)]
    assert np.mean(hyb) <= 2 * alpha
    loc = LocalThresholdClassifier(threshold_bits=b, random_state=0).fit(X, y, curator_mask=mask)
    assert abs(loc.score(Xt, yt) - 0.5) < 0.05  # the parity masks every threshold


def test_nonprivate_protocol_is_accurate():
    X, y = _data(30_000, 8, 8, seed=1)
    mask = np.arange(30_000) < 5000
    clf = ParityThresholdClassifier(threshold_bits=8, alpha=0.1, epsilon=np.inf)
    assert clf.fit(X, y, curator_mask=mask).score(X, y) > 0.95


def test_privacy_charges_compose_over_sorted_blocks():
    X, y = _data(3000, 6, 8, seed=2)
    mask = np.arange(3000) < 1000
    acc = PrivacyAccountant(epsilon=1.0)
    clf = ParityThresholdClassifier(threshold_bits=8, alpha=0.2, epsilon=1.0, accountant=acc,
                                    random_state=0).fit(X, y, curator_mask=mask)
    assert clf.n_blocks_ == 5
    par, loc = clf.privacy_events_
    assert (par.mechanism, par.population, par.count) == ("private_parity", "central", 5)
    assert par.epsilon == pytest.approx(0.2)  # αε per block, basic composition to ε
    assert (loc.mechanism, loc.population, loc.epsilon) == ("hierarchical_cdf", "local", 1.0)
    assert clf.privacy_spent_["central"][0] == pytest.approx(1.0)
    assert clf.privacy_spent_["local"] == (1.0, 0.0)
    assert acc.spent("central")[0] == pytest.approx(1.0)


def test_noise_spy_matches_events():
    X, y = _data(4000, 6, 8, seed=3)
    mask = np.arange(4000) < 1500
    with record_noise() as draws:
        clf = ParityThresholdClassifier(threshold_bits=8, alpha=0.25, n_boost=3, floor=0.5,
                                        random_state=0).fit(X, y, curator_mask=mask)
    floors = [d for d in draws if d.tag == "parity_floor"]
    subs = [d for d in draws if d.tag == "parity_drop"]
    assert len(floors) == clf.n_blocks_ * 3 == 12
    assert all(d.scale == pytest.approx(1 - math.tanh(0.25 / 2)) for d in subs)
    # sub-chunks partition the curator rows; a chunk ⊥ at its floor coin draws nothing
    assert len(subs) <= 12 and sum(d.count for d in subs) <= 1500
    cdf = [d for d in draws if d.tag == "hierarchical_cdf"]
    assert sum(d.count for d in cdf) == 2500  # one randomized report per local agent


def test_curator_only_when_mask_is_none():
    X, y = _data(20_000, 6, 8, seed=4)
    with record_noise() as draws:
        clf = ParityThresholdClassifier(threshold_bits=8, alpha=0.1, random_state=0).fit(X, y)
    assert clf.curator_only_
    assert clf.privacy_spent_["central"][0] == pytest.approx(1.0)
    assert clf.privacy_spent_["local"] == (0.0, 0.0)
    lap = [d for d in draws if d.kind == "discrete_laplace"]  # one exact release, 8 levels
    assert len(lap) == 1 and lap[0].count == sum(2**level for level in range(1, 9))
    assert 2 * 8 / 0.5 <= lap[0].scale <= 2 * 8 / 0.5 * 1.002
    assert not any(d.tag == "hierarchical_cdf" for d in draws)
    assert clf.score(X, y) > 0.7


def test_bad_input_and_empty_groups():
    X, y = _data(200, 4, 4, seed=5)
    mask = np.arange(200) < 50
    clf = ParityThresholdClassifier(threshold_bits=4)
    with pytest.raises(ValueError, match="threshold_bits"):
        ParityThresholdClassifier(threshold_bits=3).fit(X, y, curator_mask=mask)
    Xb = X.copy()
    Xb[0, 0] = 2
    with pytest.raises(ValueError, match="parity columns"):
        clf.fit(Xb, y, curator_mask=mask)
    with pytest.raises(ValueError, match="no curator rows"):
        clf.fit(X, y, curator_mask=np.zeros(200, bool))
    with pytest.raises(ValueError, match="no local agents"):
        clf.fit(X, y, curator_mask=np.ones(200, bool))
    with pytest.raises(ValueError, match="threshold_feature"):
        ParityThresholdClassifier(threshold_feature=9, threshold_bits=4).fit(X, y)
    with pytest.raises(ValueError, match="no local agents"):
        LocalThresholdClassifier(threshold_bits=4).fit(X, y, curator_mask=np.ones(200, bool))


def test_threshold_feature_anywhere():
    X, y = _data(30_000, 8, 8, seed=6)
    Xs = np.column_stack([X[:, -1], X[:, :-1]])
    mask = np.arange(30_000) < 5000
    a = ParityThresholdClassifier(threshold_bits=8, epsilon=np.inf).fit(X, y, curator_mask=mask)
    b = ParityThresholdClassifier(threshold_feature=0, threshold_bits=8, epsilon=np.inf)
    np.testing.assert_array_equal(a.predict(X), b.fit(Xs, y, curator_mask=mask).predict(Xs))


def test_referee_decoding_and_routing():
    k = np.array([1, 0, 1], np.uint8)
    h = [np.r_[k, 0], None, np.r_[k, 0], None, np.r_[1 - k, 1], np.r_[k, 1]]
    out = decode_class(h)
    np.testing.assert_array_equal(out[:, :3], np.tile(k, (6, 1)))
    np.testing.assert_array_equal(out[:, 3], [0, 0, 0, 0, 1, 1])  # cuts 3 and 4 tie: upper
    near = fill_bottoms(h)
    np.testing.assert_array_equal(near[1], h[0])
    np.testing.assert_array_equal(near[3], h[2])
    assert decode_class([None]) is None and fill_bottoms([None, None]) is None
    np.testing.assert_array_equal(route(np.array([0.0, 0.2, 0.21, 1.0]), np.array([0.2, 0.4])),
                                  [0, 0, 1, 2])


def test_laplace_tree_cdf_matches_exact_when_noise_is_tiny():
    rng = np.random.default_rng(0)
    v = rng.integers(0, 64, 5000)
    tree = LaplaceTreeCDF(1e6, 6).fit(v, rng)
    w = np.arange(64)
    np.testing.assert_allclose(tree.cdf(w), EmpiricalCDF(v).cdf(w), atol=1e-3)


def test_threshold_from_exact_cdf_is_erm():
    t = np.array([0, 1, 2, 3, 5, 6, 7, 7])
    lab = np.array([0, 0, 1, 0, 1, 1, 1, 1])
    u = (lab << 3) | t
    theta, errs, starts = threshold_from_cdf(EmpiricalCDF(u), 3)
    brute = [np.mean((t >= th) != lab) for th in range(9)]
    np.testing.assert_allclose(errs, brute)
    np.testing.assert_array_equal(starts, np.arange(9))
    assert theta == int(np.argmin(brute)) == 2


def _piece_error(errors, starts, theta):
    return errors[np.searchsorted(starts, theta, side="right") - 1]


@pytest.mark.parametrize("b", [17, 32, 61])
def test_exact_cdf_minimises_over_every_threshold_beyond_16_bits(b):
    # Above 16 bits the referee tried 2^16 + 1 grid points: an odd threshold at b = 17
    # was unreachable (training error 0.5 at epsilon=inf, "exact ERM").
    rng = np.random.default_rng(b)
    t = rng.integers(0, 2**b, 3000, dtype=np.int64)
    t[:1000] = 80003 + rng.integers(-1, 1, 1000)  # half at 80002, half at 80003
    lab = ((t >= 80003) ^ (rng.random(t.size) < 0.05)).astype(np.int64)
    theta, errors, starts = threshold_from_cdf(EmpiricalCDF((lab << b) | t), b)
    brute = {th: np.mean((t >= th) != lab) for th in np.r_[0, 2**b, t, t + 1]}
    best = min(brute.values())
    assert brute[theta] == pytest.approx(best) == pytest.approx(errors.min())
    assert theta == min(th for th, e in brute.items() if e <= best + 1e-12)  # ties: smallest
    for th in rng.integers(0, 2**b + 1, 2000).tolist() + [2**b, 80002, 80003, 80004]:
        assert _piece_error(errors, starts, th) == pytest.approx(np.mean((t >= th) != lab))
    clf = LocalThresholdClassifier(threshold_bits=b, epsilon=np.inf, classes=[0, 1])
    clf.fit(t[:, None], lab)
    assert clf.threshold_ == theta
    np.testing.assert_array_equal(clf.candidate_thresholds_, starts)


def test_local_threshold_reaches_an_odd_threshold_at_17_bits():
    # The red team's case: the 2^16 + 1 grid (spacing 2) could not hold 80003, so the
    # training error was 0.5 while error_bound promised 0.41.
    n, th = 100_000, 80003
    t = np.where(np.random.default_rng(0).random(n) < 0.5, th - 1, th)
    X, y = t[:, None], (t >= th).astype(int)
    for seed in range(3):
        clf = LocalThresholdClassifier(threshold_bits=17, epsilon=20.0, classes=[0, 1],
                                       random_state=seed).fit(X, y)
        assert clf.threshold_ == th and clf.score(X, y) == 1.0
        assert clf.estimated_errors_.shape == (2**17 + 1,)


def test_laplace_tree_search_is_exact_over_its_pieces():
    b = 32
    rng = np.random.default_rng(0)
    t = rng.integers(0, 2**b, 5000, dtype=np.int64)
    lab = (t >= 3 * 2**30 + 12345).astype(np.int64)
    tree = LaplaceTreeCDF(2.0, b + 1).fit((lab << b) | t, rng)
    theta, errors, starts = threshold_from_cdf(tree, b)
    assert starts.size == 2**19 + 1 and np.all(np.diff(starts) == 2**13)
    probes = np.r_[rng.integers(0, 2**b + 1, 20000), starts[1:] - 1, starts, 2**b]
    probes = np.clip(probes, 0, 2**b)
    direct = tree.cdf(2**b + probes - 1) - np.where(probes > 0, tree.cdf(np.maximum(probes - 1, 0)),
                                                     0.0)
    np.testing.assert_allclose(_piece_error(errors, starts, probes), direct, atol=1e-12)
    assert direct.min() >= errors.min() - 1e-12 and theta == starts[np.argmin(errors)]


def test_hierarchical_cdf_search_at_20_bits_uses_every_encoded_value():
    # Beyond the mechanism's dense table (21 encoded bits) the referee computes the
    # estimate at all 2^21 values at once; it must equal cdf.cdf over the whole domain.
    from skhybrid.mechanisms.local.cdf import HierarchicalCDF

    rng = np.random.default_rng(0)
    cdf = HierarchicalCDF(2.0, 21).fit(rng.integers(0, 2**21, 300), rng)
    full = cdf.cdf(np.arange(2**21))  # cheap only because 300 agents leave few columns
    np.testing.assert_allclose(cdf.cdf_table(), full, rtol=0, atol=1e-12)
    theta, errors, starts = threshold_from_cdf(cdf, 20)
    brute = full[2**20 - 1:] - np.r_[0.0, full[:2**20]]
    np.testing.assert_allclose(errors, brute, rtol=0, atol=1e-12)
    assert theta == int(np.argmin(brute)) and starts.size == 2**20 + 1


def test_hierarchical_cdf_beyond_21_bits_is_refused_before_the_charge():
    rng = np.random.default_rng(0)
    n = 2000
    t = rng.integers(0, 2**22, n, dtype=np.int64)
    X, y = np.column_stack([rng.integers(0, 2, (n, 3)), t]), (t >= 2**21).astype(int)
    agents = np.arange(n) >= 500
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="at most 21 bits"):
        LocalThresholdClassifier(threshold_bits=22, classes=[0, 1], accountant=acc,
                                 random_state=0).fit(X, y, curator_mask=~agents)
    with pytest.raises(ValueError, match="at most 21 bits"):
        ParityAndThresholdClassifier(threshold_bits=22, classes=([0, 1], [0, 1]),
                                     accountant=acc, random_state=0).fit(
            X, np.column_stack([X[:, 0], y]), curator_mask=~agents)
    assert acc.events == []
    with pytest.raises(ValueError, match="at most 21 bits"):
        LocalThresholdClassifier(threshold_bits=22).error_bound(10**6)
    # exact at any b: the non-private baseline, the curator's Laplace tree, App. A's bins
    LocalThresholdClassifier(threshold_bits=22, epsilon=np.inf, classes=[0, 1]).fit(X, y)
    ParityAndThresholdClassifier(threshold_bits=22, classes=([0, 1], [0, 1]),
                                 random_state=0).fit(X, np.column_stack([X[:, 0], y]))
    assert LocalThresholdClassifier(threshold_bits=21).error_bound(10**6) > 0


def test_local_threshold_learns_a_threshold():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 64, 200_000)
    X, y = np.column_stack([rng.integers(0, 2, t.size), t]), (t >= 20).astype(int)
    agents = np.zeros(t.size, bool)
    fits = [LocalThresholdClassifier(threshold_bits=6, random_state=s).fit(X, y, curator_mask=agents)
            for s in range(5)]
    assert fits[0].privacy_spent_ == {"central": (0.0, 0.0), "local": (1.0, 0.0)}
    # without a mask every row is the curator's: the same protocol is charged centrally
    held = LocalThresholdClassifier(threshold_bits=6, random_state=0).fit(X, y)
    assert held.privacy_spent_ == {"central": (1.0, 0.0), "local": (0.0, 0.0)}
    assert np.median([abs(f.threshold_ - 20) for f in fits]) <= 2
    assert np.median([f.score(X, y) for f in fits]) > 0.95
    assert LocalThresholdClassifier(threshold_bits=6, epsilon=np.inf).fit(X, y).threshold_ == 20


def test_parity_and_threshold_two_bit_label():
    rng = np.random.default_rng(0)
    n = 60_000
    X = np.column_stack([rng.integers(0, 2, (n, 5)), rng.integers(0, 64, n)])
    Y = np.column_stack([X[:, :5] @ [1, 1, 0, 0, 1] % 2, X[:, -1] >= 21])
    mask = np.arange(n) < 5000
    clf = ParityAndThresholdClassifier(threshold_bits=6, random_state=1)
    clf.fit(X, Y, curator_mask=mask)
    assert clf.parity_.tolist() == [1, 1, 0, 0, 1]
    assert clf.predict(X).shape == (n, 2)
    assert np.mean(clf.predict(X)[:, 0] == Y[:, 0]) == 1.0
    assert np.mean(clf.predict(X)[:, 1] == Y[:, 1]) > 0.85
    assert clf.privacy_spent_ == {"central": (1.0, 0.0), "local": (1.0, 0.0)}
    with pytest.raises(ValueError, match="shape"):
        clf.fit(X, Y[:, 0], curator_mask=mask)


FIT_LOG = []


class _Recording(ParityThresholdClassifier):
    def fit(self, X, y, *, curator_mask=None):
        FIT_LOG.append((np.asarray(X)[:, 0].astype(int), np.asarray(curator_mask)))
        return super().fit(X[:, 1:], y, curator_mask=curator_mask)

    def predict(self, X):
        return super().predict(X[:, 1:])


def test_routing_splits_curator_mask():
    X, y = _data(900, 4, 6, seed=7)
    X = np.column_stack([np.arange(900), X])
    mask = np.random.default_rng(0).random(900) < 0.4
    FIT_LOG.clear()
    cross_validate(_Recording(threshold_bits=6, epsilon=np.inf), X, y,
                   cv=KFold(3, shuffle=True, random_state=0), params={"curator_mask": mask})
    GridSearchCV(_Recording(threshold_bits=6, epsilon=np.inf), {"alpha": [0.1, 0.2]},
                 cv=2).fit(X, y, curator_mask=mask)
    assert len(FIT_LOG) == 3 + 5
    for rows, received in FIT_LOG:
        np.testing.assert_array_equal(received, mask[rows])


def test_klnrs_refusal_names_the_users_epsilon_and_the_split():
    # Red team 9, F3: the refusal named the per-block epsilon (4, from 16 halved and split
    # over K = 2 blocks) as if the user had passed it.
    X = np.random.default_rng(0).integers(0, 2, (50, 4))
    clf = ParityThresholdClassifier(threshold_bits=1, alpha=0.5, epsilon=16.0, rate="klnrs",
                                    classes=[0, 1])
    with pytest.raises(ValueError, match=r"ParityThresholdClassifier\(epsilon=16.0\) learns "
                                         r"each of its K=\d+ parity blocks at epsilon=4 "
                                         r"\(half of epsilon: curator_mask=None\): "
                                         r"rate='klnrs'"):
        clf.fit(X, X[:, 0])
