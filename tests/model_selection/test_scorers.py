"""public_scorer / dp_scorer in scikit-learn's own searches, and search_cost's price."""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid import DPLogisticRegression, PrivacyAccountant
from skhybrid.model_selection import PrivateSearchCV, dp_scorer, public_scorer, search_cost


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1200, 3))
    y = (X[:, 0] - X[:, 2] + 0.5 * rng.normal(size=1200) > 0).astype(int)
    public = np.zeros(1200, dtype=bool)
    public[rng.permutation(1200)[:300]] = True
    return X, y, public


CV = KFold(3, shuffle=True, random_state=0)


def test_public_scorer_scores_public_rows_only_and_charges_nothing_more(data):
    X, y, public = data
    acc = PrivacyAccountant(epsilon=10.0)
    est = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc)
    with sklearn.config_context(enable_metadata_routing=True):
        res = cross_validate(est, X, y, cv=CV, scoring=public_scorer(),
                             params={"public_mask": public}, return_estimator=True)
    assert acc.spent()[0] == pytest.approx(3 * 0.5)  # the three fits, not the scores
    for (_, test), model, score in zip(CV.split(X), res["estimator"], res["test_score"]):
        rows = test[public[test]]
        assert score == pytest.approx(model.score(X[rows], y[rows]))


def test_public_scorer_refuses_without_routing_or_public_rows(data):
    X, y, public = data
    scorer = public_scorer()
    model = DPLogisticRegression(epsilon=np.inf, classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        scorer(model, X, y)
    with pytest.raises(ValueError, match="no public row"):
        scorer(model, X, y, public_mask=np.zeros(len(y), dtype=bool))


def test_dp_scorer_charges_each_call_and_adds_noise_to_private_rows_only(data):
    X, y, public = data
    model = DPLogisticRegression(epsilon=np.inf, classes=[0, 1]).fit(X, y)
    acc = PrivacyAccountant(epsilon=1000.0)
    scorer = dp_scorer(epsilon=1.0, accountant=acc, random_state=np.random.default_rng(0))
    noisy = [scorer(model, X, y, public_mask=public) for _ in range(200)]
    assert len(acc.events) == 200 and acc.events[0].kind == "pure"
    exact = model.score(X, y)
    # Laplace(1) noise on the private count of 900 rows: std of the score sqrt(2)/1200
    assert abs(np.mean(noisy) - exact) < 4 * np.sqrt(2) / 1200 / np.sqrt(200) * 3
    assert np.std(noisy) == pytest.approx(np.sqrt(2) / 1200, rel=0.25)
    # all rows public: exact and free
    assert scorer(model, X, y, public_mask=np.ones(len(y), dtype=bool)) == pytest.approx(exact)
    assert len(acc.events) == 200


def test_search_cost_prices_a_grid_search_exactly(data):
    X, y, public = data
    acc = PrivacyAccountant(epsilon=100.0)
    est = DPLogisticRegression(epsilon=0.25, classes=[0, 1], accountant=acc)
    search = GridSearchCV(est, {"C": [0.1, 1.0]}, cv=CV,
                          scoring=dp_scorer(epsilon=0.1, accountant=acc))
    cost = search_cost(search, X, y, public_mask=public)
    assert cost.n_fits == 2 * 3 + 1 and cost.n_private_scores == 6
    assert cost.uncovered == []
    assert cost.spent["central"] == pytest.approx((7 * 0.25 + 6 * 0.1, 0.0))
    with sklearn.config_context(enable_metadata_routing=True):
        search.fit(X, y, public_mask=public)
    assert acc.spent() == pytest.approx(cost.spent["central"])
    assert "this search costs (epsilon=2.35" in str(cost)


def test_search_cost_lists_what_a_naive_search_leaves_uncovered(data):
    X, y, _ = data
    naive = GridSearchCV(DPLogisticRegression(epsilon=0.1, classes=[0, 1]), {"C": [0.1, 1.0]},
                         cv=3)
    cost = search_cost(naive, X, y)
    assert cost.spent["central"] == pytest.approx((7 * 0.1, 0.0))
    assert any("StratifiedKFold" in u for u in cost.uncovered)
    assert any("in the clear" in u for u in cost.uncovered)


def test_search_cost_of_a_private_search_is_its_budget(data):
    X, y, _ = data
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [1.0]},
                             epsilon=0.6, delta=0.0)
    assert search_cost(search, X, y).spent["central"] == pytest.approx((0.6, 0.0))


def test_dp_scorer_rejects_bad_parameters():
    with pytest.raises(ValueError, match="epsilon"):
        dp_scorer(epsilon=0)
    with pytest.raises(ValueError, match="score_bound"):
        dp_scorer("neg_mean_absolute_error", epsilon=1.0)
    with pytest.raises(ValueError, match="metric must be one of"):
        public_scorer("f1")
