"""Private rows handled without a warning: norms, clipping factors and predictions.

A warning that fires for one private row and not for its neighbour is a release outside
any charge. Squaring a row beyond ~1e154 overflows float64: ``np.linalg.norm`` then
prints a ``RuntimeWarning`` and returns ``inf``, so a private row's size would show up in
the fit's warnings, and the row would be zeroed instead of clipped.
"""

import warnings

import numpy as np

__all__ = ["row_norms", "clip_scale", "predict_silently"]


def predict_silently(estimator, X):
    """``estimator.predict(X)`` on rows that may be private, with every warning dropped.

    A decision value beyond float64's range (a finite row near 1e308) makes numpy warn
    ``overflow encountered in matmul``, and a fitted encoder warns about a category it
    never saw: either would tell the data set holding that row from its neighbour.
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return estimator.predict(X)


def row_norms(X):
    """ℓ2 norm of each row of a finite 2-d float array, silently and without overflow.

    Rows whose squared norm overflows are divided by their largest entry first; only a
    norm beyond float64's range itself (above ~1.8e308) is ``inf``.
    """
    with np.errstate(over="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        huge = np.isinf(norms)
        if huge.any():  # rare: the exact path only for the rows that need it
            big = X[huge]
            top = np.abs(big).max(axis=1)
            scaled = big / top[:, None]
            norms[huge] = top * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    return norms


def clip_scale(norms, radius):
    """``min(1, radius / norm)`` per row: the factor that clips a row onto the ball.

    A zero row keeps factor 1; an infinite norm gives 0 (a row beyond float64's range is
    mapped to the origin, which is inside the ball: the sensitivity bound still holds).
    The quotient is formed only where it is below 1, so it cannot overflow: a zero or
    subnormal row with a radius >= 4 made ``radius / tiny`` overflow, and numpy's warning
    told such a row apart.
    """
    norms = np.asarray(norms, dtype=float)
    return np.where(norms > radius, radius / np.maximum(norms, radius), 1.0)
