"""What survives from one fit into the next (red team 6).

A refit keeps nothing of the previous fit, a refused fit leaves the estimator unfitted, and
a released model (a search's best estimator, STR's hypothesis) keeps the user's
accountant, so that refitting it is charged.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

from skhybrid import BudgetExceededError, PrivacyAccountant
from skhybrid.hybrid import LocalThresholdClassifier
from skhybrid.learners import DPLogisticRegression
from skhybrid.model_selection import PrivateSearchCV
from skhybrid.transfer import SubsampleTestReweigh

pytestmark = pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")

X, Y = make_classification(n_samples=400, n_features=4, random_state=0)


def test_a_refit_keeps_nothing_of_the_previous_fit():
    # the non-private baseline's n_iter_ (data-dependent) outlived a private refit
    clf = DPLogisticRegression(epsilon=np.inf, classes=[0, 1]).fit(X, Y)
    assert hasattr(clf, "n_iter_")
    clf.set_params(epsilon=1.0).fit(X, Y)
    assert not hasattr(clf, "n_iter_")
    # twin: the fit as written, without forgetting first
    clf = DPLogisticRegression(epsilon=np.inf, classes=[0, 1]).fit(X, Y)
    DPLogisticRegression.fit.__wrapped__(clf.set_params(epsilon=1.0), X, Y)
    assert hasattr(clf, "n_iter_")

    # App. A's exact bin counts (epsilon=inf) outlived a CDF refit at epsilon=1
    rng = np.random.default_rng(0)
    t = rng.integers(0, 64, 9000)[:, None]
    y = (t[:, 0] >= 20).astype(int)
    mask = np.arange(9000) < 10
    est = LocalThresholdClassifier(threshold_bits=6, alpha=0.2, epsilon=np.inf,
                                   method="app-a", classes=[0, 1]).fit(t, y, curator_mask=mask)
    assert hasattr(est, "bin_counts_")
    est.set_params(epsilon=1.0, method="cdf").fit(t, y, curator_mask=mask)
    fresh = clone(est).fit(t, y, curator_mask=mask)
    assert sorted(k for k in vars(est) if k.endswith("_")) == \
        sorted(k for k in vars(fresh) if k.endswith("_"))


def test_a_refused_fit_leaves_the_estimator_unfitted():
    acc = PrivacyAccountant(epsilon=1.5)
    clf = DPLogisticRegression(epsilon=1.0, classes=[0, 1], accountant=acc).fit(X, Y)
    with pytest.raises(BudgetExceededError):
        clf.fit(X, Y)  # refused at the charge, after classes_ was set
    with pytest.raises(NotFittedError):  # not the old model beside new attributes
        clf.predict(X)
    clf.set_params(accountant=None).fit(X, Y)
    with pytest.raises(ValueError, match="outside the declared classes"):
        clf.fit(X, np.where(Y == 1, "fraud", "ok"))  # refused before the charge
    with pytest.raises(NotFittedError):
        clf.predict(X)


def test_a_search_keeps_nothing_of_the_previous_search():
    acc = PrivacyAccountant(epsilon=1.5)
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0]},
                             epsilon=1.0, accountant=acc).fit(X, Y)
    assert hasattr(search, "best_estimator_")
    with pytest.raises(BudgetExceededError):
        search.fit(X, Y)
    assert not hasattr(search, "privacy_spent_") and not hasattr(search, "best_estimator_")
    search.set_params(refit=False, accountant=None).fit(X, Y)
    assert not hasattr(search, "best_estimator_")


def test_released_models_keep_the_users_accountant():
    # best_estimator_ and STR's hypothesis_ were fitted without one: refits charged nobody
    for where in ("template", "search"):
        acc = PrivacyAccountant(epsilon=10.0)
        template = DPLogisticRegression(classes=[0, 1],
                                        accountant=acc if where == "template" else None)
        search = PrivateSearchCV(template, {"C": [0.1, 1.0]}, epsilon=1.0,
                                 accountant=acc if where == "search" else None).fit(X, Y)
        assert search.best_estimator_.accountant is acc
        before = len(acc.events)
        clone(search.best_estimator_).fit(X, Y)
        assert len(acc.events) == before + 1

    Xs, ys = make_classification(n_samples=9000, n_features=4, random_state=0)
    Xs /= np.abs(Xs).max()
    curator = np.arange(9000) < 4000
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = SubsampleTestReweigh(DPLogisticRegression(), epsilon=4.0, delta=1e-6, max_iter=1,
                                 subsample_size=60, kappa=1.0, classes=[0, 1],
                                 accountant=acc).fit(Xs, ys, curator_mask=curator)
    assert s.hypothesis_.accountant is acc


class _RefusesInFit(DPLogisticRegression):
    """A round learner whose refusal only its fit makes (as a third-party learner's)."""

    def fit(self, X, y, **fit_params):
        raise ValueError("this learner refuses every fit. Nothing was charged.")


def test_str_says_its_charge_stands_when_the_base_refuses_a_round():
    Xs, ys = make_classification(n_samples=9000, n_features=4, random_state=0)
    Xs /= np.abs(Xs).max()
    curator = np.arange(9000) < 4000
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    s = SubsampleTestReweigh(_RefusesInFit(), epsilon=4.0, delta=1e-6,
                             max_iter=1, subsample_size=60, kappa=1.0, classes=[0, 1],
                             accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="charge for this fit stands") as refused:
            s.fit(Xs, ys, curator_mask=curator)
    assert "Nothing was charged" not in str(refused.value)
    assert acc.events  # the charge was made


def test_str_makes_a_dp_learners_own_refusals_before_charging():
    # DPLogisticRegression refuses tol below 1e-13 before its charge; as STR's round
    # learner the same refusal now comes before STR's charge too.
    Xs, ys = make_classification(n_samples=9000, n_features=4, random_state=0)
    Xs /= np.abs(Xs).max()
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    s = SubsampleTestReweigh(DPLogisticRegression(tol=1e-15), epsilon=4.0, delta=1e-6,
                             max_iter=1, subsample_size=60, kappa=1.0, classes=[0, 1],
                             accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="would refuse every round's fit.*Nothing was "
                                             "charged"):
            s.fit(Xs, ys, curator_mask=np.arange(9000) < 4000)
    assert not acc.events


@pytest.mark.parametrize("random_state", [True, False])
def test_a_random_state_the_fit_cannot_use_is_refused_before_the_charge(random_state):
    # Red team 10, F2: scikit-learn's parameter check accepts a bool; the generator is
    # made after the charge, which then stood for a fit that raised.
    from skhybrid.hybrid import SelectThenEstimate

    acc = PrivacyAccountant(epsilon=10.0)
    for est in (DPLogisticRegression(accountant=acc), SelectThenEstimate(accountant=acc)):
        est.set_params(random_state=random_state)
        X = np.ones((20, 2), dtype=int)
        with pytest.raises(ValueError, match="random_state must be.*Nothing was charged"):
            if isinstance(est, SelectThenEstimate):
                est.fit(X)
            else:
                est.fit(X.astype(float), np.arange(20) % 2)
    assert not acc.events
