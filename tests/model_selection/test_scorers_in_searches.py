"""The skhybrid scorers and search_cost inside scikit-learn's searches, as users write them
(red team round 2): the scores are charged where the fits are, a pandas mask is aligned,
a seed warns once, and search_cost prices what the search will fit or refuses."""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from scipy.stats import uniform
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV

from skhybrid import DPLogisticRegression, PrivacyAccountant, SeedReuseWarning
from skhybrid.model_selection import PrivateSearchCV, dp_scorer, public_scorer, search_cost

X, Y = make_classification(n_samples=600, n_features=4, random_state=0)
CV = KFold(3, shuffle=True, random_state=0)


def _grid(acc, scoring, **kw):
    return GridSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc, **kw),
                        {"C": [0.1, 1.0]}, cv=CV, scoring=scoring)


def test_dp_scorer_without_accountant_charges_the_estimators():
    acc = PrivacyAccountant(epsilon=20.0)
    search = _grid(acc, dp_scorer(epsilon=0.25))
    assert search_cost(search, X, Y).spent["central"] == pytest.approx((7 * 0.5 + 6 * 0.25, 0))
    search.fit(X, Y)
    # 6 fits and the refit at 0.5, and the 6 fold scores at 0.25: where search_cost said
    assert len(acc.events) == 13
    assert acc.spent() == pytest.approx((7 * 0.5 + 6 * 0.25, 0.0))


def test_dp_scorer_warns_when_the_estimator_holds_several_accountants():
    from sklearn.base import BaseEstimator, ClassifierMixin

    from skhybrid import PrivacyLeakWarning

    class _TwoLedgers(ClassifierMixin, BaseEstimator):
        def __init__(self, first=None, second=None):
            self.first, self.second = first, second

        def predict(self, X):
            return np.zeros(len(X), dtype=int)

    a, b = PrivacyAccountant(epsilon=20.0), PrivacyAccountant(epsilon=20.0)
    with pytest.warns(PrivacyLeakWarning, match="charged to none of them"):
        dp_scorer(epsilon=0.25)(_TwoLedgers(a, b), X, Y)
    assert a.events == [] and b.events == []


@pytest.mark.parametrize("make", [lambda acc: public_scorer(),
                                  lambda acc: dp_scorer(epsilon=0.1, accountant=acc)],
                         ids=["public", "dp"])
def test_scorers_align_a_series_mask_to_a_dataframe_fold(make):
    Xf = pd.DataFrame(X, index=np.arange(1000, 1000 + len(Y)))
    public = pd.Series(np.random.default_rng(0).random(len(Y)) < 0.3, index=Xf.index)
    acc = PrivacyAccountant(epsilon=20.0)
    with sklearn.config_context(enable_metadata_routing=True):
        est = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc)
        est.set_fit_request(public_mask=True)
        search = GridSearchCV(est, {"C": [0.1, 1.0]}, cv=CV, scoring=make(acc),
                              error_score="raise").fit(Xf, Y, public_mask=public)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_seed_reuse_warns_once_per_accountant_in_a_search():
    acc = PrivacyAccountant(epsilon=50.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        _grid(acc, dp_scorer(epsilon=0.1, random_state=0), random_state=0).fit(X, Y)
    seeds = [w for w in caught if issubclass(w.category, SeedReuseWarning)]
    # one for the estimator's seed, one for the scorer's: not one per fit and per score
    assert sorted(str(w.message).split(":")[0] for w in seeds) == [
        "DPLogisticRegression", "dp_scorer"]
    # a new accountant (another budget) is warned about again
    with pytest.warns(SeedReuseWarning):
        DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=0,
                             accountant=PrivacyAccountant(epsilon=5.0)).fit(X, Y)


def test_search_cost_refuses_a_randomized_search_it_cannot_reproduce():
    acc = PrivacyAccountant(epsilon=1e3)
    dists = {"epsilon": uniform(0.1, 2.0)}
    est = DPLogisticRegression(classes=[0, 1], accountant=acc)
    with pytest.raises(ValueError, match="random_state=None.*Pass an int random_state"):
        search_cost(RandomizedSearchCV(est, dists, n_iter=3, cv=CV,
                                       scoring=public_scorer()), X, Y)
    # a RandomState is priced on a copy: the search then fits exactly the priced candidates
    search = RandomizedSearchCV(est, dists, n_iter=3, cv=CV, refit=False,
                                scoring=dp_scorer(epsilon=0.1),
                                random_state=np.random.RandomState(4))
    cost = search_cost(search, X, Y)
    search.fit(X, Y)
    assert acc.spent()[0] == pytest.approx(cost.spent["central"][0])


def test_search_cost_edge_cases():
    acc = PrivacyAccountant(epsilon=1e3)
    est = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=acc)
    splits = CV.split(X)  # a generator: pricing would consume it
    with pytest.raises(ValueError, match="one-shot iterator"):
        search_cost(GridSearchCV(est, {"C": [1.0]}, cv=splits), X, Y)
    assert len(list(splits)) == 3  # untouched
    # multi-metric by names: each metric's fold scores are listed
    cost = search_cost(GridSearchCV(est, {"C": [1.0]}, cv=CV, scoring=["accuracy", "f1"],
                                    refit="accuracy"), X, Y)
    assert sum("3 fold scores by accuracy" in u or "3 fold scores by f1" in u
               for u in cost.uncovered) == 2
    # a label set read from private labels is a release no charge covers
    unlabelled = DPLogisticRegression(epsilon=0.5, accountant=acc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cost = search_cost(GridSearchCV(unlabelled, {"C": [1.0]}, cv=CV,
                                        scoring=public_scorer()), X, Y)
    assert sum("label set is read from private labels" in u for u in cost.uncovered) == 1
    assert not caught  # listed once, not warned once per probe
    # PrivateSearchCV: one charge covers it all
    text = str(search_cost(PrivateSearchCV(est, {"C": [0.1, 1.0]}, epsilon=1.0), X, Y))
    assert "one charge covering every run, its scores and the refit" in text


def test_a_refused_run_says_nothing_was_charged_once():
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"tol": [1e-19]},
                             epsilon=1.0, accountant=PrivacyAccountant(epsilon=2.0))
    with pytest.raises(ValueError, match="tol=1e-19 is below") as info:
        search.fit(X, Y)
    assert str(info.value).count("Nothing was charged") == 1


@pytest.mark.parametrize("n_jobs", [0, 1.5, True])
def test_private_search_refuses_a_bad_n_jobs_before_the_charge(n_jobs):
    acc = PrivacyAccountant(epsilon=2.0)
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0]},
                             epsilon=1.0, accountant=acc, n_jobs=n_jobs)
    with pytest.raises(ValueError, match="n_jobs must be None or a nonzero integer"):
        search.fit(X, Y)
    assert acc.events == []


@pytest.mark.parametrize("scoring", ["public", "dp"])
def test_search_cost_routes_the_mask_to_the_scorer_only(scoring):
    # User round 19: with routing on, a mask meant for the scorer reached a mask-less
    # estimator's fit in search_cost (TypeError), while the search itself ran. The price
    # must be what the search then spends.
    from skhybrid.transfer import NoisySGDClassifier

    public = np.random.default_rng(0).random(len(Y)) < 0.2
    with sklearn.config_context(enable_metadata_routing=True):
        acc = PrivacyAccountant(epsilon=20.0, delta=1e-3)
        scorer = public_scorer() if scoring == "public" else dp_scorer(epsilon=0.1,
                                                                        accountant=acc)
        search = GridSearchCV(NoisySGDClassifier(epsilon=0.5, classes=[0, 1], n_steps=200,
                                                 accountant=acc, random_state=0),
                              {"radius": [1.0, 10.0]}, cv=CV, scoring=scorer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeedReuseWarning)
            cost = search_cost(search, X, Y, public_mask=public, accountant=acc)
            search.fit(X, Y, public_mask=public)
    assert cost.spent["central"] == pytest.approx(acc.spent("central"))
    assert cost.n_private_scores == (6 if scoring == "dp" else 0)
