"""A pandas mask is aligned to X's index by label, or refused; never read by position."""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV

from skhybrid import DPLogisticRegression, PrivacyAccountant
from skhybrid._validation import check_mask
from skhybrid.transfer import SubsampleTestReweigh


def _frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), index=rng.permutation(np.arange(1000, 1000 + n)))
    y = pd.Series((X[0] > 0).astype(int).to_numpy(), index=X.index)
    public = pd.Series(rng.random(n) < 0.3, index=X.index)
    return X, y, public


def test_a_series_in_another_row_order_is_aligned_by_label():
    X, _, public = _frame()
    shuffled = public.sample(frac=1.0, random_state=1)  # same labels, another order
    aligned = check_mask(shuffled, len(X), "public_mask", index=X.index)
    np.testing.assert_array_equal(aligned, public.to_numpy())
    # Read by position (the old behaviour), many private rows would have become public.
    assert (shuffled.to_numpy() & ~public.to_numpy()).sum() > 20


def test_refused_when_indexes_differ_or_x_has_none():
    X, _, public = _frame()
    other = public.copy()
    other.index = other.index + 5000
    with pytest.raises(ValueError, match="differs from X's index"):
        check_mask(other, len(X), "public_mask", index=X.index)
    with pytest.raises(ValueError, match="X has no index to align"):
        check_mask(public, len(X), "public_mask", index=None)
    dup = pd.Series(public.to_numpy(), index=[1] * len(X))
    with pytest.raises(ValueError, match="unique index labels"):
        check_mask(dup, len(X), "public_mask", index=X.index)
    # A default RangeIndex with a plain array X: positions and labels agree.
    plain = pd.Series(public.to_numpy())
    np.testing.assert_array_equal(check_mask(plain, len(X), "m", index=None), public.to_numpy())


def test_estimators_align_the_mask_they_receive():
    X, y, public = _frame()
    shuffled = public.sample(frac=1.0, random_state=2)
    acc_a, acc_b = PrivacyAccountant(), PrivacyAccountant()
    a = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, accountant=acc_a)
    b = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, accountant=acc_b)
    a.fit(X, y, public_mask=public)
    b.fit(X, y, public_mask=shuffled)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    with pytest.raises(ValueError, match="curator_mask"):
        SubsampleTestReweigh(epsilon=np.inf).fit(X.to_numpy(), y.to_numpy(),
                                                 curator_mask=shuffled)


def test_a_search_with_frame_and_series_mask():
    X, y, public = _frame(300)
    search = GridSearchCV(DPLogisticRegression(epsilon=np.inf, classes=[0, 1]),
                          {"C": [0.1, 1.0]}, cv=3, error_score="raise")
    search.fit(X, y, public_mask=public)  # same order: sklearn's positional split agrees
    assert search.best_estimator_.coef_.shape == (1, 3)
    # sklearn splits metadata by position: a mask in another order reaches each fold with
    # labels that are not the fold's rows. Refused, where it used to be silently wrong.
    with pytest.raises(ValueError, match="differs from X's index"):
        search.fit(X, y, public_mask=public.sample(frac=1.0, random_state=3))
