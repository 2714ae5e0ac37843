"""A seed or a generator as ``random_state`` under a finite budget warns: the fitted
estimator keeps it, and a generator's state can be stepped back to replay the noise."""

import warnings

import numpy as np
import pytest

from skhybrid import SeedReuseWarning
from skhybrid.accounting import PrivacyAccountant
from skhybrid.hybrid import SelectThenEstimate
from skhybrid.learners import DPLogisticRegression
from skhybrid.transfer import NoisySGDClassifier

X = np.random.default_rng(0).normal(size=(80, 3))
Y = (X[:, 0] > 0).astype(int)

FITS = {
    "dplr": lambda rs, acc: DPLogisticRegression(
        epsilon=0.5, classes=[0, 1], random_state=rs, accountant=acc).fit(X, Y),
    "sgd": lambda rs, acc: NoisySGDClassifier(
        n_steps=50, classes=[0, 1], random_state=rs, accountant=acc).fit(X, Y),
    "select": lambda rs, acc: SelectThenEstimate(random_state=rs, accountant=acc).fit(
        np.where(X > 0, 1, -1), curator_mask=np.arange(80) < 40),
}


@pytest.mark.parametrize("fit", FITS.values(), ids=FITS.keys())
@pytest.mark.parametrize("random_state", [
    3, np.random.RandomState(3), np.random.default_rng(3), np.random.default_rng()],
    ids=["int", "RandomState", "seeded-Generator", "entropy-Generator"])
def test_seed_or_generator_under_a_finite_budget_warns(fit, random_state):
    with pytest.warns(SeedReuseWarning, match=r"(?s)fixes the privacy noise.*get_params"):
        est = fit(random_state, PrivacyAccountant(epsilon=10.0, delta=1e-3))
    # the reason: the released estimator holds the very object that drew its noise
    assert est.get_params()["random_state"] is random_state


@pytest.mark.parametrize("fit", FITS.values(), ids=FITS.keys())
def test_fresh_entropy_or_no_budget_is_quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedReuseWarning)
        fit(None, PrivacyAccountant(epsilon=10.0, delta=1e-3))
        for seed in (3, np.random.default_rng(3)):
            fit(seed, None)  # nothing tracked: tests and reproductions
            fit(seed, PrivacyAccountant())  # an unlimited budget



@pytest.mark.parametrize("random_state", [0, np.random.default_rng()], ids=["int", "Generator"])
def test_private_search_with_a_seed_or_generator_under_a_finite_budget_warns(random_state):
    from skhybrid.model_selection import PrivateSearchCV

    rng = np.random.default_rng(1)
    Xs = rng.normal(size=(1500, 3))
    ys = (Xs[:, 0] > 0).astype(int)
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0]},
                             epsilon=1.0, accountant=PrivacyAccountant(epsilon=2.0),
                             random_state=random_state)
    with pytest.warns(SeedReuseWarning, match=r"(?s)The search keeps it.*stepped back"):
        search.fit(Xs, ys)
