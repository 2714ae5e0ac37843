"""No fitted transfer estimator holds a random generator that drew its privacy noise.

PCG64 can be stepped back (``bit_generator.advance(2**128 - k)``): a released generator,
or a deep copy of it, lets anyone replay the noise and subtract it from the released
values. STR handed its own generator (which also draws the local agents' Gaussian
randomized response) to every round's learner, and ``hypothesis_`` kept it. The audit
walks every parameter and fitted attribute, nested estimators included
(:func:`tests._rng_audit.find_generators`), for every transfer estimator and path.
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from skhybrid.accounting import PrivacyAccountant
from skhybrid.learners import DPLogisticRegression
from skhybrid.transfer import (
    HardMarginLinearSVC,
    NoisySGDClassifier,
    ParityTransfer,
    SubsampleTestReweigh,
    str_min_curator_size,
)
from skhybrid.transfer import _str

from .._rng_audit import find_generators

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

EPS, DELTA, KAPPA, T, M1 = 1.0, 1e-5, 0.2, 3, 20


class _WarmDPLearner(ClassifierMixin, BaseEstimator):
    """A DP-shaped learner (epsilon/delta/accountant) with ``warm_start``, drawing from
    ``random_state``: with ``epsilon=np.inf`` STR hands it its own generator."""

    def __init__(self, epsilon=1.0, delta=0.0, accountant=None, random_state=None,
                 warm_start=False, classes=None):
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state
        self.warm_start = warm_start
        self.classes = classes

    def fit(self, X, y, sample_weight=None):
        from skhybrid._validation import check_generator

        check_generator(self.random_state).random()  # uses the generator, as a learner would
        self.classes_ = np.unique(y) if self.classes is None else np.asarray(self.classes)
        Xa = np.c_[X, np.ones(len(X))]
        t = np.where(y == self.classes_[-1], 1.0, -1.0)
        w = np.linalg.lstsq(Xa, t, rcond=None)[0]
        self.coef_, self.intercept_ = w[None, :-1], w[-1:]
        return self

    def predict(self, X):
        return self.classes_[(X @ self.coef_[0] + self.intercept_[0] > 0).astype(int)]


def _gauss(n_c, n_l, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_c + n_l, d))
    X[n_c:, 1:] *= 0.3
    y = np.where(X[:, 0] + 0.2 * X[:, 1] > 0, 1, -1)
    return X, y, np.r_[np.ones(n_c, bool), np.zeros(n_l, bool)]


def _bits(n_c=600, n_l=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n_c + n_l, 6))
    return X, X[:, 0] ^ X[:, 2], np.r_[np.ones(n_c, bool), np.zeros(n_l, bool)]


def _str_private(**kw):
    params = dict(base_estimator=DPLogisticRegression(data_norm=4.0), epsilon=EPS,
                  delta=DELTA, alpha=0.05, max_iter=T, kappa=KAPPA, subsample_size=M1,
                  local_batch_size=50, classes=[-1, 1])
    params.update(kw)
    return SubsampleTestReweigh(**params)


def _cases():
    n_c = str_min_curator_size(EPS, DELTA, T, KAPPA, M1) + 10
    dpl = _str_private()
    inf = dict(epsilon=np.inf, alpha=0.05, max_iter=3, subsample_size=200, classes=[-1, 1])
    sgd = NoisySGDClassifier(n_steps=200)
    return {
        # SubsampleTestReweigh, Algorithm 2 (DP learner per round) and the agnostic choice
        "str-private": (dpl, "gauss", n_c, 200),
        "str-private-agnostic": (_str_private(agnostic=True), "gauss", n_c, 200),
        # Algorithm 4 (noisy SGD per round, STR's generator passed to _fit_log_mu)
        "str-private-sgd": (SubsampleTestReweigh(
            sgd, epsilon=1.0, delta=1e-5, alpha=0.1, chi2_bound=1.0, max_iter=2,
            local_batch_size=100, classes=[-1, 1]), "gauss", 20000, 200),
        # the degenerate path (curator_mask=None): one DP-learner fit
        "str-degenerate-private": (_str_private(), "gauss-all", 400, 0),
        "str-degenerate-nonprivate": (SubsampleTestReweigh(
            DPLogisticRegression(data_norm=4.0), **inf), "gauss-all", 400, 0),
        # Algorithm 1 with a DP learner at epsilon=inf (it was handed the generator), a
        # plain learner (an int seed), sample weights, and warm_start on and off
        "str-nonprivate-dp-learner": (SubsampleTestReweigh(
            DPLogisticRegression(data_norm=4.0), **inf), "gauss", 400, 300),
        "str-nonprivate-plain": (SubsampleTestReweigh(LogisticRegression(), **inf),
                                 "gauss", 400, 300),
        "str-nonprivate-sample-weight": (SubsampleTestReweigh(
            _WarmDPLearner(), reweighting="sample_weight", **inf), "gauss", 400, 300),
        "str-nonprivate-warm-off": (SubsampleTestReweigh(_WarmDPLearner(), **inf),
                                    "gauss", 400, 300),
        "str-nonprivate-warm-on": (SubsampleTestReweigh(_WarmDPLearner(), warm_start=True,
                                                        **inf), "gauss", 400, 300),
        "str-nonprivate-warm-sample-weight": (SubsampleTestReweigh(
            _WarmDPLearner(), warm_start=True, reweighting="sample_weight", **inf),
            "gauss", 400, 300),
        "str-nonprivate-hard-margin-warm": (SubsampleTestReweigh(
            HardMarginLinearSVC(), warm_start=True, **inf), "gauss", 400, 300),
        "str-nonprivate-sgd": (SubsampleTestReweigh(NoisySGDClassifier(n_steps=200), **inf),
                               "gauss", 400, 300),
        "parity-transfer-private": (ParityTransfer(epsilon=1.0, classes=[0, 1]), "bits",
                                    600, 600),
        "parity-transfer-nonprivate": (ParityTransfer(epsilon=np.inf, classes=[0, 1]),
                                       "bits", 600, 600),
        "sgd-private": (NoisySGDClassifier(delta=1e-5, n_steps=200, classes=[-1, 1]),
                        "gauss-all", 300, 0),
        "sgd-nonprivate": (NoisySGDClassifier(epsilon=np.inf, n_steps=200), "gauss-all",
                           300, 0),
        "hard-margin": (HardMarginLinearSVC(), "gauss-all", 300, 0),
    }


CASES = _cases()


def _fit(name, random_state):
    est, kind, n_c, n_l = CASES[name]
    from sklearn.base import clone

    est = clone(est)
    params = est.get_params(deep=False)
    if "random_state" in params:
        est.set_params(random_state=random_state)
    if "accountant" in params:
        est.set_params(accountant=PrivacyAccountant())
    if kind == "bits":
        X, y, mask = _bits(n_c, n_l)
    else:
        X, y, mask = _gauss(n_c, n_l)
    if kind == "gauss-all":
        return est.fit(X, y)
    return est.fit(X, y, curator_mask=mask)


@pytest.mark.parametrize("random_state", [None, 0])
@pytest.mark.parametrize("name", list(CASES))
def test_no_generator_reachable_from_a_fitted_transfer_estimator(name, random_state):
    est = _fit(name, random_state)
    assert find_generators(est, name) == []


def test_hypotheses_keep_the_template_random_state():
    # Reset to what clone(base) gives, not to None: the hypothesis stays a clone of the
    # template with the round's parameters.
    X, y, mask = _gauss(400, 300)
    clf = SubsampleTestReweigh(_WarmDPLearner(random_state=7), epsilon=np.inf, max_iter=3,
                               warm_start=True, classes=[-1, 1], random_state=0)
    clf.fit(X, y, curator_mask=mask)
    assert clf.hypothesis_.random_state == 7
    clf = _str_private(base_estimator=DPLogisticRegression(data_norm=4.0, random_state=3))
    clf.fit(*_gauss(400, 0)[:2])
    assert clf.hypothesis_.random_state == 3


# ------------------------------------------------------------------ mutation twins


@pytest.mark.parametrize("name", ["str-private", "str-degenerate-private",
                                  "str-nonprivate-dp-learner", "str-nonprivate-warm-on"])
def test_twin_without_the_reset_the_audit_finds_str_generator(name, monkeypatch):
    # The estimator-level twin: STR without the reset releases its generator (a deep copy
    # of it with warm_start) in hypothesis_.random_state, and the walker must say so.
    monkeypatch.setattr(_str, "_detach_random_state", lambda h, base, params: h)
    est = _fit(name, None)
    assert find_generators(est, name) == [f"{name}.hypothesis_.random_state"]


def _fitted_str():
    return _fit("str-nonprivate-plain", 0)


@pytest.mark.parametrize("plant", [
    lambda e: setattr(e.hypothesis_, "random_state", np.random.default_rng()),
    lambda e: setattr(e, "extra_", {"a": [1, (2, np.random.PCG64())]}),
    lambda e: setattr(e, "extra_", np.array([None, np.random.RandomState(0)], dtype=object)),
    lambda e: setattr(e.hypothesis_, "seed_", np.random.SeedSequence()),
    lambda e: setattr(e, "state_", np.random.default_rng().bit_generator.state),
    lambda e: setattr(e, "base_estimator", LogisticRegression(
        random_state=np.random.default_rng())),
])
def test_twin_a_planted_generator_is_found(plant):
    est = _fitted_str()
    assert find_generators(est) == []
    plant(est)
    assert len(find_generators(est)) == 1
