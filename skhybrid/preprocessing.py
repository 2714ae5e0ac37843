"""Mask-aware preprocessing: transformers fit on public rows only.

.. warning::

   A plain scikit-learn transformer in a :class:`~sklearn.pipeline.Pipeline` is fit on
   **all** rows passed to ``Pipeline.fit`` — private rows included, with no noise. A
   ``StandardScaler`` fit that way publishes the private rows' means and variances
   through every later prediction, and metadata routing does not warn about it. Wrap
   every data-dependent transformer in :class:`PublicFitTransformer`.
"""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone

from ._validation import check_mask
from .utils._sklearn_compat import check_is_fitted, get_tags, validate_data

__all__ = ["PublicFitTransformer"]


class PublicFitTransformer(TransformerMixin, BaseEstimator):
    """Fit any scikit-learn transformer on the public rows only, then transform every row.

    Fitting touches no private row, so it costs no privacy budget and needs no noise.

    Parameters
    ----------
    transformer : transformer object
        Any scikit-learn transformer (``StandardScaler()``, ``PCA(2)``, ...). It is cloned.

    Attributes
    ----------
    transformer_ : transformer object
        The clone fit on the public rows.
    n_features_in_ : int
    n_public_ : int
        Number of rows it was fit on.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skhybrid.preprocessing import PublicFitTransformer
    >>> X = np.array([[0.0], [2.0], [100.0]])
    >>> public = np.array([True, True, False])   # the outlier is private
    >>> PublicFitTransformer(StandardScaler()).fit(X, public_mask=public).transform(X).ravel()
    array([-1.,  1., 99.])
    """

    __metadata_request__fit = {"public_mask": True}

    def __init__(self, transformer):
        self.transformer = transformer

    def fit(self, X, y=None, *, public_mask=None):
        """Fit ``transformer`` on ``X[public_mask]`` (and ``y[public_mask]``).

        Raises
        ------
        ValueError
            If no row is public: there is nothing it may learn from.
        """
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X = validate_data(self, X, dtype=None, ensure_all_finite="allow-nan", reset=True)
        public = check_mask(public_mask, X.shape[0], "public_mask", index=x_index)
        if not public.any():
            raise ValueError(
                "PublicFitTransformer needs public rows: public_mask is None or all False, so "
                "fitting would read private rows. Pass public_mask with at least one True, or "
                "use fixed, data-independent preprocessing."
            )
        self.transformer_ = clone(self.transformer)
        y_pub = None if y is None else np.asarray(y)[public]
        self.transformer_.fit(X[public], y_pub)
        self.n_public_ = int(public.sum())
        return self

    def transform(self, X):
        """Transform every row with the transformer fit on public rows."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=None, ensure_all_finite="allow-nan", reset=False)
        return self.transformer_.transform(X)

    def inverse_transform(self, X):
        check_is_fitted(self)
        return self.transformer_.inverse_transform(X)

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return self.transformer_.get_feature_names_out(input_features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.transformer)
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        return tags
