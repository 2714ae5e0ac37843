"""Degenerate fitted models say so (DegenerateModelWarning), reading only released outputs."""

import warnings

import numpy as np
import pytest

from skhybrid import DegenerateModelWarning
from skhybrid.hybrid import LocalThresholdClassifier
from skhybrid.learners import PrivateParityClassifier
from skhybrid.ppm import PPMHalfspaceClassifier


def _no_degenerate_warning(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        return fit()


def test_parity_learner_warns_when_no_parity_is_found():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (200, 12))
    y = rng.integers(0, 2, 200)  # no parity explains random labels
    with pytest.warns(DegenerateModelWarning, match="no parity was found, so it predicts 0 "):
        clf = PrivateParityClassifier(epsilon=1.0, random_state=0).fit(X, y)
    assert clf.parity_ is None
    # A real parity on enough rows: no warning.
    X = rng.integers(0, 2, (4000, 8))
    y = X[:, [0, 3]].sum(axis=1) % 2
    clf = _no_degenerate_warning(
        lambda: PrivateParityClassifier(epsilon=1.0, random_state=0).fit(X, y))
    assert clf.parity_ is not None


def test_local_threshold_warns_at_the_domain_edge():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 256, 20_000)
    y = (rng.random(20_000) < 0.97).astype(int)  # label 1 almost everywhere: theta = 0
    X = t[:, None]
    with pytest.warns(DegenerateModelWarning, match="edge of its domain, so it predicts 1 "):
        clf = LocalThresholdClassifier(epsilon=np.inf).fit(  # the ERM threshold is 0
            X, y, curator_mask=np.zeros(len(y), bool))
    assert clf.threshold_ == 0
    # A real threshold, but 300 agents at epsilon = 0.5 are too few for 8 bits: a private
    # fit lands at the edge now and then (about one seed in three), and says so exactly
    # then; 100,000 agents at epsilon = 2 find it.
    y = (t[:300] >= 100).astype(int)
    outcomes = []
    for seed in range(10):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = LocalThresholdClassifier(epsilon=0.5, classes=[0, 1], random_state=seed).fit(
                X[:300], y, curator_mask=np.zeros(300, bool))
        warned = any(issubclass(w.category, DegenerateModelWarning)
                     and "too few agents" in str(w.message) for w in caught)
        outcomes.append((fitted.threshold_ in (0, 256), warned))
    assert all(at_edge == warned for at_edge, warned in outcomes)
    assert any(at_edge for at_edge, _ in outcomes) and not all(at for at, _ in outcomes)
    t = rng.integers(0, 256, 100_000)
    y = (t >= 100).astype(int)
    clf = _no_degenerate_warning(lambda: LocalThresholdClassifier(
        epsilon=2.0, random_state=0).fit(t[:, None], y, curator_mask=np.zeros(len(y), bool)))
    assert 90 <= clf.threshold_ <= 110


def test_ppm_warns_on_the_empty_hypothesis():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 2))
    y = (np.linalg.norm(X, axis=1) > 0.6).astype(int)
    with pytest.warns(DegenerateModelWarning, match="empty hypothesis"):
        PPMHalfspaceClassifier(epsilon=1.0, random_state=0).fit(X, y)  # no public rows
    _no_degenerate_warning(lambda: PPMHalfspaceClassifier(epsilon=1.0, random_state=0).fit(
        X, y, public_mask=y == 0))
