"""Generators for the settings of the papers skhybrid implements.

Every generator takes a ``random_state`` and needs no network. They return plain arrays:
``make_shifted_gaussians`` and ``make_label_determined_halfspace`` with the row mask of
their setting, ``make_parity_threshold`` with the secret it planted (the masks of the
hybrid model are the caller's choice), ``make_adaptation_data`` a Bunch of the source,
target and test samples. The seed of a generator must differ from the seed
of the mechanism run on its output: with the same seed the mechanism's public
randomness (e.g. the level assignment of local agents) replays the data's random stream
and is correlated with the data.
"""

import math

import numpy as np
from scipy.stats import norm

from .adaptation._data import make_adaptation_data

__all__ = [
    "make_adaptation_data",
    "make_label_determined_halfspace",
    "make_parity_threshold",
    "make_shifted_gaussians",
]


def make_shifted_gaussians(n_curator, n_local, *, n_features=20, n_shifted=3, target_scale=0.02,
                           minority=0.05, n_test=0, random_state=None):
    """Transfer from a source to a narrower target (Kohen & Sheffet, App. C).

    The source S is N(0, I_d). The target T shrinks the first ``n_shifted`` coordinates to
    standard deviation ``target_scale``; the labelling halfspace lives on those
    coordinates and gives the label −1 to a ``minority`` fraction of T. Curator rows come
    from S, local agents' rows from T.

    Parameters
    ----------
    n_curator : int
        Number of curator rows (drawn from the source S).
    n_local : int
        Number of local agents' rows (drawn from the target T).
    n_features : int, default=20
        Dimension d.
    n_shifted : int, default=3
        Number k of coordinates that T shrinks (App. C uses k = 10 in d = 500).
    target_scale : float, default=0.02
        Standard deviation of T on the shrunk coordinates.
    minority : float, default=0.05
        Fraction of T's mass labelled −1 (App. C's α).
    n_test : int, default=0
        Size of the test sample drawn from T.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw.

    Returns
    -------
    X : ndarray of shape (n_curator + n_local, n_features)
        Curator rows first, then local rows.
    y : ndarray of {−1, +1}
        Labels of every row.
    curator_mask : ndarray of bool
        True for the first ``n_curator`` rows.
    X_test, y_test : ndarray
        A test sample of size ``n_test`` from T.
    """
    rng = np.random.default_rng(random_state)
    w = np.zeros(n_features)
    w[:n_shifted] = 1 / math.sqrt(n_shifted)
    b = target_scale * norm.ppf(minority)

    def target(n):
        Z = rng.normal(size=(n, n_features))
        Z[:, :n_shifted] *= target_scale
        return Z

    X = np.vstack([rng.normal(size=(n_curator, n_features)), target(n_local)])
    X_test = target(n_test)
    mask = np.r_[np.ones(n_curator, bool), np.zeros(n_local, bool)]
    return X, np.where(X @ w > b, 1, -1), mask, X_test, np.where(X_test @ w > b, 1, -1)


def make_label_determined_halfspace(n_samples, *, n_features=2, offset=0.2, label_noise=0.0,
                                    random_state=None):
    """The label-determined model of Bassily, Moran & Nandi: privacy follows the label.

    X is uniform on [−1, 1]^d; the private class (1) lies beyond the hyperplane
    ``x·1/√d = offset``, the public class (0) inside. With ``label_noise`` a fraction of
    labels is flipped (the agnostic setting). Rows of the public class are public.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    n_features : int, default=2
        Dimension d.
    offset : float, default=0.2
        Offset of the separating hyperplane along the diagonal direction.
    label_noise : float, default=0.0
        Fraction of labels flipped.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw.

    Returns
    -------
    X, y, public_mask : ndarray
        Features, labels in {0, 1}, and the mask ``y == 0``.
    """
    rng = np.random.default_rng(random_state)
    X = rng.uniform(-1, 1, size=(n_samples, n_features))
    y = (X @ (np.ones(n_features) / math.sqrt(n_features)) > offset).astype(int)
    y = np.where(rng.random(n_samples) < label_noise, 1 - y, y)
    return X, y, y == 0


def make_parity_threshold(n_samples, *, n_parity=8, threshold_bits=8, threshold=None,
                          random_state=None):
    """Parity XOR threshold (Beimel et al., §3): y = ⟨k, x⟩ ⊕ 1[t ≥ θ].

    X has ``n_parity`` uniform bits followed by one integer feature t uniform on
    ``[0, 2^threshold_bits)`` (the ``threshold_feature=-1`` layout of skhybrid.hybrid).

    Parameters
    ----------
    n_samples : int
        Number of rows.
    n_parity : int, default=8
        Number of parity bits.
    threshold_bits : int, default=8
        Bits b of the threshold feature's domain.
    threshold : int or None, default=None
        The threshold θ; ``None`` takes ``int(0.37 * 2**threshold_bits)``.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draw (the secret parity ``k`` too).

    Returns
    -------
    X : ndarray of int64, shape (n_samples, n_parity + 1)
        Parity bits, then the threshold feature.
    y : ndarray of {0, 1}
        The labels.
    secret : tuple
        The secret ``(k, θ)``.
    """
    rng = np.random.default_rng(random_state)
    k = rng.integers(0, 2, n_parity)
    theta = int(0.37 * 2**threshold_bits) if threshold is None else int(threshold)
    X = np.column_stack([rng.integers(0, 2, (n_samples, n_parity)),
                         rng.integers(0, 2**threshold_bits, n_samples)])
    y = (X[:, :n_parity] @ k + (X[:, -1] >= theta)) % 2
    return X, y, (k, theta)
