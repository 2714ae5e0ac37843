"""A search charges one shared accountant for every fit, in one process or several."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from skhybrid.accounting import DetachedLedgerError, PrivacyAccountant
from skhybrid.learners import DPLogisticRegression


def _search(accountant, n_jobs, error_score=np.nan):
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    clf = DPLogisticRegression(epsilon=0.5, accountant=accountant, random_state=0)
    search = GridSearchCV(clf, {"C": [0.1, 1.0]}, cv=3, n_jobs=n_jobs, error_score=error_score)
    return search.fit(X, y)


def test_clone_keeps_the_same_accountant():
    acc = PrivacyAccountant(epsilon=10.0)
    clf = DPLogisticRegression(accountant=acc)
    assert clone(clf).accountant is acc


def test_grid_search_charges_every_fit_serially():
    acc = PrivacyAccountant(epsilon=10.0)
    _search(acc, n_jobs=1)
    assert len(acc.events) == 7  # 3 folds x 2 candidates + the refit
    assert acc.spent("central") == pytest.approx((3.5, 0.0))


def test_grid_search_charges_every_fit_across_processes(tmp_path):
    acc = PrivacyAccountant(epsilon=10.0, ledger=tmp_path / "budget.sqlite")
    _search(acc, n_jobs=2)
    assert len(acc.events) == 7
    assert acc.spent("central") == pytest.approx((3.5, 0.0))
    # a second accountant on the same file sees the same ledger
    assert len(PrivacyAccountant(ledger=tmp_path / "budget.sqlite").events) == 7


def test_in_memory_accountant_refuses_in_worker_processes():
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(DetachedLedgerError, match="ledger='budget.sqlite'"):
        _search(acc, n_jobs=2, error_score="raise")
    assert acc.events == []


def test_budget_exceeded_mid_search_stops_it():
    from skhybrid.accounting import BudgetExceededError

    acc = PrivacyAccountant(epsilon=1.2)
    with pytest.raises(BudgetExceededError):
        _search(acc, n_jobs=1, error_score="raise")
    assert len(acc.events) == 2


def test_unpickled_memory_accountant_is_detached():
    acc = PrivacyAccountant(epsilon=10.0)
    copy = pickle.loads(pickle.dumps(acc))
    X, y = make_classification(n_samples=50, n_features=4, random_state=0)
    with pytest.raises(DetachedLedgerError):
        DPLogisticRegression(accountant=copy, random_state=0).fit(X, y)


def test_fitted_estimator_pickles_and_predicts_the_same():
    X, y = make_classification(n_samples=80, n_features=4, random_state=1)
    clf = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))
    assert again.privacy_spent_ == clf.privacy_spent_
