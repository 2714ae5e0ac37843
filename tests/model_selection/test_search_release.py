"""What PrivateSearchCV releases beyond its documented attributes: no noise generator,
no trace of the hidden number of runs, no private value in a message, no plain
transformer fitted on private rows."""

import contextlib
import io
import re
import warnings

import numpy as np
import pytest
import sklearn
from joblib import parallel_config
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler, scale

from skhybrid import DPLogisticRegression, PrivacyAccountant
from skhybrid._validation import check_generator
from skhybrid.exceptions import DegenerateModelWarning, PrivacyLeakWarning
from skhybrid.learners import PrivateParityClassifier
from skhybrid.model_selection import PrivateSearchCV, search_cost
from skhybrid.model_selection import _search as search_module
from skhybrid.model_selection._selection import draw_number_of_runs
from skhybrid.ppm import PPMHalfspaceClassifier
from skhybrid.preprocessing import PublicFitTransformer

from .._rng_audit import find_generators

@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=400, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)


def _fit(estimator, grid, data, random_state):
    return PrivateSearchCV(estimator, grid, epsilon=1.0,
                           random_state=random_state).fit(*data)


# None (fresh entropy) is what releases use; the property holds for every draw.
@pytest.mark.parametrize("random_state", [None, 0, 1])
@pytest.mark.parametrize("pipeline", [False, True])
def test_nothing_released_holds_a_noise_generator(data, random_state, pipeline):
    estimator = DPLogisticRegression(classes=[0, 1], random_state=7)
    grid = {"C": [0.1, 1, 10]}
    if pipeline:  # the walk reaches into a Pipeline's steps and their fitted attributes
        estimator = make_pipeline(Normalizer(), estimator)
        grid = {"dplogisticregression__C": [0.1, 1, 10]}
    search = _fit(estimator, grid, data, random_state)
    assert find_generators(search, "search") == []
    # The released model's random_state is the template's, as clone gives it.
    assert search.best_estimator_.get_params()[next(
        k for k in search.best_estimator_.get_params() if k.endswith("random_state"))] == 7


@pytest.mark.parametrize("name", ["PPMHalfspaceClassifier", "PrivateParityClassifier"])
def test_no_tunable_estimator_releases_a_noise_generator(name):
    rng = np.random.default_rng(0)
    if name == "PPMHalfspaceClassifier":
        X = rng.normal(size=(600, 2))
        y, fit_params = (X[:, 0] > 0).astype(int), {"public_mask": np.arange(600) < 300}
        estimator = PPMHalfspaceClassifier(candidates="hull", classes=[0, 1])
        grid = {"n_directions": [4, 8]}
    else:
        X = rng.integers(0, 2, (600, 8))
        y, fit_params = X[:, 0] ^ X[:, 3], {}
        estimator, grid = PrivateParityClassifier(classes=[0, 1]), {"n_chunks": [1, 2]}
    search = PrivateSearchCV(estimator, grid, epsilon=1.0,
                             random_state=0).fit(X, y, **fit_params)
    assert find_generators(search, "search") == []


def test_the_walk_finds_a_planted_generator(data):
    # The audit above is only as good as its walk: a generator anywhere it should look
    # (a parameter, a nested fitted attribute, a cv_results_ entry) is found.
    search = _fit(make_pipeline(Normalizer(), DPLogisticRegression(classes=[0, 1])),
                  {"dplogisticregression__C": [0.1, 1]}, data, 0)
    search.best_estimator_[-1].set_params(random_state=np.random.default_rng())
    search.best_estimator_[0].planted_ = {"state": [np.random.PCG64()]}
    search.cv_results_["params"][0]["extra"] = np.random.RandomState(0)
    found = find_generators(search, "search")
    assert len(found) == 3
    assert any(f.endswith("random_state") for f in found)
    assert any("planted_" in f for f in found)
    # (best_params_ is the same dict as cv_results_'s row: found once, by either path.)
    assert any("['extra']" in f for f in found)


def test_mutation_twin_keeping_the_run_generator_is_found(data, monkeypatch):
    # The old behaviour (the selected run's model keeps the generator that drew its noise)
    # must fail the audit.
    monkeypatch.setattr(search_module, "_released", lambda est, restore: est)
    search = _fit(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1, 10]}, data, 0)
    found = find_generators(search, "search")
    assert found == ["search.best_estimator_.random_state"]


# ---------------------------------------------------------------- K stays hidden (F2)
def _seeds_with_different_k(m, n_seeds=20):
    """Two seeds whose searches draw the fewest and the most runs (K is the search's first
    draw from its generator)."""
    k = {seed: draw_number_of_runs(check_generator(seed), m) for seed in range(n_seeds)}
    low, high = min(k, key=k.get), max(k, key=k.get)
    assert k[low] < k[high]
    return (low, k[low]), (high, k[high])


def _observed(estimator, grid, X, y, seed):
    """What a user sees of a search besides its attributes: stdout and every warning."""
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        search = PrivateSearchCV(estimator, grid, epsilon=1.0, random_state=seed).fit(X, y)
    return search, out.getvalue(), [(w.category, str(w.message)) for w in caught]


def _old_behaviour(monkeypatch):
    """The mutation twin: runs keep the user's verbose and their warnings escape."""
    @contextlib.contextmanager
    def passthrough():
        yield []

    monkeypatch.setattr(search_module, "_quiet", lambda params: {})
    monkeypatch.setattr(search_module, "_recording", passthrough)


def _verbose_search_outputs(data):
    # No classes=: every fit (and every probe) warns that the label set is read from
    # private rows, identically, so the number of those warnings could count the runs.
    (low, k_low), (high, k_high) = _seeds_with_different_k(6)
    return [(k,) + _observed(DPLogisticRegression(verbose=1), {"C": [0.1, 1, 10]}, *data,
                             seed) for seed, k in ((low, k_low), (high, k_high))]


def test_output_and_warnings_do_not_depend_on_the_hidden_number_of_runs(data):
    (_, a, out_a, warn_a), (_, b, out_b, warn_b) = _verbose_search_outputs(data)
    assert out_a == out_b == ""
    assert warn_a == warn_b
    assert [c for c, _ in warn_a] == [PrivacyLeakWarning]  # the selected run's, once
    # The released model has the template's verbose back.
    assert a.best_estimator_.verbose == b.best_estimator_.verbose == 1


def test_mutation_twin_printing_and_warning_per_run_shows_k(data, monkeypatch):
    _old_behaviour(monkeypatch)
    outputs = _verbose_search_outputs(data)
    for k, _, out, caught in outputs:
        assert out.count("[DPLogisticRegression]") == k
        assert len(caught) > k
    assert outputs[0][2] != outputs[1][2] and outputs[0][3] != outputs[1][3]


def _searched_under_joblib_verbosity(data, capsys, make=None, grid=None, **config):
    """stdout + stderr of the searches of ``_seeds_with_different_k`` while the caller's
    joblib configuration asks every Parallel for progress lines."""
    joblib = pytest.importorskip("joblib")
    X, y = data
    public = np.arange(len(y)) % 3 == 0
    printed = []
    for seed, k in _seeds_with_different_k(6):
        estimator = make() if make else DPLogisticRegression(classes=[0, 1])
        with joblib.parallel_config(verbose=50, **config):
            PrivateSearchCV(estimator, grid or {"C": [0.1, 1, 10]}, epsilon=1.0,
                            random_state=seed).fit(X, y, public_mask=public)
        out = capsys.readouterr()
        printed.append((k, out.out + out.err))
    return printed


# PPM's fit runs a Parallel of its own when n_jobs > 1: inside a run it must stay silent.
_PPM = (lambda: PPMHalfspaceClassifier(n_jobs=2), {"n_directions": [8, 16]})


@pytest.mark.parametrize("config", [{}, {"n_jobs": 2, "backend": "threading"}])
@pytest.mark.parametrize("ppm", [False, True])
def test_joblib_verbosity_set_by_the_caller_does_not_print_k(data, capsys, config, ppm):
    make, grid = _PPM if ppm else (None, None)
    for _, text in _searched_under_joblib_verbosity(data, capsys, make, grid, **config):
        assert text == ""


def test_mutation_twin_parallel_taking_the_callers_verbosity_prints_k(data, capsys,
                                                                     monkeypatch):
    real = search_module.Parallel
    monkeypatch.setattr(search_module, "Parallel",
                        lambda *args, verbose=None, **kwargs: real(*args, **kwargs))
    monkeypatch.setattr(search_module, "_silent_joblib", contextlib.nullcontext)
    for k, text in _searched_under_joblib_verbosity(data, capsys):
        assert f"Done {k:3d} out of {k:3d}" in text
    # A run's own Parallel prints once per run: the line count differs with K.
    (k_low, low), (k_high, high) = _searched_under_joblib_verbosity(data, capsys, *_PPM)
    assert low.count("[Parallel(n_jobs=2)]: Done") < high.count("[Parallel(n_jobs=2)]: Done")


def _bits(seed, parity):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (300, 12))
    y = X[:, :3].sum(1) % 2 if parity else rng.integers(0, 2, 300)
    return X, y


def _degenerate_warnings(X, y, seed):
    search, _, caught = _observed(PrivateParityClassifier(classes=[0, 1]),
                                  {"n_chunks": [1, 2, 4]}, X, y, seed)
    return search, [m for c, m in caught if issubclass(c, DegenerateModelWarning)]


def test_a_non_selected_run_does_not_warn(data):
    # Seed 0 draws 6 runs; some find no parity (and warn), the selected one finds it.
    search, degenerate = _degenerate_warnings(*_bits(0, parity=True), seed=0)
    assert search.best_estimator_.parity_ is not None
    assert degenerate == []
    # The selected run's warnings are shown, once, whatever K is: on labels that are no
    # parity, exactly when the selected model found none.
    shown = []
    for seed in range(8):
        search, degenerate = _degenerate_warnings(*_bits(0, parity=False), seed=seed)
        assert len(degenerate) == (search.best_estimator_.parity_ is None)
        shown.append(len(degenerate))
    assert 0 < sum(shown) < 8


def test_mutation_twin_letting_every_run_warn_is_caught(monkeypatch):
    _old_behaviour(monkeypatch)
    search, degenerate = _degenerate_warnings(*_bits(0, parity=True), seed=0)
    assert search.best_estimator_.parity_ is not None
    assert len(degenerate) == 3


def _warnings_shown_under(backend, n_jobs, seeds):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    shown = []
    for seed in seeds:
        search = PrivateSearchCV(DPLogisticRegression(data_norm=3.0), {"C": [0.1, 1.0, 3.0]},
                                 epsilon=2.0, accountant=PrivacyAccountant(epsilon=100.0),
                                 random_state=seed, n_jobs=n_jobs, n_iter=20)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with parallel_config(backend=backend):
                search.fit(X, y)
        # (no classes=: every run's fit warns; only the selected run's warning is shown)
        shown.append(sum(issubclass(w.category, PrivacyLeakWarning) for w in caught))
    return shown


def test_runs_in_threads_show_only_the_selected_runs_warnings():
    # Red team 14: catch_warnings swaps process-wide state, so runs recording in threads
    # at once lost or swapped their warnings, and how many reached the caller depended on K
    sequential = _warnings_shown_under("sequential", 1, range(6))
    assert len(set(sequential)) == 1  # (the same whatever K)
    assert _warnings_shown_under("threading", 4, range(6)) == sequential


def test_runs_in_threads_mutation_twin_letting_them_run_in_threads(monkeypatch):
    sequential = _warnings_shown_under("sequential", 1, range(12))
    monkeypatch.setattr(search_module, "_runs_n_jobs", lambda n_jobs: n_jobs)
    assert _warnings_shown_under("threading", 4, range(12)) != sequential


# ---------------------------------------------------------- no private value in messages
def _with_a_private_cell(data):
    X, y = data
    X = X.astype(object)
    X[30, 1] = "SSN 078-05-1120"
    return X, y


def test_a_refusal_repeats_no_private_cell(data):
    X, y = _with_a_private_cell(data)
    with pytest.raises(ValueError, match="not a real number") as refused:
        PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1]}, epsilon=1.0,
                        random_state=0).fit(X, y)
    assert "078-05" not in str(refused.value)
    # Nor in a chained exception (a traceback prints those too).
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def _no_hiding(name="X"):
    return contextlib.nullcontext()


@pytest.mark.parametrize("layers_off", [("estimator",), ("search",), ("estimator", "search")])
def test_mutation_twins_either_layer_hides_the_cell(data, monkeypatch, layers_off):
    # Two layers keep the cell out: the estimators' validation (skhybrid's validate_data)
    # and the search's blanking of quoted literals. Either alone suffices; with both off
    # the cell shows.
    from skhybrid.utils import _sklearn_compat

    if "estimator" in layers_off:
        monkeypatch.setattr(_sklearn_compat, "values_hidden", _no_hiding)
    if "search" in layers_off:
        monkeypatch.setattr(search_module, "_unquoted", str)
    X, y = _with_a_private_cell(data)
    with pytest.raises(ValueError) as refused:
        PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1]}, epsilon=1.0,
                        random_state=0).fit(X, y)
    assert ("078-05-1120" in str(refused.value)) == (len(layers_off) == 2)


# ------------------------------------------ no plain transformer fitted on private rows (F4)
def _pipeline_search(*steps, accountant=None):
    pipe = make_pipeline(*steps, DPLogisticRegression(classes=[0, 1]))
    return PrivateSearchCV(pipe, {"dplogisticregression__C": [0.1, 1]}, epsilon=1.0,
                           accountant=accountant, random_state=0)


@pytest.mark.parametrize("steps, name", [
    ((StandardScaler(),), "'standardscaler' (StandardScaler)"),
    ((Normalizer(), PCA(2)), "'pca' (PCA)"),
    ((make_pipeline(FunctionTransformer(), StandardScaler()),), "'pipeline' (Pipeline)"),
    # Its fit checks inverse_func on the private rows and warns when that fails.
    ((FunctionTransformer(np.expm1, inverse_func=np.log1p),),
     "'functiontransformer' (FunctionTransformer)"),
])
def test_a_plain_transformer_on_private_rows_is_refused_before_any_charge(data, steps, name):
    acc = PrivacyAccountant(epsilon=2.0)
    search = _pipeline_search(*steps, accountant=acc)
    for attempt in (lambda: search.fit(*data), lambda: search_cost(search, *data)):
        with pytest.raises(ValueError, match=re.escape(name)) as refused:
            attempt()
        assert "PublicFitTransformer" in str(refused.value)
    assert acc.events == []


def test_a_private_step_inside_another_meta_estimator_is_refused(data):
    # A meta-estimator other than a Pipeline may fit anything on the rows it is given
    # (a label encoder, a calibrator, a stacked model).
    wrapped = OneVsRestClassifier(DPLogisticRegression(classes=[0, 1]))
    acc = PrivacyAccountant(epsilon=2.0)
    for estimator, grid, where in [
            (wrapped, {"estimator__C": [0.1, 1]}, "inside OneVsRestClassifier,"),
            (make_pipeline(Normalizer(), wrapped),
             {"onevsrestclassifier__estimator__C": [0.1, 1]},
             "inside OneVsRestClassifier (step 'onevsrestclassifier')")]:
        with pytest.raises(ValueError, match=re.escape(where)):
            PrivateSearchCV(estimator, grid, epsilon=1.0, accountant=acc).fit(*data)
    assert acc.events == []


@pytest.mark.parametrize("steps", [
    (PublicFitTransformer(StandardScaler()),),
    (FunctionTransformer(np.tanh), "passthrough", Normalizer()),
    (FunctionTransformer(np.expm1, inverse_func=np.log1p, check_inverse=False),),
    # inverse_func runs in inverse_transform only (and in check_inverse, off here)
    (FunctionTransformer(np.tanh, inverse_func=lambda Z: Z, check_inverse=False),),
    (make_pipeline(FunctionTransformer(), Normalizer()),),
])
def test_public_fit_and_stateless_steps_are_accepted(data, steps):
    X, y = data
    public = np.arange(len(y)) < 100
    acc = PrivacyAccountant(epsilon=2.0)
    search = _pipeline_search(*steps, accountant=acc)
    fit_params = {}
    if isinstance(steps[0], PublicFitTransformer):
        fit_params = {"public_mask": public}
    search.fit(X, y, **fit_params)
    assert acc.spent() == pytest.approx((1.0, 0.0))
    assert search.best_estimator_.predict(X).shape == y.shape


def test_mutation_twin_without_the_check_releases_the_private_mean(data, monkeypatch):
    # The refused case, let through: the released scaler's mean_ moves with one private
    # row while privacy_spent_ says epsilon=1 covers everything.
    monkeypatch.setattr(search_module, "check_private_steps", lambda estimator, prefix: None)
    X, y = data
    X2 = X.copy()
    X2[0] = [1000.0, 0.0, 0.0]
    means = [_pipeline_search(StandardScaler()).fit(Z, y).best_estimator_[0].mean_
             for Z in (X, X2)]
    assert abs(means[1][0] - means[0][0]) > 1.0


# ------------------------------------------------------------------------- red team 4
def _public_fit_search(grid, accountant=None):
    pipe = make_pipeline(PublicFitTransformer(StandardScaler()),
                         DPLogisticRegression(classes=[0, 1]))
    return PrivateSearchCV(pipe, grid, epsilon=1.0, accountant=accountant)


@pytest.mark.parametrize("grid, match", [
    # a grid value replaces the public-fit step by a plain scaler
    ({"publicfittransformer": [StandardScaler()]}, "'publicfittransformer' (StandardScaler)"),
    # ... or by a stateless step whose fit checks inverse_func on the rows
    ({"publicfittransformer": [FunctionTransformer(np.expm1, inverse_func=np.log1p)]},
     "'publicfittransformer' (FunctionTransformer)"),
    # ... or replaces the private step itself by a learner no one charges
    ({"dplogisticregression": [OneVsRestClassifier(DPLogisticRegression())]},
     "replaces the private step"),
    # a number-valued key beside it does not hide it
    ({"dplogisticregression__C": [0.1, 1.0], "publicfittransformer": [PCA(2)]},
     "'publicfittransformer' (PCA)"),
])
def test_every_candidate_of_the_grid_is_checked_not_only_the_template(data, grid, match):
    X, y = data
    public = np.arange(len(y)) < 100
    acc = PrivacyAccountant(epsilon=2.0)
    search = _public_fit_search(grid, accountant=acc)
    for attempt in (lambda: search.fit(X, y, public_mask=public),
                    lambda: search_cost(search, X, y, public_mask=public)):
        with pytest.raises(ValueError, match=re.escape(match)):
            attempt()
    assert acc.events == []


def test_mutation_twin_a_grid_value_releases_a_scaler_fitted_on_private_rows(data, monkeypatch):
    monkeypatch.setattr(search_module, "check_candidate_steps", lambda *args: None)
    X, y = data
    public = np.arange(len(y)) < 100
    X2 = X.copy()
    X2[100:, 0] += 500.0  # the private rows (whichever the search holds out for scoring)
    with sklearn.config_context(enable_metadata_routing=True):
        means = [_public_fit_search({"publicfittransformer": [StandardScaler()]}).fit(
            Z, y, public_mask=public).best_estimator_[0].mean_ for Z in (X, X2)]
    assert abs(means[1][0] - means[0][0]) > 100.0


@pytest.mark.parametrize("step", [
    FunctionTransformer(scale),
    PublicFitTransformer(FunctionTransformer(lambda Z: Z - Z.mean(axis=0))),
])
def test_a_function_of_the_whole_batch_is_refused(data, step):
    # red team 3 (f3): FunctionTransformer(scale) counted as stateless, but one replaced
    # validation row moved the hit count by 240 against a sensitivity of 1
    X, y = data
    acc = PrivacyAccountant(epsilon=2.0)
    search = _pipeline_search(step, accountant=acc)
    with pytest.raises(ValueError, match="whole batch of rows.*numpy ufunc"):
        search.fit(X, y, public_mask=np.arange(len(y)) < 100)
    assert acc.events == []


def test_the_released_model_reports_what_the_search_cost(data):
    acc = PrivacyAccountant(epsilon=10.0)
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0]},
                             epsilon=3.0, accountant=acc).fit(*data)
    assert search.best_estimator_.privacy_spent_ == search.privacy_spent_
    assert search.best_estimator_.privacy_spent_["central"] == acc.spent("central")
    assert [e.source for e in search.best_estimator_.privacy_events_] == ["PrivateSearchCV"]
    piped = PrivateSearchCV(make_pipeline(Normalizer(), DPLogisticRegression(classes=[0, 1])),
                            {"dplogisticregression__C": [0.1, 1.0]}, epsilon=3.0).fit(*data)
    assert piped.best_estimator_[-1].privacy_spent_ == piped.privacy_spent_


def _warns_below_minus_3(v):
    if v < -3:
        warnings.warn("value below -3", RuntimeWarning, stacklevel=2)
    return float(v)


def test_runtime_warnings_from_a_stateless_step_on_private_rows_are_not_shown(data):
    # An elementwise ufunc is allowed; numpy's floating-point warnings from it (a log of a
    # negative value, an overflow) fire on the data set that holds the value only. This
    # ufunc warns like numpy without producing NaN, which the learner would refuse.
    step = FunctionTransformer(np.frompyfunc(_warns_below_minus_3, 1, 1))
    X, y = data
    X2 = X.copy()
    X2[::2, 0] = -50.0  # private rows (no public_mask), on both sides of any split
    shown = []
    for Z in (X, X2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _pipeline_search(step, Normalizer()).fit(Z, y)
        shown.append([str(w.message) for w in caught])
    assert shown[0] == shown[1]
    with pytest.warns(RuntimeWarning, match="below -3"):  # twin: the step alone warns
        step.fit_transform(X2)

