"""No exception message prints a private value (a distinctive number planted in a private
row must not appear), for every estimator that refuses out-of-domain private data."""

import numpy as np
import pytest

from skhybrid import DPLogisticRegression
from skhybrid.hybrid import LocalThresholdClassifier, ParityThresholdClassifier
from skhybrid.learners import PrivateParityClassifier
from skhybrid.ppm import PPMHalfspaceClassifier
from skhybrid.transfer import NoisySGDClassifier, ParityTransfer, SubsampleTestReweigh

CANARY = 31337  # a value no message has a reason to contain


def _bits(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, (n, d)), rng.integers(0, 256, n)])
    return X, rng.integers(0, 2, n)


CASES = [
    ("threshold value", lambda: LocalThresholdClassifier(classes=[0, 1]).fit(
        *_with_canary_threshold(), curator_mask=np.zeros(200, bool))),
    ("threshold value, hybrid", lambda: ParityThresholdClassifier(classes=[0, 1]).fit(
        *_with_canary_threshold(), curator_mask=np.arange(200) < 100)),
    ("parity feature", lambda: PrivateParityClassifier(classes=[0, 1]).fit(
        *_with_canary_bit())),
    ("parity transfer feature", lambda: ParityTransfer(classes=[0, 1]).fit(
        *_with_canary_bit(), curator_mask=np.arange(200) < 100)),
    ("label, logistic", lambda: DPLogisticRegression(classes=[0, 1]).fit(*_with_canary_label())),
    ("label, PPM", lambda: PPMHalfspaceClassifier(classes=[0, 1]).fit(
        *_with_canary_label(), public_mask=np.arange(200) < 50)),
    ("label, SGD", lambda: NoisySGDClassifier(classes=[0, 1]).fit(*_with_canary_label())),
    ("label, STR", lambda: SubsampleTestReweigh(classes=[0, 1]).fit(
        *_with_canary_label(), curator_mask=np.arange(200) < 100)),
]


def _with_canary_threshold():
    X, y = _bits()
    X[150, -1] = CANARY
    return X, y


def _with_canary_bit():
    X, y = _bits()
    X = X[:, :-1]
    X[150, 2] = CANARY
    return X, y


def _with_canary_label():
    X, y = _bits()
    y = y.copy()
    y[150] = CANARY
    return X.astype(float), y


@pytest.mark.parametrize("name, fit", CASES, ids=[c[0] for c in CASES])
def test_refusal_names_no_private_value(name, fit):
    with pytest.raises(ValueError) as info:
        fit()
    message = str(info.value)
    assert str(CANARY) not in message and "150" not in message, message


# ---- malformed input: numpy's and scikit-learn's own messages quote the data

SECRET = "SSN 078-05-1120"  # a private cell that is not a number


def _mixed_rows(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(object)
    X[40, 1] = SECRET  # a private row in every case below
    return X, (rng.normal(size=n) > 0).astype(int)


def _threshold_rows(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, (n, 2)), rng.integers(0, 8, n)]).astype(object)
    X[40, 2] = SECRET
    return X, rng.integers(0, 2, n)


PUBLIC = np.arange(60) < 10
MALFORMED = [
    ("logistic", lambda X, y: DPLogisticRegression(classes=[0, 1]).fit(X, y, public_mask=PUBLIC)),
    ("PPM", lambda X, y: PPMHalfspaceClassifier(classes=[0, 1]).fit(X, y, public_mask=PUBLIC)),
    ("SGD", lambda X, y: NoisySGDClassifier(classes=[0, 1]).fit(X, y)),
    ("STR", lambda X, y: SubsampleTestReweigh(classes=[0, 1]).fit(X, y, curator_mask=~PUBLIC)),
    ("adaptation", lambda X, y: __import__("skhybrid.adaptation").adaptation
     .DiscrepancyAdaptationRegressor().fit(X, y.astype(float), public_mask=PUBLIC)),
]


@pytest.mark.parametrize("name, fit", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_non_numeric_private_cell_is_not_quoted(name, fit):
    X, y = _mixed_rows()
    with pytest.raises(ValueError, match="not a real number") as info:
        fit(X, y)
    assert SECRET not in str(info.value) and info.value.__cause__ is None
    assert info.value.__suppress_context__  # the quoting original is not printed either


@pytest.mark.parametrize("estimator", [
    lambda: LocalThresholdClassifier(threshold_bits=3, threshold_feature=-1, classes=[0, 1]),
    lambda: ParityThresholdClassifier(threshold_bits=3, threshold_feature=-1, classes=[0, 1]),
])
def test_non_numeric_private_threshold_is_not_quoted(estimator):
    X, y = _threshold_rows()
    with pytest.raises(ValueError, match="threshold feature holds an entry") as info:
        estimator().fit(X, y, curator_mask=PUBLIC)
    assert SECRET not in str(info.value)


def test_scikit_learn_quotes_what_the_wrapper_hides():
    # The twin: the checks the estimators call do quote the data, so the tests above
    # would fail without skhybrid's wrapper.
    from sklearn.utils.validation import check_array

    X, _ = _mixed_rows()
    with pytest.raises(ValueError, match=SECRET):
        check_array(X, dtype=np.float64)
    with pytest.raises(ValueError, match=r"array=\[.*3\.1337"):
        check_array(np.array([1.5, 31337.25]))  # a 1-D X: scikit-learn prints the array


def test_one_dimensional_and_complex_X_are_not_quoted():
    y = np.r_[np.zeros(30), np.ones(30)].astype(int)
    x = np.linspace(0, 1, 60)
    x[40] = 31337.25
    for X in (x, np.column_stack([x, x]) + 1j):
        with pytest.raises(ValueError) as info:
            DPLogisticRegression(classes=[0, 1]).fit(X, y, public_mask=PUBLIC)
        message = str(info.value)
        assert "3.1337" not in message and "31337" not in message, message


def test_unknown_category_of_a_private_row_is_not_quoted():
    import pandas as pd
    from sklearn.preprocessing import OrdinalEncoder

    from skhybrid import PublicFitTransformer

    X = pd.DataFrame({"city": ["Lyon", "Oslo", "Lyon", SECRET]})
    t = PublicFitTransformer(OrdinalEncoder()).fit(X, public_mask=[True, True, True, False])
    with pytest.raises(ValueError, match="category that the public rows do not show") as info:
        t.transform(X)
    assert SECRET not in str(info.value)



# ---- the local mechanisms: the agents' values are the private data

OUTSIDE = 271828  # an out-of-domain agent value, as distinctive as the canary


def _agents(low_outside=False):
    # The canary is an in-domain agent value; the smallest value when nothing is negative.
    return np.array([40000, CANARY, 50000, -OUTSIDE if low_outside else OUTSIDE])


def _local(name):
    import skhybrid.mechanisms.local as local

    return {
        "HadamardResponse.randomize": lambda v: local.HadamardResponse(1.0, 1 << 16).randomize(
            v, np.random.default_rng(0)),
        "HierarchicalCDF.fit": lambda v: local.HierarchicalCDF(1.0, 16).fit(
            v, np.random.default_rng(0)),
        "HierarchicalCDF.randomize": lambda v: local.HierarchicalCDF(1.0, 16).randomize(
            v, np.random.default_rng(0)),
        "HeavyHitters.fit": lambda v: local.HeavyHitters(1.0, 1 << 16, 0.1).fit(
            v, np.random.default_rng(0)),
    }[name]


@pytest.mark.parametrize("low_outside", [False, True], ids=["above", "below"])
@pytest.mark.parametrize("name", ["HadamardResponse.randomize", "HierarchicalCDF.fit",
                                  "HierarchicalCDF.randomize", "HeavyHitters.fit"])
def test_local_domain_refusal_names_no_agent_value(name, low_outside):
    with pytest.raises(ValueError, match=r"values must lie in the public domain \[0, 65536\)"
                       ) as info:
        _local(name)(_agents(low_outside))
    message = str(info.value)
    assert str(CANARY) not in message and str(OUTSIDE) not in message, message


def test_old_local_domain_message_would_have_quoted_the_canary():
    # The twin: the message before the fix printed the range of the agents' values, so the
    # test above would have failed on it (the canary is the minimum, the outlier the maximum).
    values = _agents()
    old = (f"values must lie in [0, {1 << 16}); got range "
           f"[{values.min()}, {values.max()}]. Map them into the public domain.")
    assert str(CANARY) in old and str(OUTSIDE) in old
