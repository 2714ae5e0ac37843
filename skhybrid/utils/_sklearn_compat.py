"""Every private or version-dependent piece of scikit-learn that skhybrid uses, in one file.

skhybrid supports ``scikit-learn>=1.6.1,<2``. scikit-learn keeps no compatibility promise for
its private modules (``sklearn.utils._param_validation``, ``sklearn.linear_model._base``,
underscore functions) and changes public helpers between releases (``validate_data`` and
``get_tags`` arrived in 1.6; ``_check_sample_weight`` gained keyword-only arguments later).
The rest of the package imports these names from here and nowhere else, so a new
scikit-learn release is this one file's work, and ``tests/test_sklearn_compat_module.py``
keeps the rule (no private scikit-learn import elsewhere in the package).

What is here, by group:

- parameter validation: ``Interval``, ``Options``, ``StrOptions``, ``HasMethods`` (the
  constraint classes of ``_parameter_constraints``) and :func:`validate_params`, which
  checks an estimator's parameters against them;
- input validation: :func:`validate_data` (public since 1.6; here its messages never
  quote the data), ``check_is_fitted``,
  :func:`check_sample_weight`, :func:`num_samples`;
- estimator building blocks: ``LinearClassifierMixin`` (``decision_function``/``predict``
  of a linear model from ``coef_``/``intercept_``);
- tags: ``get_tags`` (public since 1.6).
"""

import re

import sklearn

# Parameter validation: the constraint classes of ``_parameter_constraints`` (private
# module; the same signatures in 1.6.1 and 1.9.1, both tested in CI).
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions

# ``decision_function``/``predict`` from ``coef_``/``intercept_`` (private module).
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils import get_tags
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _check_sample_weight, _num_samples
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data as _validate_data

from .._validation import values_hidden

__all__ = [
    "HasMethods",
    "Interval",
    "LinearClassifierMixin",
    "Options",
    "StrOptions",
    "MIN_SKLEARN_VERSION",
    "SKLEARN_VERSION",
    "check_is_fitted",
    "check_sample_weight",
    "get_tags",
    "num_samples",
    "safe_indexing",
    "validate_data",
    "validate_params",
]


def validate_data(_estimator, /, X="no_validation", y="no_validation", **kwargs):
    """scikit-learn's ``validate_data``, with no data value in its error messages.

    numpy's conversion quotes the cell it could not convert, and scikit-learn quotes whole
    arrays (complex input, a 1-D X) and label values; such messages are replaced by ones
    that say the same without the values (:func:`skhybrid._validation.values_hidden`).
    """
    name = "X" if isinstance(y, str) and y == "no_validation" else "X or y"
    with values_hidden(name):
        return _validate_data(_estimator, X, y, **kwargs)


def _release(version):
    """``"1.6.1"`` -> ``(1, 6, 1)``; pre-release and local suffixes are dropped."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


#: The installed scikit-learn release as a tuple of ints, e.g. ``(1, 6, 1)``.
SKLEARN_VERSION = _release(sklearn.__version__)

#: The oldest scikit-learn release skhybrid supports (kept equal to pyproject.toml's bound).
MIN_SKLEARN_VERSION = (1, 6, 1)

if SKLEARN_VERSION < MIN_SKLEARN_VERSION:  # pragma: no cover - pip enforces the bound
    raise ImportError(
        f"skhybrid needs scikit-learn >= 1.6.1; scikit-learn {sklearn.__version__} is "
        "installed. Upgrade it with: pip install --upgrade 'scikit-learn>=1.6.1'"
    )


def validate_params(estimator):
    """Check ``estimator``'s parameters against its ``_parameter_constraints``.

    Raises ``sklearn.utils._param_validation.InvalidParameterError`` (a ``ValueError`` and
    ``TypeError``) naming the parameter and the accepted values. This is what scikit-learn's
    own ``fit`` methods do on entry (through the private ``BaseEstimator._validate_params``).
    """
    estimator._validate_params()


def check_sample_weight(sample_weight, X, *, dtype=None):
    """``sample_weight`` as a float array of shape ``(n_samples,)`` (``None`` gives ones).

    The keyword subset that every supported release of the private
    ``sklearn.utils.validation._check_sample_weight`` accepts. Negative or all-zero weights
    are left to the caller to refuse (scikit-learn >= 1.8 refuses all-zero weights itself,
    1.6 and 1.7 do not).
    """
    return _check_sample_weight(sample_weight, X, dtype=dtype)


def safe_indexing(X, indices):
    """Rows ``indices`` of an array, sparse matrix or DataFrame, in its own container
    (private in sklearn, but documented in its API reference since 0.24)."""
    return _safe_indexing(X, indices)


def num_samples(X):
    """The number of rows of an array-like, without converting it (private in sklearn)."""
    return _num_samples(X)
