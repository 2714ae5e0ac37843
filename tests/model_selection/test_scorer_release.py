"""A fitted scikit-learn search keeps its scorer: a dp_scorer must hold no generator that
drew the scores' noise (stepped back, it strips the noise from ``cv_results_``)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, KFold

from skhybrid.learners import DPLogisticRegression
from skhybrid.model_selection import dp_scorer
from skhybrid.model_selection._scorers import _DPScorer
from tests._rng_audit import find_generators

X, Y = make_classification(n_samples=300, n_features=4, random_state=0)


def _fitted_search(scorer):
    return GridSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.5, 1.0]},
                        cv=KFold(2, shuffle=True, random_state=0), scoring=scorer).fit(X, Y)


def test_fitted_search_with_a_fresh_entropy_dp_scorer_holds_no_generator():
    search = pickle.loads(pickle.dumps(_fitted_search(dp_scorer(epsilon=1.0))))
    assert find_generators(search, "search") == []
    scores = search.cv_results_["mean_test_score"]
    assert np.all((0 <= scores) & (scores <= 1)) and len(set(scores)) == 2


class _KeepingScorer(_DPScorer):
    """Mutant: draws the noise of every call from one generator it keeps (the old scorer)."""

    def __init__(self, *args):
        super().__init__(*args)
        self._rng = np.random.default_rng()


def test_the_audit_finds_a_kept_generator():
    search = _fitted_search(_KeepingScorer("accuracy", None, 1.0, None, None))
    assert "search.scorer_._rng" in find_generators(search, "search")


class _WarnsOnLargeRows(ClassifierMixin, BaseEstimator):
    """A fitted predictor whose predict warns on a row beyond 100 (as an encoder warns
    on an unseen category, or numpy on an overflow)."""

    def predict(self, X):
        if np.abs(np.asarray(X)).max() > 100:
            warnings.warn("a row beyond 100", UserWarning, stacklevel=2)
        return np.zeros(len(X), dtype=int)


def test_scoring_private_rows_shows_no_warning_of_theirs():
    # red team 4: PrivateSearchCV and dp_scorer predicted the private validation rows with
    # warnings on, so one unseen category in a private validation row printed a warning on
    # that data set only
    from skhybrid.model_selection._scorers import row_scores

    X = np.zeros((10, 2))
    X[3] = 1000.0
    with pytest.warns(UserWarning, match="beyond 100"):  # twin: predict alone tells
        _WarnsOnLargeRows().predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert row_scores(_WarnsOnLargeRows(), X, np.zeros(10), "accuracy", 1.0).sum() == 10
        dp_scorer(epsilon=1.0)(_WarnsOnLargeRows(), X, np.zeros(10))


def test_dp_scorer_never_reads_local_agents_rows():
    # red team 4: on a hybrid-model estimator dp_scorer scored the local agents' raw rows
    # at the curator (20 agents changing their label moved the score by 0.08)
    from skhybrid.hybrid import ParityThresholdClassifier

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, (4000, 4)), rng.integers(0, 64, 4000)])
    y = (X[:, :4] @ np.array([1, 0, 1, 1]) + (X[:, -1] >= 20)) % 2
    curator = np.arange(4000) < 2000
    model = ParityThresholdClassifier(threshold_bits=6, classes=[0, 1]).fit(
        X, y, curator_mask=curator)
    rows = np.r_[np.arange(1900, 2000), np.arange(2000, 2200)]  # 100 curator, 200 agents
    flipped = y.copy()
    flipped[2000:2100] = 1 - flipped[2000:2100]  # agents only
    with pytest.raises(ValueError, match="local agents that the curator must never read"):
        dp_scorer(epsilon=1.0)(model, X[rows], y[rows])
    scores = [dp_scorer(epsilon=1e6, random_state=0)(model, X[rows], labels[rows],
                                                     curator_mask=curator[rows])
              for labels in (y, flipped)]
    assert scores[0] == scores[1]  # the agents' labels are not read
    exact = np.mean(model.predict(X[1900:2000]) == y[1900:2000])
    assert scores[0] == pytest.approx(exact, abs=1e-3)  # the curator's rows are
    with pytest.raises(ValueError, match="no curator row"):
        dp_scorer(epsilon=1.0)(model, X[2000:2100], y[2000:2100],
                               curator_mask=curator[2000:2100])
