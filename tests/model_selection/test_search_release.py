"""What PrivateSearchCV releases beyond its documented attributes: no noise generator,
no trace of the hidden number of runs, no plain transformer fitted on private rows."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from skhybrid import DPLogisticRegression
from skhybrid.model_selection import PrivateSearchCV
from skhybrid.model_selection import _search as search_module

_RANDOM = (np.random.Generator, np.random.RandomState, np.random.BitGenerator,
           np.random.SeedSequence)


def _find_random(obj, path="search", seen=None):
    """Paths to every generator, RandomState, BitGenerator or SeedSequence reachable from
    ``obj``: parameters and fitted attributes of estimators, containers, object arrays and
    other objects' ``__dict__``, recursively."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, complex, type(None))):
        return []
    seen.add(id(obj))
    if isinstance(obj, _RANDOM):
        return [f"{path}: {type(obj).__name__}"]
    found = []
    if isinstance(obj, BaseEstimator):
        for key, value in obj.get_params(deep=False).items():
            found += _find_random(value, f"{path}.get_params()[{key!r}]", seen)
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = enumerate(obj)
    elif isinstance(obj, np.ndarray):
        items = enumerate(obj.ravel()) if obj.dtype == object else ()
    elif hasattr(obj, "__dict__") and not callable(obj):
        items = vars(obj).items()
    else:
        items = ()
    for key, value in items:
        found += _find_random(value, f"{path}[{key!r}]", seen)
    return found


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=400, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)


def _fit(estimator, grid, data, random_state):
    return PrivateSearchCV(estimator, grid, epsilon=1.0,
                           random_state=random_state).fit(*data)


@pytest.mark.parametrize("random_state", [None, 0, 1])
@pytest.mark.parametrize("pipeline", [False, True])
def test_nothing_released_holds_a_noise_generator(data, random_state, pipeline):
    estimator = DPLogisticRegression(classes=[0, 1], random_state=7)
    grid = {"C": [0.1, 1, 10]}
    if pipeline:  # the walk reaches into a Pipeline's steps and their fitted attributes
        estimator = make_pipeline(Normalizer(), estimator)
        grid = {"dplogisticregression__C": [0.1, 1, 10]}
    search = _fit(estimator, grid, data, random_state)
    assert _find_random(search) == []
    # The released model's random_state is the template's, as clone gives it.
    assert search.best_estimator_.get_params()[next(
        k for k in search.best_estimator_.get_params() if k.endswith("random_state"))] == 7


def test_the_walk_finds_a_planted_generator(data):
    # The audit above is only as good as its walk: a generator anywhere it should look
    # (a parameter, a nested fitted attribute, a cv_results_ entry) is found.
    search = _fit(make_pipeline(Normalizer(), DPLogisticRegression(classes=[0, 1])),
                  {"dplogisticregression__C": [0.1, 1]}, data, None)
    search.best_estimator_[-1].set_params(random_state=np.random.default_rng())
    search.best_estimator_[0].planted_ = {"state": [np.random.PCG64()]}
    search.cv_results_["params"][0]["extra"] = np.random.RandomState(0)
    found = _find_random(search)
    assert len(found) == 3
    assert any("random_state" in f and "Generator" in f for f in found)
    assert any("planted_" in f and "PCG64" in f for f in found)
    # (best_params_ is the same dict as cv_results_'s row: found once, by either path.)
    assert any("params" in f and "RandomState" in f for f in found)


def test_mutation_twin_keeping_the_run_generator_is_found(data, monkeypatch):
    # The old behaviour (the selected run's model keeps the generator that drew its noise)
    # must fail the audit.
    monkeypatch.setattr(search_module, "_released", lambda est, restore: est)
    search = _fit(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1, 10]}, data, None)
    found = _find_random(search)
    assert found == ["search['best_estimator_'].get_params()['random_state']: Generator"]
