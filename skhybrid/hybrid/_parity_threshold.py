"""Parity XOR threshold in the hybrid model (BKNSS §3, Lemma 3.3): a non-interactive protocol.

The concept class is ``ParityThresh_{b,c} = {f_{k,t}(x, y) = ⟨k, x⟩ ⊕ 1[y ≥ t]}`` with
``x ∈ {0,1}^c`` and ``y ∈ [0, 2^b)`` (BKNSS §3). Neither model learns it alone (Lemma 3.1:
``Ω(b)`` curator samples; Lemma 3.2: ``2^{Ω(c)}`` local messages); together they do.
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_epsilon_halves, check_group_nonempty, check_mask, values_hidden
from ..accounting import PrivacyAccountant, calibrate_pure_epsilon
from ..learners._parity import (
    binary_labels,
    check_binary_features,
    parity_event,
    resolve_floor,
    select_candidate,
)
from ..learners._parity_core import boosted_private_parity
from ..mechanisms.gf2 import pack_bits, solve_affine
from ..mechanisms.laplace import LaplaceMechanism
from ..mechanisms.local.cdf import HierarchicalCDF
from ..utils._sklearn_compat import (
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    validate_data,
    validate_params,
)

__all__ = ["ParityThresholdClassifier", "LaplaceTreeCDF", "EmpiricalCDF"]

#: The curator-only CDF keeps the top ``min(b, 20)`` levels of its dyadic tree.
_TREE_MAX_LEVELS = 20


# ---------------------------------------------------------------------------- columns


#: float64 holds every integer exactly only below 2**53: a float threshold column is
#: accepted up to this many bits, an integer column up to every supported ``b``.
_FLOAT_EXACT_BITS = 53


def check_threshold_values(t, bits, name="threshold feature", at_fit=True):
    """Return the threshold column as int64, or raise if it leaves ``[0, 2^bits)``.

    The domain ``[0, 2^b)`` is public (the ``threshold_bits`` parameter); private values
    outside it are rejected, never clipped silently (docs/privacy_model.rst). ``at_fit``
    only words the refusal (at fit nothing is charged; at predict no row is predicted).

    Integer columns are checked and converted in integer arithmetic, so every value of
    the domain is kept exactly up to ``b = 62``. A float column is accepted only for
    ``b <= 53`` (float64 cannot tell ``2^53`` from ``2^53 + 1``, so the values may
    already be rounded): that refusal depends on the dtype and ``b`` alone, never on a
    private value. An object column of numbers is read entry by entry, each exactly (an
    integer-valued float as that integer), so whether it is kept depends on its values
    being in the domain, never on the Python type of one entry.
    """
    bits = int(bits)
    high = 1 << bits
    outcome = ("the data set is refused before anything is charged" if at_fit else
               "no row is predicted (increasing threshold_bits means refitting)")
    t = np.asarray(t)
    if t.dtype == object:
        t = _object_column(t, bits, name, outcome)
    if t.dtype.kind == "b":
        t = t.astype(np.int64)
    if t.dtype.kind in "iu":
        t = t.astype(np.uint64 if t.dtype.kind == "u" else np.int64, copy=False)
        bad = (t >= t.dtype.type(high)) if t.dtype.kind == "u" else (t < 0) | (t >= high)
    else:
        if bits > _FLOAT_EXACT_BITS:
            raise ValueError(
                f"threshold_bits={bits} needs the {name} as an integer dtype (e.g. int64): "
                f"a float column holds integers exactly only below 2**{_FLOAT_EXACT_BITS}, so "
                "larger values may already be rounded. Pass X with an integer dtype, or use "
                f"threshold_bits <= {_FLOAT_EXACT_BITS}; {outcome}.")
        with values_hidden(f"the {name}"):
            t = np.asarray(t, dtype=np.float64)
        bad = ~np.isfinite(t) | (t < 0) | (t >= float(high)) | (t != np.floor(t))
    if bad.any():
        raise _out_of_domain(name, high, outcome)
    return t.astype(np.int64)


def _out_of_domain(name, high, outcome):
    # The offending value, its row and their number are private: none is printed.
    return ValueError(
        f"The {name} must hold integers in [0, 2**threshold_bits) = [0, {high}); "
        "some rows hold other values. Encode it as such integers or increase "
        f"threshold_bits; {outcome}.")


def _object_column(t, bits, name, outcome):
    """An object column of numbers, entry by entry and exactly: integers (Python, numpy,
    bool) as they are, floats whose value is an integer as that integer, any other float
    as out of the domain. Other objects (strings, decimals) take the float path
    (``b <= 53``), as the whole column."""
    high = 1 << bits
    ints = []
    for v in t.ravel():  # one pass over the column's entries, Python objects
        if isinstance(v, (Integral, np.integer, np.bool_)):
            ints.append(int(v))
        elif isinstance(v, (float, np.floating)):
            f = float(v)  # (exact unless v is a longdouble that no float holds)
            if f != v or not f.is_integer():  # (nan, ±inf, fractions)
                raise _out_of_domain(name, high, outcome)
            ints.append(int(f))
        else:
            return t  # converted (and checked) as floats
    if any(v < 0 or v >= high for v in ints):
        raise _out_of_domain(name, high, outcome)
    return np.array(ints, dtype=np.int64).reshape(t.shape)


def split_columns(X, threshold_feature, *, check_parity=True):
    """Split ``X`` into (parity columns, threshold column index) after validating the index."""
    n_features = X.shape[1]
    tf = threshold_feature
    if not -n_features <= tf < n_features:
        raise ValueError(
            f"threshold_feature={tf} is out of range for X with {n_features} columns; pass a "
            f"column index in [-{n_features}, {n_features})."
        )
    tf %= n_features
    rest = np.delete(X, tf, axis=1)
    if check_parity:
        rest = check_binary_features(rest, "The parity columns of X (all but threshold_feature)")
    return rest, tf


def augment(Xp):
    """Append the constant-1 column: the threshold bit of a block is an affine term.

    BKNSS Lemma 3.3 learns ``k_ℓ ∈ {0,1}^{c+1}`` on ``x ∘ 1``: on a block where
    ``1[y ≥ t]`` is constant ``v``, the label is the parity ``(k, v)`` of ``x ∘ 1``.
    """
    return np.hstack([Xp, np.ones((Xp.shape[0], 1), dtype=np.uint8)])


# ---------------------------------------------------------------------------- CDFs


class EmpiricalCDF:
    """Exact empirical CDF (the non-private baseline, ``epsilon=np.inf``)."""

    def __init__(self, values):
        self.values = np.sort(np.asarray(values))

    def cdf(self, w):
        return np.searchsorted(self.values, np.asarray(w), side="right") / self.values.size


class LaplaceTreeCDF:
    """Central ε-DP CDF on ``[0, 2^b)`` by a Laplace-noised dyadic tree (curator side).

    Counts the values under every prefix of length ``l = 1..L`` (``L = min(b, 20)``) and
    adds ``Lap(2L/ε)`` to each count. Replacing one value changes two counts per level by
    one, so the ``L1`` sensitivity of the ``L``-level histogram is ``2L`` (Dwork, McSherry,
    Nissim, Smith 2006; the hierarchical mechanism of Hay et al. 2010). A query
    ``#{x ≤ w}`` sums at most ``L`` noisy nodes of its dyadic decomposition (truncated at
    level ``L``; for ``b > 20`` the answer ignores the last ``b − L`` bits of ``w + 1``).
    Used when no local agent exists (``curator_mask=None``).

    Parameters
    ----------
    epsilon : float
    bits : int
    """

    def __init__(self, epsilon, bits):
        self.epsilon = float(epsilon)
        self.bits = int(bits)
        self.levels = min(self.bits, _TREE_MAX_LEVELS)

    def mechanism(self):
        return LaplaceMechanism(self.epsilon, sensitivity=2.0 * self.levels)

    def event(self, population="central", source=""):
        return self.mechanism().event(population=population, source=source)

    def fit(self, values, rng):
        values = np.asarray(values, dtype=np.int64)
        self.n_ = values.size
        exact = [np.bincount(values >> (self.bits - level), minlength=1 << level)
                 for level in range(1, self.levels + 1)]
        # One release of the whole histogram (l1 sensitivity 2L), integer counts on the
        # exact lattice of the Laplace mechanism: no low bits to leak.
        noisy = self.mechanism()(np.concatenate(exact), rng)
        self.counts_ = np.split(noisy, np.cumsum([c.size for c in exact])[:-1])
        return self

    def cdf(self, w):
        u = np.asarray(w, dtype=np.int64) + 1  # #{x ≤ w} = #{x < w + 1}
        out = np.zeros(u.shape, dtype=np.float64)
        for level in range(1, self.levels + 1):
            pre = u >> (self.bits - level)
            hit = (pre & 1).astype(bool)
            out[hit] += self.counts_[level - 1][pre[hit] - 1]
        out = np.clip(out / max(self.n_, 1), 0.0, 1.0)
        out[u >= (1 << self.bits)] = 1.0
        return out


def decode_class(hypotheses):
    """Project the curator's message onto ParityThresh: one ``k`` and a monotone bit.

    Every block off the threshold is labelled by ``(k*, v_ℓ)`` with ``v_ℓ = 0`` below the
    threshold block and ``1`` above it (BKNSS Lemma 3.3 proof). The referee takes ``k``
    as the most frequent parity part among non-⊥ outputs and the cut ``j`` (bits
    ``0^j 1^{K−j}``) agreeing with the most non-⊥ threshold bits, the middle of the tied
    cuts. Pure post-processing; ⊥ blocks and a garbled threshold block both get the
    class's best guess instead of a neighbour's. Returns None if every block is ⊥.
    """
    ok = [h for h in hypotheses if h is not None]
    if not ok:
        return None
    k = select_candidate([h[:-1].copy() for h in ok])
    K = len(hypotheses)
    bit = np.array([-1 if h is None else int(h[-1]) for h in hypotheses])
    # agreement of cut j with the observed bits: #(0s before j) + #(1s at or after j)
    zeros_before = np.concatenate([[0], np.cumsum(bit == 0)])
    ones_after = np.concatenate([np.cumsum((bit == 1)[::-1])[::-1], [0]])
    score = zeros_before + ones_after
    best = np.flatnonzero(score == score.max())
    j = best[best.size // 2]  # middle of the tied cuts (the upper one of two)
    bits = (np.arange(K) >= j).astype(np.uint8)
    return np.column_stack([np.tile(k, (K, 1)), bits]).astype(np.uint8)


def route(cdf_values, edges):
    """Block index of each point: the block whose CDF range ``(e_{ℓ−1}, e_ℓ]`` holds ``q``.

    BKNSS Lemma 3.3's referee uses ``ℓ(y) = ⌈q(y)/α⌉``; with blocks of unequal size
    (``m`` not a multiple of ``1/α``) the edges are the blocks' cumulative fractions.
    """
    return np.searchsorted(edges, cdf_values, side="left")


def fill_bottoms(hypotheses):
    """Replace ⊥ blocks by the nearest non-⊥ block (ties: the left one); None if all ⊥.

    Post-processing of the curator's message. Off the threshold block every clean block
    shares ``k*`` and the threshold bit is monotone in the block index, so a neighbour is
    the best guess the referee has.
    """
    ok = np.array([h is not None for h in hypotheses])
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    K = len(hypotheses)
    pos = np.searchsorted(idx, np.arange(K))
    left = idx[np.clip(pos - 1, 0, idx.size - 1)]
    right = idx[np.clip(pos, 0, idx.size - 1)]
    use_right = np.abs(right - np.arange(K)) < np.abs(np.arange(K) - left)
    nearest = np.where(ok, np.arange(K), np.where(use_right, right, left))
    return np.vstack([hypotheses[j] for j in nearest]).astype(np.uint8)


# ---------------------------------------------------------------------------- estimator


class _HybridParams:
    """Parameter validation shared by the hybrid threshold estimators."""

    # Pure DP: δ is always 0 (read by PrivateEstimatorMixin; not a parameter).
    delta = 0.0

    def _n_blocks(self):
        # 1/α blocks (BKNSS Lemma 3.3); the tolerance keeps 1/0.1 at 10.
        return max(1, math.ceil(1.0 / self.alpha - 1e-9))

    def _check_masks(self, curator_mask, n, index=None):
        mask = check_mask(curator_mask, n, "curator_mask", index=index)
        if curator_mask is None:
            return np.ones(n, dtype=bool)
        check_group_nonempty(mask, "curator_mask", "curator rows", trusted=True)
        check_group_nonempty(mask, "curator_mask", "local agents", trusted=False)
        return mask


class ParityThresholdClassifier(_HybridParams, PrivateEstimatorMixin, ClassifierMixin,
                                BaseEstimator):
    """Hybrid-model learner of parity XOR threshold (BKNSS §3, Lemma 3.3; non-interactive).

    Labels are ``⟨k, x⟩ ⊕ 1[t ≥ θ]`` with ``x`` the binary parity columns and ``t`` the
    threshold column. The two parties talk to the referee once each, independently:

    * **Curator** (rows with ``curator_mask`` True): sorts its rows by ``t``, cuts them into
      ``K = ⌈1/α⌉`` blocks, and runs the ``(ε/K)``-DP parity learner (PPAR, BKNSS
      Thm 2.17; :func:`~skhybrid.learners._parity_core.private_parity` with the ⊥ floor) on
      each block's augmented rows ``x ∘ 1``. Only one block can straddle ``θ``; on every
      other block the label is a parity of ``x ∘ 1``.
    * **Local agents** (the other rows): one ε-LDP report each of ``t`` to the hierarchical
      CDF protocol (BKNSS Thm 2.15; :class:`~skhybrid.mechanisms.local.HierarchicalCDF`).
    * **Referee**: routes a test point to the block ``ℓ`` whose CDF range holds
      ``q(t)`` and predicts ``⟨k_ℓ, x ∘ 1⟩``, after decoding ⊥ blocks (``referee``).

    Parameters
    ----------
    threshold_feature : int, default=-1
        Column index of the ordered threshold feature; every other column is a 0/1 parity
        feature.
    threshold_bits : int, default=8
        ``b``: the threshold feature's public domain is the integers ``[0, 2^b)``.
    alpha : float in (0, 1), default=0.1
        Target error; the curator uses ``⌈1/α⌉`` blocks.
    epsilon : float, default=1.0
        The ε of both populations: the curator's rows (central) and each local agent.
        ``np.inf`` runs the non-private protocol (exact GF(2) solves, exact CDF).
    referee : {"class", "nearest"}, default="class"
        How the referee turns the curator's message into per-block hypotheses (both are
        post-processing): ``"nearest"`` uses each block's own parity and gives a ⊥ block
        its nearest non-⊥ neighbour's (the paper's referee, plus a ⊥ rule);
        ``"class"`` projects the message onto the concept class (:func:`decode_class`:
        one shared ``k``, a monotone threshold bit), which also repairs ⊥ blocks next
        to the threshold.
    n_boost : int, default=2
        Disjoint sub-chunks per block (each block keeps ``ε/K`` by parallel composition;
        the most frequent non-⊥ output wins). More sub-chunks make ⊥ rarer but each sees
        fewer rows (2 measured best at m = 10⁴, α = 0.1–0.2).
    rate : {"tanh", "klnrs"}, default="tanh"
        PPAR inclusion rate (see :class:`~skhybrid.learners.PrivateParityClassifier`).
    floor : float or "min", default="min"
        PPAR ⊥ floor, at least ``(1-p)/(3-p)``; ``"min"`` uses that bound (≈ 1/3 at the
        small per-block ε), which leaves fewer ⊥ blocks than 0.5.
    classes : array-like of shape (2,) or None, default=None
        The label set (a public domain). ``None`` reads it from ``y`` with a
        :class:`~skhybrid.PrivacyLeakWarning`: the label set, ``classes_`` and whether the
        fit succeeds then depend on private labels. A label outside a declared set is
        refused before anything is charged, naming no value.
    accountant : PrivacyAccountant or None, default=None
        Charged (check-and-spend) before the fit reads a private row; ``None`` records
        the spend only in ``privacy_spent_``.
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
    classes_ : ndarray of shape (2,)
    n_blocks_ : int
    block_outputs_ : list of (ndarray of shape (c+1,) or None)
        The curator's message: one parity of ``x ∘ 1`` per block (None = ⊥).
    block_hypotheses_ : ndarray of shape (n_blocks, c+1) or None
        The referee's per-block hypotheses after filling ⊥ blocks (None if all are ⊥:
        the classifier then predicts ``classes_[0]``).
    block_edges_ : ndarray of shape (n_blocks - 1,)
        Cumulative fractions of curator rows at the block boundaries.
    cdf_ : object with a ``cdf(w)`` method
        The referee's CDF estimate of the threshold feature.
    curator_only_ : bool
        True when ``curator_mask`` was None (see Notes).
    privacy_spent_ : dict
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int

    Notes
    -----
    Privacy (BKNSS Lemma 3.3). Sorting makes the blocks depend on every row: replacing one
    curator row changes at most one element of *every* block (the rows between the old
    and new position shift by one), so the blocks are **not** disjoint across neighbours
    and the ``K`` runs compose: ``K · ε/K = ε`` by basic composition
    (:ref:`notes_sorted_blocks`). Each local agent sends one ε-LDP report. Events: central
    ``private_parity(ε/K) × K``; local ``hierarchical_cdf(ε)``.

    ``curator_mask=None`` (every row at the curator; how sklearn's checks call ``fit``):
    there is no local agent, so the curator spends ``ε/2`` on the blocks (``ε/(2K)``
    each) and ``ε/2`` on its own CDF through a Laplace dyadic tree
    (:class:`LaplaceTreeCDF`); still ε-DP. This is also the "curator-only" baseline of
    the separation experiment. An explicit mask leaving either group empty raises.

    Utility: Lemma 3.3 needs ``m = O(c log(1/(αβ))/(α⁴ ε))``-ish curator rows (see
    :mod:`skhybrid.hybrid._constants`) and ``n = O(b³ log(b/(αβ))/(α⁴ ε²))`` agents.
    The hypothesis errs on at most ``18αm`` curator rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.hybrid import ParityThresholdClassifier
    >>> rng = np.random.default_rng(0)
    >>> n, c, b = 40000, 6, 8
    >>> X = np.column_stack([rng.integers(0, 2, (n, c)), rng.integers(0, 2**b, n)])
    >>> k = np.array([1, 0, 1, 1, 0, 1])
    >>> y = (X[:, :c] @ k + (X[:, -1] >= 100)) % 2
    >>> curator = np.arange(n) < 10000
    >>> clf = ParityThresholdClassifier(threshold_bits=b, alpha=0.1, classes=[0, 1],
    ...                                 random_state=0)
    >>> clf = clf.fit(X, y, curator_mask=curator)
    >>> bool(clf.score(X, y) > 0.8)
    True
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        "threshold_feature": [Integral],
        "threshold_bits": [Interval(Integral, 1, 62, closed="both")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "referee": [StrOptions({"class", "nearest"})],
        "n_boost": [Interval(Integral, 1, None, closed="left")],
        "rate": [StrOptions({"tanh", "klnrs"})],
        "floor": [Interval(Real, 0, 1, closed="both"), StrOptions({"min"})],
        "accountant": [PrivacyAccountant, None],
        "classes": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, threshold_feature=-1, threshold_bits=8, alpha=0.1, epsilon=1.0, *,
                 referee="class", n_boost=2, rate="tanh", floor="min", classes=None,
                 accountant=None, random_state=None, verbose=0):
        self.threshold_feature = threshold_feature
        self.threshold_bits = threshold_bits
        self.alpha = alpha
        self.epsilon = epsilon
        self.referee = referee
        self.n_boost = n_boost
        self.rate = rate
        self.floor = floor
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def _events(self, K, curator_only, has_local):
        """Every event of the fit, from parameters and the mask alone."""
        name = type(self).__name__
        if self.nonprivate:
            events = [nonprivate_event("central", name)]
            return events + ([nonprivate_event("local", name)] if has_local else [])
        eps_blocks = self.epsilon / 2 if curator_only else self.epsilon
        eps_block = calibrate_pure_epsilon(eps_blocks, 0.0, K)
        floor = resolve_floor(
            eps_block, self.rate, self.floor,
            context=f"{name}(epsilon={self.epsilon!r}) learns each of its K={K} parity "
                    f"blocks at epsilon={eps_block:.4g}"
                    + (" (half of epsilon: curator_mask=None)" if curator_only else ""))
        events = [parity_event(eps_block, count=K, rate=self.rate, floor=floor,
                               n_boost=int(self.n_boost), source=name)]
        if curator_only:
            events.append(LaplaceTreeCDF(self.epsilon / 2, self.threshold_bits).event(source=name))
        else:
            events.append(HierarchicalCDF(self.epsilon, self.threshold_bits).event(source=name))
        return events

    def fit(self, X, y, *, curator_mask=None):
        """Run the protocol.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 parity columns plus the integer threshold column ``threshold_feature``.
        y : array-like of shape (n_samples,)
            Two-class labels.
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True for the curator's rows, False for local agents. ``None``: every row is at
            the curator (see Notes).

        Returns
        -------
        self : ParityThresholdClassifier
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X, y = validate_data(self, X, y, dtype=None)
        self.classes_, bits = binary_labels(y, type(self).__name__, self.classes)
        Xp, tf = split_columns(X, self.threshold_feature)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        mask = self._check_masks(curator_mask, X.shape[0], x_index)
        curator_only = curator_mask is None
        if curator_only:
            check_epsilon_halves(self.epsilon, "curator_mask=None: the parity blocks and the "
                                 "threshold's CDF are both learnt from the curator's rows")
        K = self._n_blocks()

        self._charge(self._events(K, curator_only, has_local=not curator_only))
        rng = self._make_rng()

        # Curator: sort (stable, ties by row order), cut K blocks, one PPAR per block.
        cur = np.flatnonzero(mask)
        order = cur[np.argsort(t[cur], kind="stable")]
        blocks = np.array_split(order, K)
        Xa = augment(Xp)
        if not self.nonprivate:
            eps_block = calibrate_pure_epsilon(
                self.epsilon / 2 if curator_only else self.epsilon, 0.0, K)
            floor = resolve_floor(eps_block, self.rate, self.floor)
        outputs = []
        for blk in blocks:  # K = ⌈1/α⌉ blocks, not samples
            if self.nonprivate:
                ok, particular, _ = solve_affine(pack_bits(Xa[blk]), bits[blk],
                                                 n_features=Xa.shape[1])
                outputs.append(particular if ok else None)
            else:
                outputs.append(select_candidate(boosted_private_parity(
                    Xa[blk], bits[blk], eps_block, rng, int(self.n_boost), rate=self.rate,
                    floor=floor)))
        self.n_blocks_ = K
        self.block_outputs_ = outputs
        decode = decode_class if self.referee == "class" else fill_bottoms
        self.block_hypotheses_ = decode(outputs)
        self.block_edges_ = np.cumsum([len(b) for b in blocks])[:-1] / max(cur.size, 1)

        # Referee's CDF: local agents' LDP reports, or the curator's own DP tree.
        source = cur if curator_only else np.flatnonzero(~mask)
        if self.nonprivate:
            self.cdf_ = EmpiricalCDF(t[source])
        elif curator_only:
            self.cdf_ = LaplaceTreeCDF(self.epsilon / 2, self.threshold_bits).fit(t[source], rng)
        else:
            self.cdf_ = HierarchicalCDF(self.epsilon, self.threshold_bits).fit(t[source], rng)
        self.curator_only_ = curator_only
        if self.verbose:
            n_bot = sum(o is None for o in outputs)
            print(f"[ParityThresholdClassifier] {K} blocks, {n_bot} returned ⊥; "
                  f"{source.size} rows for the CDF")
        return self

    def _bits(self, X):
        check_is_fitted(self, "block_hypotheses_")
        X = validate_data(self, X, dtype=None, reset=False)
        Xp, tf = split_columns(X, self.threshold_feature)
        t = check_threshold_values(X[:, tf], self.threshold_bits, at_fit=False)
        if self.block_hypotheses_ is None:
            return np.zeros(X.shape[0], dtype=np.int64)
        blk = route(np.asarray(self.cdf_.cdf(t), dtype=float), self.block_edges_)
        H = self.block_hypotheses_[blk].astype(np.int64)
        return (augment(Xp).astype(np.int64) * H).sum(axis=1) & 1

    def predict(self, X):
        """Predict with the routed block's parity of ``x ∘ 1``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 parity columns plus the integer threshold column.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        bits = self._bits(X)  # checks that the model is fitted first
        return self.classes_[bits]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Needs binary parity columns and an integer threshold column; a DP parity per
        # 1/α block needs thousands of rows, far more than sklearn's check datasets.
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags
