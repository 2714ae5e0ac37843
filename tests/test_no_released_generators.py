"""No released skhybrid object holds the generator that drew its privacy noise.

PCG64 can be stepped back (``bit_generator.advance(-k)``) and a saved state replayed: a
fitted estimator that keeps its noise generator (a Generator, BitGenerator, RandomState,
SeedSequence or a saved ``bit_generator.state``) lets anyone recompute the noise and
subtract it. For every public estimator of ``tests/_registry.py`` (and the stateful
mechanisms and search objects of the public API) this fits privately (finite epsilon,
an accountant, masks that leave private rows, ``random_state=None`` -- a seed or a
generator is the user's choice and is warned about), round-trips the fitted object
through pickle, and walks everything reachable from it
(:func:`tests._rng_audit.find_generators`), again after ``predict`` / ``score`` /
``transform``.
"""

import importlib
import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from skhybrid.accounting import PrivacyAccountant
from skhybrid.adaptation import DiscrepancyAdaptationRegressor, make_adaptation_data
from skhybrid.hybrid import (
    LocalThresholdClassifier,
    ParityAndThresholdClassifier,
    ParityThresholdClassifier,
    SelectThenEstimate,
)
from skhybrid.learners import DPLogisticRegression, PrivateParityClassifier
from skhybrid.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GaussianRandomizedResponse,
    LaplaceMechanism,
    RandomizedResponse,
    ReportNoisyMax,
)
from skhybrid.mechanisms._base import Mechanism
from skhybrid.mechanisms.local import (
    HadamardResponse,
    HeavyHitters,
    HierarchicalCDF,
    QuantileSearch,
)
from skhybrid.model_selection import PrivateSearchCV
from skhybrid.ppm import PPMHalfspaceClassifier
from skhybrid.preprocessing import PublicFitTransformer
from skhybrid.transfer import (
    HardMarginLinearSVC,
    NoisySGDClassifier,
    ParityTransfer,
    SubsampleTestReweigh,
    str_min_curator_size,
)

from ._registry import ESTIMATORS
from ._rng_audit import find_generators

# Small private fits warn (degenerate models, poor utility); only what they keep matters.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning",
                                        "ignore::RuntimeWarning")


# ------------------------------------------------------------------------------ data
def _gauss(n_pub, n_priv, d=3, seed=0):
    """Real rows, labels 0/1; the first ``n_pub`` rows carry the mask's True."""
    X, y = make_classification(n_samples=n_pub + n_priv, n_features=d, n_informative=2,
                               n_redundant=0, random_state=seed)
    return X, y, np.arange(n_pub + n_priv) < n_pub


def _separable(n, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    return X, (X[:, 0] > 0).astype(int), np.zeros(n, dtype=bool)


def _bits(n, d=6, n_mask=0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d))
    return X, X[:, 0] ^ X[:, 2], np.arange(n) < n_mask


def _parity_threshold(n, n_mask, c=4, b=6, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, (n, c)), rng.integers(0, 2**b, n)])
    y = (X[:, 0] + X[:, 2] + (X[:, -1] >= 20)) % 2
    return X, y, np.arange(n) < n_mask


def _threshold(n, n_mask, b=6, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2**b, size=n)
    return t[:, None], (t >= 2 ** (b - 1) - 3).astype(int), np.arange(n) < n_mask


def _pm1(n, n_mask, d=8, seed=0):
    rng = np.random.default_rng(seed)
    mu = np.zeros(d)
    mu[3] = 0.6
    return np.where(rng.random((n, d)) < (1 + mu) / 2, 1, -1), None, np.arange(n) < n_mask


def _disc(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = (np.linalg.norm(X, axis=1) > 0.6).astype(int)  # 1 = private, outside a disc
    return X, y, y == 0


def _parity_and_threshold(n, n_mask, seed=0):
    X, _, mask = _parity_threshold(n, n_mask, seed=seed)
    Y = np.column_stack([(X[:, 0] + X[:, 2]) % 2, X[:, -1] >= 20])
    return X, Y, mask


def _adaptation(n_source=60, n_target=200):
    D = make_adaptation_data(n_source=n_source, n_target=n_target, n_test=10,
                             random_state=0)
    X = np.vstack([D.X_source, D.X_target])
    y = np.concatenate([D.y_source, np.full(n_target, np.nan)])
    return X, y, np.arange(len(X)) < n_source


_STR_N = str_min_curator_size(1.0, 1e-5, 3, 0.2, 20) + 10

# name -> (a private estimator, its data, the fit's mask keyword). Every mask leaves
# private rows (public_mask False / curator_mask True on some rows, or no mask: every
# row private). Parameters keep each fit small.
CASES = {
    "DPLogisticRegression": (
        DPLogisticRegression(epsilon=1.0, data_norm=5.0, classes=[0, 1]),
        lambda: _gauss(40, 160), "public_mask"),
    "DPLogisticRegression-objective": (
        DPLogisticRegression(epsilon=1.0, delta=1e-5, data_norm=5.0, classes=[0, 1],
                             public_rows="objective"),
        lambda: _gauss(40, 160), "public_mask"),
    "PublicFitTransformer": (
        PublicFitTransformer(StandardScaler()), lambda: _gauss(40, 160), "public_mask"),
    "PublicFitTransformer-pca": (
        PublicFitTransformer(PCA(n_components=2, svd_solver="randomized")),
        lambda: _gauss(40, 160), "public_mask"),
    "SubsampleTestReweigh": (
        SubsampleTestReweigh(DPLogisticRegression(data_norm=4.0), epsilon=1.0, delta=1e-5,
                             alpha=0.05, max_iter=3, kappa=0.2, subsample_size=20,
                             local_batch_size=50, classes=[0, 1]),
        lambda: _gauss(0, _STR_N + 200)[:2] + (np.arange(_STR_N + 200) < _STR_N,),
        "curator_mask"),
    "SubsampleTestReweigh-sgd": (
        SubsampleTestReweigh(NoisySGDClassifier(n_steps=100), epsilon=1.0, delta=1e-5,
                             alpha=0.1, chi2_bound=1.0, max_iter=2, local_batch_size=100,
                             classes=[0, 1]),
        lambda: _gauss(0, 20200)[:2] + (np.arange(20200) < 20000,), "curator_mask"),
    "SubsampleTestReweigh-curator-only": (
        SubsampleTestReweigh(DPLogisticRegression(data_norm=4.0), epsilon=1.0, delta=1e-5,
                             alpha=0.05, max_iter=3, kappa=0.2, subsample_size=20,
                             classes=[0, 1]),
        lambda: _gauss(0, 300), None),
    "HardMarginLinearSVC": (  # no noise, no random_state: nothing to keep
        HardMarginLinearSVC(), lambda: _separable(100), None),
    "NoisySGDClassifier": (
        NoisySGDClassifier(epsilon=1.0, delta=1e-5, n_steps=200, classes=[0, 1]),
        lambda: _gauss(0, 200), None),
    "ParityTransfer": (
        ParityTransfer(epsilon=1.0, classes=[0, 1]),
        lambda: _bits(1200, n_mask=600), "curator_mask"),
    "PPMHalfspaceClassifier": (
        PPMHalfspaceClassifier(epsilon=1.0, private_class=1, classes=[0, 1]),
        lambda: _disc(200), "public_mask"),
    "PPMHalfspaceClassifier-hull": (
        PPMHalfspaceClassifier(epsilon=1.0, candidates="hull", n_directions=8,
                               classes=[0, 1]),
        lambda: _gauss(100, 100, d=2), "public_mask"),
    "PrivateParityClassifier": (
        PrivateParityClassifier(epsilon=1.0, classes=[0, 1]), lambda: _bits(600), None),
    "ParityThresholdClassifier": (
        ParityThresholdClassifier(threshold_bits=6, classes=[0, 1]),
        lambda: _parity_threshold(4000, 1000), "curator_mask"),
    "ParityThresholdClassifier-nearest": (
        ParityThresholdClassifier(threshold_bits=6, referee="nearest", classes=[0, 1]),
        lambda: _parity_threshold(4000, 1000), "curator_mask"),
    "LocalThresholdClassifier": (
        LocalThresholdClassifier(threshold_bits=6, classes=[0, 1]),
        lambda: _threshold(2000, 200), "curator_mask"),
    "LocalThresholdClassifier-app-a": (
        LocalThresholdClassifier(threshold_bits=3, alpha=0.5, method="app-a",
                                 classes=[0, 1]),
        lambda: _threshold(1600, 100, b=3), "curator_mask"),
    "ParityAndThresholdClassifier": (
        ParityAndThresholdClassifier(threshold_bits=6, classes=([0, 1], [0, 1])),
        lambda: _parity_and_threshold(4000, 1000), "curator_mask"),
    "SelectThenEstimate": (
        SelectThenEstimate(epsilon=1.0), lambda: _pm1(3000, 500), "curator_mask"),
    # Paths a mask of None takes (every row private / at the curator: central noise).
    "DPLogisticRegression-no-public": (
        DPLogisticRegression(epsilon=1.0, data_norm=5.0, classes=[0, 1]),
        lambda: _gauss(0, 200), None),
    "PPMHalfspaceClassifier-net": (
        PPMHalfspaceClassifier(epsilon=1.0, candidates="net", n_directions=8,
                               classes=[0, 1]),
        lambda: _gauss(100, 100, d=2), "public_mask"),
    "PPMHalfspaceClassifier-exact": (
        PPMHalfspaceClassifier(epsilon=1.0, candidates="exact", classes=[0, 1]),
        lambda: _gauss(30, 60, d=2), "public_mask"),
    "ParityTransfer-local-epsilon": (
        ParityTransfer(epsilon=1.0, local_epsilon=2.0, rate="klnrs", classes=[0, 1]),
        lambda: _bits(1200, n_mask=600), "curator_mask"),
    "SubsampleTestReweigh-agnostic": (
        SubsampleTestReweigh(DPLogisticRegression(data_norm=4.0), epsilon=1.0, delta=1e-5,
                             alpha=0.05, max_iter=3, kappa=0.2, subsample_size=20,
                             local_batch_size=50, agnostic=True, classes=[0, 1]),
        lambda: _gauss(0, _STR_N + 200)[:2] + (np.arange(_STR_N + 200) < _STR_N,),
        "curator_mask"),
    "ParityThresholdClassifier-curator-only": (
        ParityThresholdClassifier(threshold_bits=6, classes=[0, 1]),
        lambda: _parity_threshold(4000, 0), None),
    "LocalThresholdClassifier-curator-only": (
        LocalThresholdClassifier(threshold_bits=6, classes=[0, 1]),
        lambda: _threshold(2000, 0), None),
    "ParityAndThresholdClassifier-curator-only": (
        ParityAndThresholdClassifier(threshold_bits=6, classes=([0, 1], [0, 1])),
        lambda: _parity_and_threshold(4000, 0), None),
    "SelectThenEstimate-curator-only": (
        SelectThenEstimate(epsilon=1.0), lambda: _pm1(3000, 0), None),
    "DiscrepancyAdaptationRegressor": (
        DiscrepancyAdaptationRegressor(epsilon=1.0, delta=1e-5, max_iter=50),
        _adaptation, "public_mask"),
    "DiscrepancyAdaptationRegressor-single-stage": (
        DiscrepancyAdaptationRegressor(epsilon=1.0, delta=1e-5, solver="single-stage",
                                       max_iter=20),
        _adaptation, "public_mask"),
    "DiscrepancyAdaptationRegressor-exponential": (
        DiscrepancyAdaptationRegressor(epsilon=1.0, delta=1e-5, selection="exponential",
                                       max_iter=50),
        _adaptation, "public_mask"),
}


def _fit(name):
    est, data, mask_kw = CASES[name]
    est = clone(est)
    if "random_state" in est.get_params(deep=False):
        assert est.random_state is None
    if "accountant" in est.get_params(deep=False):
        est.set_params(accountant=PrivacyAccountant())
    X, y, mask = data()
    fit_params = {} if mask_kw is None else {mask_kw: mask}
    return est.fit(X, y, **fit_params), X, y


_PUBLIC_MODULES = ["skhybrid", "skhybrid.learners", "skhybrid.ppm", "skhybrid.adaptation",
                   "skhybrid.hybrid", "skhybrid.transfer", "skhybrid.preprocessing",
                   "skhybrid.mechanisms", "skhybrid.mechanisms.local",
                   "skhybrid.model_selection", "skhybrid.accounting"]


def _public_classes(base):
    out = set()
    for module in _PUBLIC_MODULES:
        module = importlib.import_module(module)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, base):
                out.add(obj.__name__)
    return out


def test_every_public_estimator_and_mechanism_has_a_case():
    # A new estimator (in the registry or any public __all__) or mechanism must join the
    # audit; PrivateSearchCV has its own test below.
    registered = {type(est).__name__.lstrip("_").replace("AllPublic", "Public")
                  for est in ESTIMATORS}
    covered = {name.split("-")[0] for name in CASES} | {"PrivateSearchCV"}
    assert registered | _public_classes(BaseEstimator) <= covered
    assert _public_classes(Mechanism) <= set(_mechanism_runs())


@pytest.mark.parametrize("name", list(CASES))
def test_no_generator_reachable_from_a_released_estimator(name):
    est, X, y = _fit(name)
    assert find_generators(est, name) == []
    if "accountant" in est.get_params(deep=False):  # the fit was private and charged
        spent = [est.accountant.spent(pop)[0] for pop in ("central", "local")]
        assert 0 < max(spent) < np.inf
    released = pickle.loads(pickle.dumps(est))
    assert find_generators(released, name) == []
    # Prediction, scoring and transforming keep nothing either.
    for method in ("predict", "predict_proba", "decision_function", "transform"):
        if hasattr(released, method):
            getattr(released, method)(X)
    if hasattr(released, "score") and y is not None:
        labelled = ~np.isnan(y) if y.dtype.kind == "f" else slice(None)  # adaptation
        released.score(X[labelled], y[labelled])
    assert find_generators(released, name) == []
    assert find_generators(est, name) == []


def test_a_refit_and_parallel_candidates_keep_nothing():
    # A second fit of the same object, and PPM scoring candidates in joblib workers.
    est, X, y = _fit("DPLogisticRegression")
    est.fit(X, y, public_mask=np.arange(len(y)) < 40)
    assert find_generators(est) == []
    X, y, public = _disc(200)
    ppm = PPMHalfspaceClassifier(epsilon=1.0, private_class=1, classes=[0, 1], n_jobs=2,
                                 accountant=PrivacyAccountant())
    assert find_generators(pickle.loads(pickle.dumps(ppm.fit(X, y, public_mask=public)))) == []


@pytest.mark.parametrize("name, grid", [
    ("DPLogisticRegression", {"C": [0.1, 1.0, 10.0]}),
    ("PPMHalfspaceClassifier-hull", {"n_directions": [4, 8]}),
    ("PrivateParityClassifier", {"n_chunks": [1, 2]}),
])
def test_a_private_search_over_a_released_estimator_keeps_nothing(name, grid):
    est, data, mask_kw = CASES[name]
    X, y, mask = data()
    acc = PrivacyAccountant()
    search = PrivateSearchCV(clone(est), grid, epsilon=1.0, accountant=acc)
    search.fit(X, y, **({} if mask_kw is None else {mask_kw: mask}))
    assert 0 < acc.spent("central")[0] < np.inf
    released = pickle.loads(pickle.dumps(search))
    released.predict(X)
    assert find_generators(released, "search") == []
    assert find_generators(search, "search") == []


# (dp_scorer in GridSearchCV: tests/model_selection/test_scorer_release.py, with its twin)


# ------------------------------------------------------------------------ mechanisms
# A mechanism is handed a generator per call and must keep none of it: the stateful local
# protocols below keep their estimates as fitted attributes.
def _mechanism_runs():
    rng = np.random.default_rng()
    values = np.random.default_rng(0).integers(0, 16, size=2000)
    bits = (values % 2).astype(np.int8)
    return {
        "LaplaceMechanism": (LaplaceMechanism(1.0), lambda m: m(3.0, rng)),
        "GaussianMechanism": (GaussianMechanism(1.0, 1e-5), lambda m: m(3.0, rng)),
        "ExponentialMechanism": (ExponentialMechanism(1.0), lambda m: m([1.0, 2.0, 0.5], rng)),
        "ReportNoisyMax": (ReportNoisyMax(1.0), lambda m: m([1.0, 2.0, 0.5], rng)),
        "RandomizedResponse": (RandomizedResponse(1.0), lambda m: m(bits, rng)),
        "GaussianRandomizedResponse": (GaussianRandomizedResponse(1.0, 1e-5),
                                       lambda m: m(bits, rng)),
        "HadamardResponse": (HadamardResponse(1.0, 16), lambda m: m.randomize(values, rng)),
        "HierarchicalCDF": (HierarchicalCDF(1.0, 4), lambda m: m.fit(values, rng).cdf(7)),
        "HeavyHitters": (HeavyHitters(1.0, 16, 0.05), lambda m: m.fit(values, rng)),
        "QuantileSearch": (QuantileSearch(1.0, 0.0, 16.0, 1.0, 0.2, 0.05),
                           lambda m: m.search(values, 0.5, rng)),
    }


@pytest.mark.parametrize("name", list(_mechanism_runs()))
def test_no_generator_reachable_from_a_used_mechanism(name):
    mech, run = _mechanism_runs()[name]
    out = run(mech)
    assert find_generators(pickle.loads(pickle.dumps(mech)), name) == []
    assert find_generators(out, name + "()") == []


# ----------------------------------------------------------------------- mutation twin
class _KeepsItsGenerator(DPLogisticRegression):
    """DPLogisticRegression that keeps the generator which drew its noise (the leak)."""

    def _make_rng(self):
        self.noise_rng_ = super()._make_rng()
        return self.noise_rng_


def test_twin_a_kept_noise_generator_is_found_and_replays_the_noise():
    X, y, public = _gauss(40, 160)
    leaky = _KeepsItsGenerator(epsilon=1.0, data_norm=5.0, classes=[0, 1],
                               accountant=PrivacyAccountant()).fit(X, y, public_mask=public)
    released = pickle.loads(pickle.dumps(leaky))
    released.predict(X)
    assert find_generators(released, "est") == ["est.noise_rng_"]
    # The same estimator without the plant keeps nothing (the case above).
    honest = DPLogisticRegression(epsilon=1.0, data_norm=5.0, classes=[0, 1],
                                  accountant=PrivacyAccountant()).fit(X, y, public_mask=public)
    assert find_generators(pickle.loads(pickle.dumps(honest)), "est") == []


class _CDFKeepsItsGenerator(HierarchicalCDF):
    """A local protocol that keeps the generator (here as a saved state) it was handed."""

    def fit(self, values, rng):
        self.state_ = {"saved": rng.bit_generator.state}
        return super().fit(values, rng)


def test_twin_a_mechanism_keeping_a_saved_state_is_found():
    values = np.random.default_rng(0).integers(0, 16, size=500)
    mech = _CDFKeepsItsGenerator(1.0, 4).fit(values, np.random.default_rng())
    assert find_generators(pickle.loads(pickle.dumps(mech)), "cdf") == ["cdf.state_['saved']"]


@pytest.mark.parametrize("name", ["SubsampleTestReweigh", "SubsampleTestReweigh-curator-only"])
def test_twin_reverting_str_detach_fails_this_audit(name, monkeypatch):
    # The estimator-level twin on a real learner: STR without its reset hands its own
    # generator (which drew the subsamples and the agents' noise) to the released
    # hypothesis, and the audit above must see it, pickled and all.
    from skhybrid.transfer import _str

    monkeypatch.setattr(_str, "_detach_random_state", lambda h, base, params: h)
    est, _, _ = _fit(name)
    released = pickle.loads(pickle.dumps(est))
    assert find_generators(released, name) == [f"{name}.hypothesis_.random_state"]
