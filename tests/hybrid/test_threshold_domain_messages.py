"""The threshold feature's domain refusal says what happens: at fit nothing is charged, at
predict no row is predicted."""

import numpy as np
import pytest

from skhybrid.hybrid import LocalThresholdClassifier, ParityThresholdClassifier


def test_out_of_domain_threshold_at_predict_says_no_row_is_predicted():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 2, (200, 3)), rng.integers(0, 8, 200)]
    y, mask = X[:, 0], np.arange(200) < 100
    X_bad = X.copy()
    X_bad[0, -1] = 99
    for est in (LocalThresholdClassifier(threshold_bits=3, classes=[0, 1]),
                ParityThresholdClassifier(threshold_bits=3, classes=[0, 1])):
        with pytest.raises(ValueError, match="before anything is charged"):
            est.fit(X_bad, y, curator_mask=mask)
        est.fit(X, y, curator_mask=mask)
        with pytest.raises(ValueError, match="no row is predicted") as info:
            est.predict(X_bad)
        assert "charged" not in str(info.value) and "99" not in str(info.value)


# ------------------------------------------- integer arithmetic up to threshold_bits = 62


def test_integer_threshold_values_are_kept_exactly():
    # A float64 round trip turned 2^53 + 1 into 2^53 and 2^60 + 3 into 2^60.
    from skhybrid.hybrid._parity_threshold import check_threshold_values

    t = np.array([0, 2**53, 2**53 + 1, 2**60 + 3, 2**61 - 1], dtype=np.int64)
    np.testing.assert_array_equal(check_threshold_values(t, 61), t)
    np.testing.assert_array_equal(check_threshold_values(t.astype(np.uint64), 61), t)
    np.testing.assert_array_equal(
        check_threshold_values(np.array(t.tolist(), dtype=object), 61), t)
    for bad in (np.array([2**61 + 5], dtype=np.int64), np.array([-7]),
                np.array([2**63], dtype=np.uint64), np.array([2**70], dtype=object)):
        with pytest.raises(ValueError, match="must hold integers") as info:
            check_threshold_values(bad, 61)
        assert str(int(bad[0])) not in str(info.value)


def test_whether_fit_raises_does_not_depend_on_an_in_domain_value():
    # 2^62 - 1 is legal at threshold_bits=62; it went through float64 (= 2^62) and was
    # refused, so a top-of-domain private row decided whether fit raised.
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([rng.integers(0, 2, (n, 3)),
                         rng.integers(0, 2**40, n)]).astype(np.int64)
    y = X[:, 0] % 2
    X_top = X.copy()
    X_top[0, -1] = 2**62 - 1
    for data in (X, X_top):
        clf = ParityThresholdClassifier(threshold_bits=62, classes=[0, 1], epsilon=np.inf)
        clf.fit(data, y)
        assert clf.predict(X_top[:1]).shape == (1,)


def test_float_column_beyond_53_bits_is_refused_by_dtype_alone():
    from skhybrid.accounting import PrivacyAccountant

    rng = np.random.default_rng(0)
    t = rng.integers(0, 1000, 300)
    X, y = t[:, None].astype(float), (t >= 500).astype(int)
    acc = PrivacyAccountant(epsilon=5.0)
    with pytest.raises(ValueError, match="integer dtype") as info:
        LocalThresholdClassifier(threshold_bits=54, classes=[0, 1], accountant=acc,
                                 random_state=0).fit(X, y)
    assert acc.events == [] and str(t.max()) not in str(info.value)
    # the same values as int64 are accepted, and a float column up to 53 bits too
    LocalThresholdClassifier(threshold_bits=54, classes=[0, 1], epsilon=np.inf).fit(
        t[:, None], y)
    LocalThresholdClassifier(threshold_bits=53, classes=[0, 1], epsilon=np.inf).fit(X, y)


def test_an_object_column_is_kept_or_refused_by_its_values_not_their_python_types():
    # At threshold_bits > 53 an object column holding 7 as an int was kept and the same
    # column holding 7.0 in one private row was refused (the float path's dtype refusal):
    # now every entry is read exactly, and only values outside the domain are refused.
    from skhybrid.hybrid._parity_threshold import check_threshold_values

    ints = [3, 7, 2**53 + 1, 2**60]
    for bits in (53 + 8, 61):
        expected = np.array(ints, dtype=np.int64)
        for row0 in (3, 3.0, np.float32(3.0), np.int16(3), np.int64(3)):
            column = np.array([row0] + ints[1:], dtype=object)
            np.testing.assert_array_equal(check_threshold_values(column, bits), expected)
        for bad in (3.5, float("nan"), float("inf"), -1.0, np.longdouble(3) + np.longdouble(2.0**-60)):
            column = np.array([bad] + ints[1:], dtype=object)
            with pytest.raises(ValueError, match="must hold integers") as info:
                check_threshold_values(column, bits)
            assert "3.5" not in str(info.value)
    # other objects still take the float path as a whole column (b <= 53 only)
    np.testing.assert_array_equal(
        check_threshold_values(np.array(["3", "7"], dtype=object), 53), [3, 7])
    with pytest.raises(ValueError, match="integer dtype"):
        check_threshold_values(np.array(["3", "7"], dtype=object), 54)
