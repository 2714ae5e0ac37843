"""search_cost prices every candidate's refit: the dearest in ε need not be the dearest in δ."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from skhybrid import BudgetExceededError, DPLogisticRegression, PrivacyAccountant
from skhybrid.accounting import best_view, compose_events
from skhybrid.model_selection import dp_scorer, public_scorer, search_cost
from skhybrid.transfer import NoisySGDClassifier

X, Y = make_classification(n_samples=600, n_features=3, n_informative=2, n_redundant=0,
                           random_state=0)
CV = KFold(2, shuffle=True, random_state=0)


def _search(accountant=None, seed=0):
    pure = DPLogisticRegression(epsilon=1.0, classes=[0, 1], accountant=accountant,
                                random_state=seed)
    approx = NoisySGDClassifier(epsilon=0.99, delta=1e-3, classes=[0, 1],
                                accountant=accountant, random_state=seed)
    return GridSearchCV(Pipeline([("clf", pure)]), [{"clf": [pure]}, {"clf": [approx]}],
                        cv=CV, scoring=dp_scorer(epsilon=0.1, accountant=accountant,
                                                 random_state=seed))


def test_price_covers_either_refit():
    cost = search_cost(_search(), X, Y)
    assert len(cost.refit_options) == 2 and cost.n_fits == 5
    # folds 2 × (1.0 + 0.99) + scores 4 × 0.1, then a refit of (1.0, 0) or (0.99, 1e-3)
    eps, delta = cost.spent["central"]
    assert eps == pytest.approx(5.38) and delta == pytest.approx(0.003)
    charged = set()
    for seed in range(4):  # seeds 0-1 refit the approximate candidate, 2-3 the pure one
        acc = PrivacyAccountant()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fixed seeds, on purpose
            fitted = _search(acc, seed).fit(X, Y)
        charged.add(type(fitted.best_estimator_["clf"]).__name__)
        e, d = best_view(compose_events(list(acc.events)))[1]
        assert e <= eps * (1 + 1e-12) and d <= delta * (1 + 1e-12)
    assert charged == {"DPLogisticRegression", "NoisySGDClassifier"}


def test_precheck_refuses_a_budget_that_only_the_dearest_eps_refit_fits():
    # (5.38, 0.002) pays for the pure refit, not for the approximate one: refused up front
    with pytest.raises(BudgetExceededError, match="Nothing was charged"):
        search_cost(_search(), X, Y, accountant=PrivacyAccountant(epsilon=5.3801, delta=0.002))
    search_cost(_search(), X, Y, accountant=PrivacyAccountant(epsilon=5.3801, delta=0.0031))


def test_search_cost_lists_pipeline_steps_fitted_on_private_rows():
    # red team 4: GridSearchCV(make_pipeline(StandardScaler(), DPLogisticRegression)) was
    # priced with nothing uncovered, while best_estimator_[0].mean_ moves with a private row
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skhybrid.preprocessing import PublicFitTransformer

    X, y = make_classification(n_samples=200, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    public = np.arange(200) < 50
    cv = KFold(2, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        plain = GridSearchCV(make_pipeline(StandardScaler(), DPLogisticRegression(
            classes=[0, 1])), {"dplogisticregression__C": [0.1, 1.0]}, cv=cv,
            scoring=public_scorer())
        cost = search_cost(plain, X, y, public_mask=public)
        assert any("'standardscaler' (StandardScaler)" in item for item in cost.uncovered)
        # ... and a grid value that brings one in
        wrapped = GridSearchCV(make_pipeline(PublicFitTransformer(StandardScaler()),
                                             DPLogisticRegression(classes=[0, 1])),
                               {"publicfittransformer": [StandardScaler()]}, cv=cv,
                               scoring=public_scorer())
        cost = search_cost(wrapped, X, y, public_mask=public)
        assert any("'publicfittransformer' (StandardScaler)" in item for item in cost.uncovered)
        wrapped.set_params(param_grid={"dplogisticregression__C": [0.1, 1.0]})
        assert search_cost(wrapped, X, y, public_mask=public).uncovered == []


def test_search_cost_refuses_dp_scores_of_local_agents():
    from skhybrid.hybrid import ParityThresholdClassifier

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, (2000, 4)), rng.integers(0, 64, 2000)])
    y = X[:, 0]
    curator = np.arange(2000) < 1000
    search = GridSearchCV(ParityThresholdClassifier(threshold_bits=6, classes=[0, 1]),
                          {"alpha": [0.1]}, cv=KFold(2, shuffle=True, random_state=0),
                          scoring=dp_scorer(epsilon=1.0))
    with pytest.raises(ValueError, match="local agents included.*Nothing was charged"):
        search_cost(search, X, y, curator_mask=curator)  # routing off: no mask reaches it
    with sklearn.config_context(enable_metadata_routing=True):
        assert search_cost(search, X, y, curator_mask=curator).n_private_scores == 2
