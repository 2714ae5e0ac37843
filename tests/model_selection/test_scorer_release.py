"""A fitted scikit-learn search keeps its scorer: a dp_scorer must hold no generator that
drew the scores' noise (stepped back, it strips the noise from ``cv_results_``)."""

import pickle

import numpy as np
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
