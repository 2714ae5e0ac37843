"""Mask-aware preprocessing: transformers fit on public rows only.

.. warning::

   A plain scikit-learn transformer in a :class:`~sklearn.pipeline.Pipeline` is fit on
   **all** rows passed to ``Pipeline.fit`` — private rows included, with no noise. A
   ``StandardScaler`` fit that way publishes the private rows' means and variances
   through every later prediction, and metadata routing does not warn about it. Wrap
   every data-dependent transformer in :class:`PublicFitTransformer`.
"""

import warnings

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_array

from ._validation import check_mask, labels_as_given, values_hidden
from .utils._sklearn_compat import check_is_fitted, get_tags, safe_indexing, validate_data

__all__ = ["PublicFitTransformer"]


def _is_dataframe(X):
    """A pandas or polars DataFrame (anything with columns and a 2-d shape)."""
    return hasattr(X, "columns") and len(getattr(X, "shape", ())) == 2


def _as_container(X):
    """``X`` in a form the wrapped transformer may see, without losing what it carries.

    DataFrames keep their columns, dtypes and index (a ``ColumnTransformer`` selecting
    columns by name needs them); sparse matrices stay sparse (in a format whose rows can
    be selected); anything else becomes a 2-d numpy array (any dtype, NaN allowed: the
    wrapped transformer decides what it accepts).
    """
    if _is_dataframe(X):
        return X
    if sparse.issparse(X):
        return X if X.format in ("csr", "csc") else X.tocsr()
    return check_array(X, dtype=None, ensure_all_finite=False)


def _transformer_has(attr):
    """For ``available_if``: the wrapped transformer (fitted one first) has ``attr``."""

    def check(self):
        getattr(getattr(self, "transformer_", self.transformer), attr)
        return True

    return check


class PublicFitTransformer(TransformerMixin, BaseEstimator):
    """Fit any scikit-learn transformer on the public rows only, then transform every row.

    Fitting touches no private row, so it costs no privacy budget and needs no noise.

    The input reaches the wrapped transformer in its own container: a pandas DataFrame
    stays a DataFrame (its columns, dtypes and index kept; the public rows are selected
    by position), so a ``ColumnTransformer`` that selects columns by name works; a sparse
    matrix stays sparse (the wrapped transformer decides whether it accepts it); other
    input becomes a numpy array. ``set_output(transform="pandas")`` returns DataFrames
    with the input's index and the wrapped transformer's feature names.

    The public rows define the wrapped transformer's domain: a private row outside it (a
    category no public row shows, a value beyond a ``SplineTransformer``'s knots with
    ``extrapolation="error"``) makes ``fit_transform`` raise, before any learner after it
    charges, with a message that names no value (a private held-out row that a private
    search or ``dp_scorer`` only predicts scores as the worst instead: it cannot be refused
    after their charge); choose the option that maps such rows inside the domain
    (``handle_unknown="ignore"``, ``extrapolation="constant"``) when private rows may fall
    outside. Warnings raised while transforming the training rows
    are not shown (they would depend on the private rows).

    Parameters
    ----------
    transformer : transformer object
        Any scikit-learn transformer (``StandardScaler()``, ``PCA(2)``, a ``Pipeline`` or
        ``ColumnTransformer``, ...). It is cloned in ``fit``.

    Attributes
    ----------
    transformer_ : transformer object
        The clone fit on the public rows.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during ``fit``. Defined only when ``X`` has feature
        names that are all strings (a DataFrame).
    n_public_ : int
        Number of rows it was fit on.

    See Also
    --------
    sklearn.compose.ColumnTransformer : Wrap it whole to fit every column's transformer on
        the public rows.

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
        """Fit ``transformer`` on the public rows of ``X`` (and of ``y``).

        Parameters
        ----------
        X : {ndarray, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Every row; only the public ones are read. A DataFrame is passed on as a
            DataFrame, a sparse matrix as a sparse matrix. A list is refused: its rows
            would be converted together, private ones included.
        y : array-like of shape (n_samples,), default=None
            Targets, for transformers that use them; only the public rows are read.
        public_mask : array-like of bool of shape (n_samples,)
            True for public rows. A pandas Series is aligned to ``X``'s index (when ``X``
            is a DataFrame) or refused.

        Returns
        -------
        self : PublicFitTransformer
            The fitted transformer.

        Raises
        ------
        ValueError
            If no row is public: there is nothing it may learn from.
        """
        if not (hasattr(X, "__array__") or _is_dataframe(X) or sparse.issparse(X)):
            # A list's rows are converted together (one dtype for all): one private cell's
            # type (a float among ints, a NaN among 64-bit ids) would decide how the public
            # rows are read, and so what the transformer learns from them (red team 18).
            # (An array-like with __array__ carries its own dtype.)
            raise ValueError(
                f"PublicFitTransformer needs X as a numpy array, a sparse matrix or a "
                f"DataFrame, not a {type(X).__name__}: a list's rows are converted "
                "together, so a private row's cell types would decide how the public rows "
                "are read. Convert it first with a dtype of your choice, e.g. "
                "np.asarray(X, dtype=float) or np.asarray(X, dtype=object).")
        X = _as_container(X)
        # Feature names and count only: the container is kept as it is.
        validate_data(self, X, reset=True, skip_check_array=True)
        # Only a pandas DataFrame carries an index to align a pandas mask to (a polars
        # DataFrame has none).
        x_index = X.index if hasattr(X, "iloc") else None
        public = check_mask(public_mask, X.shape[0], "public_mask", index=x_index)
        if not public.any():
            raise ValueError(
                "PublicFitTransformer needs public rows: public_mask is None or all False, so "
                "fitting would read private rows. Pass public_mask with at least one True, or "
                "use fixed, data-independent preprocessing."
            )
        rows = np.flatnonzero(public)  # by position: a DataFrame keeps its index labels
        self.transformer_ = clone(self.transformer)
        if y is not None:
            # The public entries are selected before any conversion: a list converted whole
            # would take one dtype from every label, private ones included. (A pandas
            # Series stays one, by position, as X's rows.)
            given = labels_as_given(y, public)
            if hasattr(y, "iloc"):
                y = safe_indexing(y, rows)
            else:  # (an array has its own dtype)
                y = np.asarray(y)[rows] if given is None else given
                if y.dtype.kind in "US":
                    # As for X below: a string array is as wide as its longest label, a
                    # private one included, and the transformer's fitted classes_ carried
                    # that width (red team 22). The public labels get their own.
                    y = np.array(y.tolist(), dtype=y.dtype.kind)
        X_public = safe_indexing(X, rows)
        if isinstance(X_public, np.ndarray) and X_public.dtype.kind in "US":
            # A fixed-width string array is as wide as its longest cell, private ones
            # included; the encoders' fitted categories would carry that width (red
            # team 20). The public rows get their own.
            X_public = np.array(X_public.tolist(), dtype=X_public.dtype.kind)
        self.transformer_.fit(X_public, y)
        self.n_public_ = int(rows.size)
        return self

    def fit_transform(self, X, y=None, *, public_mask=None):
        """Fit ``transformer`` on the public rows, then transform every row.

        The wrapped transformer's warnings while it transforms these rows are not shown:
        the rows include private ones, and a warning that fires for one of them (an
        unseen category under ``OneHotEncoder(handle_unknown="warn")``, ...) would tell
        the data set from its neighbour, outside any charge. Errors are raised without
        the values (see :meth:`transform`).

        Parameters
        ----------
        X : {ndarray, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Every row; only the public ones are read by the fit (a list is refused, see
            :meth:`fit`).
        y : array-like of shape (n_samples,), default=None
            Targets, for transformers that use them; only the public rows are read.
        public_mask : array-like of bool of shape (n_samples,)
            True for public rows.

        Returns
        -------
        X_new : {ndarray, sparse matrix, DataFrame}
            Every row of ``X``, transformed.
        """
        self.fit(X, y, public_mask=public_mask)
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # (private rows: see fit_afresh)
            warnings.simplefilter("ignore")
            return self.transform(X)

    def transform(self, X):
        """Transform every row with the transformer fit on public rows.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Rows to transform, in the container ``fit`` saw.

        Returns
        -------
        X_new : {ndarray, sparse matrix, DataFrame}
            What the wrapped transformer returns (a DataFrame indexed like ``X`` under
            ``set_output(transform="pandas")``).
        """
        check_is_fitted(self)
        X = _as_container(X)
        validate_data(self, X, reset=False, skip_check_array=True)
        with values_hidden("X"):  # (an encoder's unknown category is a private value)
            return self.transformer_.transform(X)

    @available_if(_transformer_has("inverse_transform"))
    def inverse_transform(self, X):
        """Map transformed rows back with the wrapped transformer's ``inverse_transform``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_components)
            Transformed rows.

        Returns
        -------
        X_original : {ndarray, sparse matrix, DataFrame}
            What the wrapped transformer returns.
        """
        check_is_fitted(self)
        return self.transformer_.inverse_transform(X)

    @available_if(_transformer_has("get_feature_names_out"))
    def get_feature_names_out(self, input_features=None):
        """Output feature names, from the wrapped transformer fit on public rows.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Passed on to the wrapped transformer's ``get_feature_names_out``; ``None``
            uses the names it saw in ``fit`` (a DataFrame's columns) or ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The transformed feature names.
        """
        check_is_fitted(self)
        return self.transformer_.get_feature_names_out(input_features)

    def set_output(self, *, transform=None):
        """Set the output container of ``transform`` and ``fit_transform``.

        The setting is passed on to the wrapped transformer (as ``Pipeline`` does for its
        steps), so a ``ColumnTransformer`` inside keeps its columns' dtypes.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None, default=None
            ``"pandas"`` returns a DataFrame indexed like the input, with the wrapped
            transformer's feature names; ``None`` leaves the configuration unchanged.

        Returns
        -------
        self : PublicFitTransformer
            This transformer.
        """
        super().set_output(transform=transform)
        if transform is not None:
            for inner in (self.transformer, getattr(self, "transformer_", None)):
                if hasattr(inner, "set_output"):
                    inner.set_output(transform=transform)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.transformer)
        # What the input may be is the wrapped transformer's business: it sees the input
        # in its own container.
        for name in ("allow_nan", "sparse", "categorical", "string"):
            setattr(tags.input_tags, name, getattr(inner.input_tags, name))
        tags.target_tags.required = inner.target_tags.required
        return tags
