"""A huge but finite private row is clipped like any other, silently.

Red team 3: a private row of norm beyond ~1.3e154 overflowed when its norm was squared, so
numpy printed ``RuntimeWarning: overflow`` on that data set and not on its neighbour (a bit
outside the guarantee), and the row was zeroed instead of clipped.
"""

import warnings

import numpy as np
import pytest

from skhybrid import PrivacyAccountant
from skhybrid.adaptation import DiscrepancyAdaptationRegressor
from skhybrid.adaptation._discrepancy import clip_rows as adaptation_clip_rows
from skhybrid.learners import DPLogisticRegression
from skhybrid.learners._objective_perturbation import clip_rows as op_clip_rows
from skhybrid.transfer import NoisySGDClassifier
from skhybrid.transfer._sgd import clipped_gradients
from skhybrid.utils._rows import clip_scale, row_norms

HUGE = [1e155, -1e300, np.finfo(float).max / 2]

rng = np.random.default_rng(0)
X = rng.normal(size=(300, 3))
Y_CLASS = (X[:, 0] > 0).astype(int)
PUBLIC = np.arange(300) < 60
Y_REG = np.where(PUBLIC, X @ [0.3, -0.2, 0.1], np.nan)

ESTIMATORS = {
    "NoisySGDClassifier": (lambda acc: NoisySGDClassifier(
        classes=[0, 1], delta=1e-5, n_steps=300, accountant=acc, random_state=0), Y_CLASS, {}),
    "NoisySGDClassifier logistic": (lambda acc: NoisySGDClassifier(
        loss="logistic", classes=[0, 1], delta=1e-5, n_steps=300, accountant=acc,
        random_state=0), Y_CLASS, {}),
    "DPLogisticRegression": (lambda acc: DPLogisticRegression(
        classes=[0, 1], accountant=acc, random_state=0), Y_CLASS, {}),
    "adaptation noisy-moments": (lambda acc: DiscrepancyAdaptationRegressor(
        solver="noisy-moments", accountant=acc, random_state=0), Y_REG,
        {"public_mask": PUBLIC}),
    "adaptation two-stage-md": (lambda acc: DiscrepancyAdaptationRegressor(
        solver="two-stage-md", max_iter=5, accountant=acc, random_state=0), Y_REG,
        {"public_mask": PUBLIC}),
}


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_huge_private_row_changes_no_warning_and_no_charge(name):
    # mixed signs: x·θ could be inf − inf
    _assert_silent_and_equally_charged(*ESTIMATORS[name],
                                       [None] + [[v, -v, 0.0] for v in HUGE])


def _assert_silent_and_equally_charged(make, y, fit_params, rows):
    """Fit with row 200 replaced by each of ``rows`` (None: unchanged) under warnings as
    errors: every fit succeeds with a finite model and the same charge."""
    charges = []
    for row in rows:
        Z = X.copy()
        if row is not None:
            Z[200] = row
        acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.simplefilter("ignore", category=__import__("skhybrid").SeedReuseWarning)
            est = make(acc).fit(Z, y, **fit_params)
        assert np.all(np.isfinite(est.coef_))
        charges.append(acc.spent("central"))
    assert all(c == charges[0] for c in charges)


def test_huge_rows_are_clipped_onto_the_ball_not_zeroed():
    Z = np.array([[v, v, 0.0] for v in HUGE] + [[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = row_norms(Z)
        np.testing.assert_allclose(norms[:3], np.abs(HUGE) * np.sqrt(2))
        assert norms[3] == 5.0 and norms[4] == 0.0
        for clipped in (adaptation_clip_rows(Z, 2.0), op_clip_rows(Z, 2.0)):
            np.testing.assert_allclose(np.linalg.norm(clipped, axis=1), [2, 2, 2, 2, 0])
        g = clipped_gradients(np.zeros(3), Z, np.ones(5), lipschitz=1.0)  # margin 0 < 1
        np.testing.assert_allclose(np.linalg.norm(g, axis=1), [1, 1, 1, 1, 0])
        W = Z * [1.0, -1.0, 1.0]  # x·θ = inf − inf on the huge rows
        g = clipped_gradients(np.ones(3), W, np.ones(5), lipschitz=1.0, loss="logistic")
        assert np.all(np.isfinite(g))
    # twin: the plain norm overflows, with a warning, on the first rows
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert np.isinf(np.linalg.norm(Z, axis=1)[:3]).all()


# Red team 13: the other end. A zero (or subnormal) private row with a clipping radius
# >= 4 made radius / tiny overflow in the clipping factor: a warning on that data set only.
TINY = [0.0, 5e-324]
RADIUS = 5.0
BIG_RADIUS = {
    "NoisySGDClassifier": (lambda acc: NoisySGDClassifier(
        classes=[0, 1], delta=1e-5, n_steps=300, lipschitz=RADIUS, fit_intercept=False,
        accountant=acc, random_state=0), Y_CLASS, {}),
    "DPLogisticRegression": (lambda acc: DPLogisticRegression(
        classes=[0, 1], data_norm=RADIUS, accountant=acc, random_state=0), Y_CLASS, {}),
    "adaptation noisy-moments": (lambda acc: DiscrepancyAdaptationRegressor(
        solver="noisy-moments", data_norm=RADIUS, accountant=acc, random_state=0), Y_REG,
        {"public_mask": PUBLIC}),
}


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
@pytest.mark.parametrize("name", BIG_RADIUS)
def test_a_zero_or_subnormal_private_row_changes_no_warning_and_no_charge(name):
    # (the adaptation learner centres target rows by the public source mean)
    base = X[PUBLIC].mean(axis=0) if "adaptation" in name else 0.0
    _assert_silent_and_equally_charged(*BIG_RADIUS[name], [None] + [base + v for v in TINY])


def test_clip_scale_keeps_small_rows_and_clips_large_ones_silently():
    norms = np.array([0.0, 5e-324, 1.0, 4.999, 5.0, 10.0, np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = clip_scale(norms, RADIUS)
    np.testing.assert_array_equal(got, [1, 1, 1, 1, 1, 0.5, 0])
    # twin: the previous form overflows on the zero and subnormal rows
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.minimum(1.0, RADIUS / np.maximum(norms, np.finfo(float).tiny))


def _str_data():
    from skhybrid.datasets import make_shifted_gaussians
    from skhybrid.transfer._sample_complexity import str_min_curator_size

    n_c = str_min_curator_size(1.0, 1e-5, 4, 0.2, 20) + 10
    X, y, curator, _, _ = make_shifted_gaussians(n_c, 400, n_features=5, n_shifted=3,
                                                 target_scale=0.02, minority=0.05,
                                                 random_state=0)
    return X, y, curator


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
@pytest.mark.parametrize("base", ["DPLogisticRegression", "NoisySGDClassifier"])
def test_str_predicts_on_a_huge_curator_or_agent_row_silently(base):
    # Red team 13: the MW update predicts on every curator row and the round test on the
    # agents' rows; a decision value past float64's range made numpy warn on that data set.
    from skhybrid.transfer import SubsampleTestReweigh

    X, y, curator = _str_data()
    learner = (DPLogisticRegression(data_norm=4.0) if base == "DPLogisticRegression"
               else NoisySGDClassifier(n_steps=200))
    # (one curator row: every round's update predicts on all of them; every agent row, so
    # that the first round's test batch holds one)
    rows = {"curator": np.flatnonzero(curator)[0], "agent": np.flatnonzero(~curator)}
    charges = []
    huge = np.finfo(float).max
    for who, value in [(None, None), ("curator", huge), ("agent", -huge)]:
        Z = X.copy()
        if who is not None:
            Z[rows[who]] = value
        acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
        with warnings.catch_warnings():
            # (the parameters' own warnings, e.g. too few agents per round, are public)
            warnings.simplefilter("error", RuntimeWarning)
            model = SubsampleTestReweigh(learner, epsilon=1.0, delta=1e-5, alpha=0.01, max_iter=4,
                                 kappa=0.2, subsample_size=20, local_batch_size=50,
                                 classes=[-1, 1], accountant=acc,
                                 random_state=7).fit(Z, y, curator_mask=curator)
        assert who == "agent" or len(model.target_error_estimates_) > 1  # (an update ran)
        charges.append((acc.spent("central"), acc.spent("local")))
    assert charges[0] == charges[1] == charges[2]


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
def test_ppm_scores_a_private_row_near_the_largest_float_silently():
    # Red team 13 follow-up: the candidates' membership W·x of a private row overflowed
    from skhybrid.ppm import PPMHalfspaceClassifier

    gen = np.random.default_rng(0)
    Z0 = gen.uniform(-1, 1, size=(400, 2))
    y = (np.linalg.norm(Z0, axis=1) > 0.6).astype(int)
    public = y == 0
    row = np.flatnonzero(~public)[0]
    huge = np.finfo(float).max
    charges = []
    for value in [None, [huge, huge], [huge, -huge]]:
        Z = Z0.copy()
        if value is not None:
            Z[row] = value
        acc = PrivacyAccountant(epsilon=10.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            PPMHalfspaceClassifier(epsilon=1.0, private_class=1, accountant=acc,
                                   random_state=0).fit(Z, y, public_mask=public)
        charges.append(acc.spent())
    assert charges[0] == charges[1] == charges[2]


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_user_np_seterr_does_not_report_a_private_rows_underflow(name):
    # Red team 15: the library relied on numpy's default error state; under the user's
    # np.seterr(all="raise") a private row of 1e-200 raised after the charge (and "warn",
    # "call", "print" reported it) on that data set only
    make, y, fit_params = ESTIMATORS[name]
    charges = []
    for value in [None, 1e-200]:
        Z = X.copy()
        if value is not None:
            Z[200] = value
        acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
        with np.errstate(all="raise"):
            make(acc).fit(Z, y, **fit_params)
        charges.append(acc.spent("central"))
    assert charges[0] == charges[1]


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
def test_a_user_np_seterr_mutation_twin_the_unpinned_fit_raises_after_the_charge():
    Z = X.copy()
    Z[200] = 1e-200
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    est = DPLogisticRegression(classes=[0, 1], accountant=acc, random_state=0)
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        type(est).fit.__wrapped__(est, Z, Y_CLASS)  # the fit without its pin
    assert acc.spent("central")[0] > 0


@pytest.mark.filterwarnings("ignore::skhybrid.SeedReuseWarning")
def test_a_user_np_seterr_does_not_reach_a_private_search():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from skhybrid.model_selection import PrivateSearchCV

    Z = X.copy()
    Z[7] = 1e-200  # np.square underflows it in every probe and run
    pipe = make_pipeline(FunctionTransformer(np.square),
                         DPLogisticRegression(classes=[0, 1], data_norm=3.0))
    with np.errstate(all="raise"):
        search = PrivateSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=2.0,
                                 random_state=0).fit(Z, Y_CLASS)
    assert np.isfinite(search.best_score_)
