"""PrivateParityClassifier: the KLNRS ε-DP parity learner as a scikit-learn classifier."""

from collections import Counter
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import resolve_classes
from ..exceptions import label_repr, warn_degenerate
from ..accounting import PrivacyAccountant, PrivacyEvent
from ..mechanisms.gf2 import pack_bits, solve_affine
from ..utils._sklearn_compat import (
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    validate_data,
    validate_params,
)
from ._parity_core import (
    _check_floor,
    _inclusion_rate,
    _min_floor,
    boosted_private_parity,
    predict_parity,
)

__all__ = ["PrivateParityClassifier", "check_binary_features", "binary_labels"]


def check_binary_features(X, name="X"):
    """Return ``X`` as a uint8 0/1 matrix or raise a ValueError naming the fix.

    Parity features are a categorical domain ({0, 1}); values outside it are rejected
    rather than clipped (docs/privacy_model.rst).
    """
    X = np.asarray(X)
    if X.size and not np.isin(X, (0, 1)).all():
        raise ValueError(
            f"{name} must contain only binary 0/1 parity features; found other values. "
            "Binarise the columns first, e.g. (X > 0).astype(int)."
        )
    return X.astype(np.uint8)


def binary_labels(y, name="PrivateParityClassifier", classes=None):
    """Map two-class labels to 0/1 bits; return ``(classes, bits)`` (``classes[0] ↦ 0``).

    The label set is ``classes`` when declared; otherwise it is read from ``y`` with a
    :class:`~skhybrid.PrivacyLeakWarning` (:func:`~skhybrid._validation.resolve_classes`).
    """
    found, codes = resolve_classes(y, classes, estimator=name, binary=True)
    return found, codes.astype(np.uint8)


def parity_event(epsilon, count=1, rate="tanh", floor=0.5, population="central", source="",
                 **params):
    """The event of ``count`` runs of PPAR at level ``epsilon`` (pure, exactly ε with tanh)."""
    return PrivacyEvent("private_parity", "pure", float(epsilon), count=int(count),
                        population=population, source=source,
                        params={"rate": rate, "floor": float(floor), **params})


def resolve_floor(epsilon, rate, floor, context=""):
    """The ⊥ floor to use: ``floor`` checked against ``(1-p)/(3-p)``, or that minimum for "min".

    PPAR is ``ln((1+p)/(1-p))``-DP iff ``floor ≥ (1-p)/(3-p)`` (docs/notes/building_blocks.rst)
    (≈ 1/3 for small ε); the minimum gives the most non-⊥ outputs at the same ε.
    ``context`` (how the caller's ε became this one) prefixes a refusal of ``rate``.
    """
    try:
        p = _inclusion_rate(epsilon, rate)
    except ValueError as exc:
        if not context:
            raise
        raise ValueError(f"{context}: {exc}") from None
    if isinstance(floor, str):
        if floor != "min":
            raise ValueError(f"floor must be a probability or 'min', got {floor!r}.")
        return _min_floor(p)
    return _check_floor(p, floor)


def select_candidate(outputs):
    """The most frequent non-⊥ parity among ``outputs`` (ties: the earliest); None if all ⊥.

    Pure post-processing of the chunk outputs. On realizable data every non-⊥ output of
    a large enough chunk is the target parity, so this equals "the first non-⊥ output";
    on noisy data a majority is more robust than the first draw.
    """
    found = [r for r in outputs if r is not None]
    if not found:
        return None
    counts = Counter(r.tobytes() for r in found)
    best = max(counts.values())
    return next(r for r in found if counts[r.tobytes()] == best)


class PrivateParityClassifier(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Pure ε-DP parity classifier (Kasiviswanathan et al. 2008; BKNSS Theorem 2.17).

    Learns ``y = ⟨r, x⟩ mod 2`` over binary features. The rows are split into
    ``n_chunks`` disjoint chunks (a data-independent random partition); on each, PPAR
    keeps every row with probability ``p``, solves the kept rows' GF(2) system and returns
    a uniform solution, or ⊥ if the system is inconsistent, and returns ⊥ with probability
    ``floor`` before looking at the data (:ref:`notes_parity_learner`; without this floor
    the learner is not DP at all). The fitted parity is the most frequent non-⊥ chunk output.

    Parameters
    ----------
    epsilon : float, default=1.0
        Pure privacy parameter ε of the whole fit. ``np.inf`` solves the GF(2) system of
        all rows exactly (the non-private baseline; ``parity_`` is None if it is
        inconsistent).
    n_chunks : int, default=4
        Number of disjoint chunks (confidence boosting). Every person is in one chunk, so
        the fit is ε-DP by parallel composition whatever ``n_chunks`` is; more chunks make
        "all ⊥" rarer (probability ``floor**n_chunks`` on realizable data) but leave fewer
        rows per chunk.
    rate : {"tanh", "klnrs"}, default="tanh"
        Inclusion rate ``p``: ``tanh(ε/2)`` (exactly ε-DP for every ε) or the KLNRS
        ``ε/4`` (ε-DP for ε ≤ 3.83 only).
    floor : float or "min", default=0.5
        The ⊥ floor ``q``; must be ``≥ (1-p)/(3-p)``. ``"min"`` uses that bound (≈ 1/3 for
        small ε, fewer ⊥ outputs at the same ε).
    classes : array-like of shape (2,) or None, default=None
        The label set (a public domain). ``None`` reads it from ``y`` with a
        :class:`~skhybrid.PrivacyLeakWarning`: the label set, ``classes_`` and whether the
        fit succeeds then depend on private labels. A label outside a declared set is
        refused before anything is charged, naming no value.
    accountant : PrivacyAccountant or None, default=None
        Charged (one central event of ε) before any row is read.
    random_state : int, RandomState, Generator or None, default=None
        Source of the privacy noise. Leave ``None`` (fresh OS entropy) for a release: a
        seed or a generator is kept by the fitted estimator (``get_params``, pickle),
        which lets whoever holds it replay the noise, and a seed reused across fits
        reuses the noise (a :class:`~skhybrid.SeedReuseWarning` under a finite budget).
        Seeds and generators are for tests and reproductions.
    verbose : int, default=0
        Print progress messages (``0``: silent).

    Attributes
    ----------
    parity_ : ndarray of shape (n_features,) of uint8, or None
        The learned parity vector. None when every chunk returned ⊥; the classifier then
        predicts the constant ``classes_[0]`` (the parity ``r = 0``).
    chunk_outputs_ : list of (ndarray or None)
        The ``n_chunks`` PPAR outputs.
    classes_ : ndarray of shape (2,)
        ``classes_[b]`` is predicted for parity bit ``b``.
    privacy_spent_ : dict
        ``{"central": (ε, 0), "local": (0, 0)}``.
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int

    Notes
    -----
    Privacy: a single PPAR run is pure ``ln((1+p)/(1-p))``-DP when ``floor ≥ (1-p)/(3-p)``
    (:mod:`skhybrid.learners._parity_core`); disjoint chunks compose in parallel, and the
    majority vote is post-processing. Utility: on data labelled by a parity, each chunk of
    ``parity_sample_size(d, α, β, ε)`` rows is non-⊥ and α-accurate with probability
    ``≥ (1 - floor)(1 - β)``.

    References
    ----------
    S. P. Kasiviswanathan, H. K. Lee, K. Nissim, S. Raskhodnikova, A. Smith. What can we
    learn privately? FOCS 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.learners import PrivateParityClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 2, size=(4000, 10))
    >>> r = np.array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0])
    >>> y = X @ r % 2
    >>> clf = PrivateParityClassifier(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.parity_.tolist() == r.tolist()
    True
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "n_chunks": [Interval(Integral, 1, None, closed="left")],
        "rate": [StrOptions({"tanh", "klnrs"})],
        "floor": [Interval(Real, 0, 1, closed="both"), StrOptions({"min"})],
        "accountant": [PrivacyAccountant, None],
        "classes": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    # Pure DP: δ is always 0 (read by PrivateEstimatorMixin; not a parameter).
    delta = 0.0

    def __init__(self, epsilon=1.0, n_chunks=4, *, rate="tanh", floor=0.5, classes=None,
                 accountant=None, random_state=None, verbose=0):
        self.epsilon = epsilon
        self.n_chunks = n_chunks
        self.rate = rate
        self.floor = floor
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y):
        """Learn a parity from binary ``X`` and two-class ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 features; anything else raises ValueError.
        y : array-like of shape (n_samples,)
            Labels of exactly two classes.

        Returns
        -------
        self : PrivateParityClassifier
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        if not self.nonprivate:
            # Parameter errors before charging: they depend on parameters only.
            floor = resolve_floor(self.epsilon, self.rate, self.floor)
        X, y = validate_data(self, X, y, dtype=None)
        self.classes_, bits = binary_labels(y, type(self).__name__, self.classes)
        Xb = check_binary_features(X)

        if self.nonprivate:
            self._charge([nonprivate_event(source=type(self).__name__)])
            consistent, particular, _ = solve_affine(pack_bits(Xb), bits,
                                                     n_features=Xb.shape[1])
            self.chunk_outputs_ = [particular if consistent else None]
        else:
            self._charge([parity_event(self.epsilon, rate=self.rate, floor=floor,
                                       n_chunks=int(self.n_chunks),
                                       source=type(self).__name__)])
            rng = self._make_rng()
            self.chunk_outputs_ = boosted_private_parity(
                Xb, bits, self.epsilon, rng, int(self.n_chunks), rate=self.rate,
                floor=floor)
        self.parity_ = select_candidate(self.chunk_outputs_)
        if self.parity_ is None:
            warn_degenerate(type(self).__name__,
                            f"no parity was found, so it predicts {label_repr(self.classes_[0])} everywhere",
                            "The labels may not be a parity of the features, or there are "
                            "too few rows for this epsilon.")
        if self.verbose:
            n_bot = sum(r is None for r in self.chunk_outputs_)
            print(f"[PrivateParityClassifier] {n_bot}/{len(self.chunk_outputs_)} chunks "
                  "returned ⊥")
        return self

    def predict(self, X):
        """Predict ``classes_[⟨parity_, x⟩ mod 2]`` (``classes_[0]`` when ``parity_`` is None).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 features.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, dtype=None, reset=False)
        Xb = check_binary_features(X)
        if self.parity_ is None:
            return np.full(Xb.shape[0], self.classes_[0])
        return self.classes_[predict_parity(self.parity_, Xb)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Parity is a linear function over GF(2): real-valued data from sklearn's checks
        # is rejected, and no parity fits blob-shaped data.
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags

