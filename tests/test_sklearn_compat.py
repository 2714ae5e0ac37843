"""scikit-learn's estimator checks over every public estimator (see tests/_registry.py)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from ._registry import ESTIMATORS, EXPECTED_FAILED_CHECKS, PRIVATE_FIT_FAILED_CHECKS


def _expected_failed_checks(estimator):
    expected = dict(EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {}))
    if getattr(estimator, "epsilon", None) != float("inf"):
        expected.update(PRIVATE_FIT_FAILED_CHECKS.get(type(estimator).__name__, {}))
    return expected


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
