"""Threshold learning by local agents, and parity-and-threshold in the hybrid model (BKNSS App. A)."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_epsilon_halves, check_mask
from ..accounting import PrivacyAccountant, PrivacyEvent
from ..exceptions import label_repr, warn_degenerate
from ..learners._parity import (
    binary_labels,
    parity_event,
    resolve_floor,
    select_candidate,
)
from ..learners._parity_core import boosted_private_parity, predict_parity
from ..mechanisms import _noise
from ..mechanisms.gf2 import pack_bits, solve_affine
from ..mechanisms.local.cdf import DENSE_MAX_BITS, HierarchicalCDF
from ..mechanisms.local.frequency_oracle import HadamardResponse
from ..mechanisms.local.quantile import QuantileSearch
from ..utils._sklearn_compat import (
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    validate_data,
    validate_params,
)
from ._parity_threshold import (
    EmpiricalCDF,
    LaplaceTreeCDF,
    _HybridParams,
    check_threshold_values,
    split_columns,
)

__all__ = [
    "LocalThresholdClassifier",
    "ParityAndThresholdClassifier",
    "threshold_from_cdf",
    "app_a_threshold",
    "app_a_error_bound",
    "app_a_min_agents",
]

#: Up to this many bits the referee evaluates every threshold of ``[0, 2^b]``; above it
#: the error is minimised exactly over the pieces on which it is constant (empirical CDF,
#: Laplace tree).
_DENSE_SEARCH_BITS = DENSE_MAX_BITS - 1
#: The agents' hierarchical CDF has no such pieces: up to this many bits the referee
#: computes its estimate at every one of the ``2^{b+1}`` encoded values (the mechanism's
#: dense table, or one fast Walsh-Hadamard transform per deeper level); beyond it such a
#: fit is refused before the charge (``2^{b+1}`` values no longer fit in memory).
_HIERARCHICAL_SEARCH_BITS = 21


def encode_labelled(t, labels, bits):
    """One integer per agent: the label as bit ``b`` on top of ``t`` (domain ``[0, 2^{b+1})``)."""
    return (labels.astype(np.int64) << bits) | t


def _refuse_unsearchable(bits, what):
    raise ValueError(
        f"threshold_bits={bits} is too large for {what}: the referee minimises the estimated "
        "error exactly over all 2**threshold_bits + 1 thresholds, which the agents' "
        f"hierarchical CDF supports up to threshold_bits={_HIERARCHICAL_SEARCH_BITS}. Coarsen "
        f"the threshold feature (drop its low bits) to at most {_HIERARCHICAL_SEARCH_BITS} "
        "bits, or "
        "use LocalThresholdClassifier(method='app-a'); nothing was charged.")


def threshold_from_cdf(cdf, bits):
    """Empirical-risk-minimising threshold from a CDF ``G`` of the encoded ``(label, t)``.

    With ``u = label·2^b + t`` and ``G(w) = Pr[u ≤ w]``, the error of "predict 1 iff
    ``t ≥ θ``" is ``Pr[label=1, t<θ] + Pr[label=0, t≥θ] = G(2^b + θ − 1) − G(θ − 1)``
    (``G(−1) = 0``), for ``θ ∈ [0, 2^b]``. The minimum is taken over **all** ``2^b + 1``
    thresholds, exactly: for ``b <= 19``, and for the agents' hierarchical CDF up to
    ``b = 21`` (its estimate at every encoded value,
    :meth:`~skhybrid.mechanisms.local.HierarchicalCDF.cdf_table`), every
    threshold is evaluated; above, the estimated error is constant between the CDF's
    breakpoints (an empirical CDF steps only at ``θ = (u mod 2^b) + 1``; the Laplace tree,
    truncated at ``L`` levels, only at multiples of ``2^{b+1−L}``), so the first
    threshold of each piece is evaluated. Ties go to the smallest threshold. If ``G`` has sup error ``a``, the returned ``θ`` has
    empirical error within ``4a`` of the best threshold (post-processing).

    Parameters
    ----------
    cdf : EmpiricalCDF, LaplaceTreeCDF or HierarchicalCDF
        A fitted CDF of the encoded values on ``b + 1`` bits (a hierarchical CDF only for
        ``b <= 21``).
    bits : int
        ``b``.

    Returns
    -------
    theta : int in [0, 2^bits]
    errors : ndarray
        Estimated error of each piece: every threshold in ``[starts[i], starts[i+1])``
        (the last piece is ``{2^b}``) has estimated error ``errors[i]``.
    starts : ndarray of int64
        The first threshold of each piece (every threshold ``0..2^b`` when each one is
        evaluated).
    """
    top = 1 << bits
    if isinstance(cdf, HierarchicalCDF) and cdf.bits > DENSE_MAX_BITS:
        if bits > _HIERARCHICAL_SEARCH_BITS:
            _refuse_unsearchable(bits, "an exact search on a HierarchicalCDF")
        table = cdf.cdf_table()  # every encoded value at once: cdf.cdf over the domain
        starts = np.arange(top + 1, dtype=np.int64)
        lower = np.concatenate([[0.0], table[:top]])
        errors = table[top - 1:] - lower
        return int(np.argmin(errors)), errors, starts
    if bits <= _DENSE_SEARCH_BITS:
        starts = np.arange(top + 1, dtype=np.int64)
    elif isinstance(cdf, EmpiricalCDF):
        # G(θ−1) steps at θ = u + 1 (u < 2^b), G(2^b+θ−1) at θ = u − 2^b + 1 (u ≥ 2^b).
        steps = (np.asarray(cdf.values, dtype=np.int64) & (top - 1)) + 1
        starts = np.unique(np.concatenate([np.array([0, top], dtype=np.int64), steps]))
    elif isinstance(cdf, LaplaceTreeCDF):
        # cdf(w) reads only (w + 1) >> (b + 1 − L): constant on blocks of 2^{b+1−L}.
        starts = np.arange(0, top + 1, 1 << (cdf.bits - cdf.levels), dtype=np.int64)
    else:
        _refuse_unsearchable(bits, f"an exact search on a {type(cdf).__name__}")
    query = cdf.cdf
    lower = np.zeros(starts.shape)
    pos = starts > 0
    lower[pos] = query(starts[pos] - 1)
    upper = query(top + starts - 1)
    errors = np.asarray(upper, dtype=float) - lower
    return int(starts[np.argmin(errors)]), errors, starts


# ------------------------------------------------------------------ App. A (faithful)

#: Failure probability used to size each quantile round (the constants of the quantile
#: search in docs/notes/building_blocks.rst);
#: only the *minimum* number of agents depends on it, never the reports.
_APP_A_DESIGN_BETA = 0.05
#: Largest mass tolerance passed to the quantile search, which needs ``λ < 1``; the
#: minimum number of agents (:func:`app_a_min_agents`) is computed at this ``λ``.
_APP_A_MAX_LAMBDA = 0.999999


def _app_a_shape(bits, alpha):
    """``(K, n_q, T)``: ``K = ⌈4/α⌉`` bins, ``n_q = K − 1`` quantiles, ``T = b + 2`` rounds.

    BKNSS App. A: quantiles at ``α/4, 2α/4, …`` on ``[Q_min, Q_max] = [0, 2^b]`` with
    ``τ = 1/4``, so the binary search of Thm 2.19 takes ``T = ⌈log₂(2^b/τ)⌉ = b + 2`` rounds.
    """
    K = max(2, math.ceil(4.0 / alpha - 1e-9))
    return K, K - 1, int(bits) + 2


def _app_a_lambda(m_round, T, beta_q, epsilon):
    """Mass tolerance ``λ`` that ``m_round`` agents per round buy (inverts Thm 2.19's size).

    ``m = ⌈c_ε² ln(2T/β_q)/(2λ²)⌉`` (docs/notes/building_blocks.rst, "A quantile by binary
    search") solved for ``λ``.
    """
    c_eps = 1.0 / math.tanh(epsilon / 2)
    if m_round < 1:
        return math.inf
    return c_eps * math.sqrt(math.log(2 * T / beta_q) / (2 * m_round))


def app_a_min_agents(bits, alpha, epsilon):
    """Fewest agents for which :func:`app_a_threshold` runs (every quantile round has ``λ < 1``).

    ``2 n_q T ⌈c_ε² ln(2T/β_d)/(2 λ_max²)⌉`` with ``β_d = 0.05/(4 n_q)`` and
    ``λ_max = 0.999999``, the largest tolerance the quantile search accepts: below it the
    search's Hoeffding bound is vacuous and the search refuses to run. Computed at
    ``λ_max`` (not at 1), so a fit that passes this check before its charge also passes
    the search's own check after it.
    """
    K, n_q, T = _app_a_shape(bits, alpha)
    beta_q = _APP_A_DESIGN_BETA / (4 * n_q)
    c_eps = 1.0 / math.tanh(epsilon / 2) if np.isfinite(epsilon) else 1.0
    per_round = math.ceil(c_eps**2 * math.log(2 * T / beta_q)
                          / (2 * _APP_A_MAX_LAMBDA**2) * (1 + 1e-9))
    return 2 * n_q * T * per_round


def _app_a_search(m_round, bits, alpha, epsilon):
    """The quantile search one group runs with ``m_round`` agents per round (ε finite).

    ``λ`` is inflated by ``1e-9`` so the search's own size check (the same formula, in
    floating point) passes with ``m_round`` agents, and clipped to ``λ_max``, where
    :func:`app_a_min_agents` sized the rounds.
    """
    K, n_q, T = _app_a_shape(bits, alpha)
    beta_q = _APP_A_DESIGN_BETA / (4 * n_q)
    lam = _app_a_lambda(m_round, T, beta_q, epsilon)
    return QuantileSearch(epsilon, 0.0, float(1 << int(bits)), 0.25,
                          min(lam * (1 + 1e-9), _APP_A_MAX_LAMBDA), beta_q)


def app_a_error_bound(n, bits, alpha, beta, epsilon):
    """Error guarantee of :func:`app_a_threshold` with ``n`` i.i.d. agents (BKNSS App. A).

    With probability ``≥ 1 − β`` the returned threshold has error at most
    ``α/4 + 2λ + 2K t/n₂ + 2 sqrt(ln(8(K+1)/β)/(2n₂))`` on the agents' distribution, where

    * ``α/4 + 2λ`` is the widest bin (the paper's ``α/4 + 2·α/16``): each of the
      ``n_q = K − 1`` quantile searches (``⌊n/2⌋/n_q`` agents, ``T = b+2`` rounds of ``m``
      fresh agents) returns ``q`` with ``F(q) ≥ p − λ`` and ``F(q − 1) < p + λ``, with
      ``λ = c_ε sqrt(ln(2T/β_q)/(2m))`` and ``β_q = β/(4 n_q)`` (BKNSS Thm 2.19; constants
      of docs/notes/building_blocks.rst, "A quantile by binary search"). So the open
      interval between consecutive boundaries has mass
      ``< α/4 + 2λ``, and the boundary just above the true threshold errs only inside it.
    * ``2K t/n₂`` is the counting error of the second half: ``n₂ = n − ⌊n/2⌋`` agents send
      one HRR report of (label, bin) on ``2K`` values; w.p. ``≥ 1 − β/4`` every count is
      within ``t = c_ε sqrt(2 n₂ ln(16K/β))`` (Hadamard response on ``2K`` values at
      failure ``β/4``: ``ln(2·2K/(β/4))``; docs/notes/building_blocks.rst), and a
      candidate's error sums ``K`` counts, so the chosen candidate is within ``2Kt/n₂`` of
      the best one.
    * the last term: Hoeffding and a union bound over the ``K + 1`` candidates (fixed
      before the second half reports), w.p. ``≥ 1 − β/4``.

    At ``n = app_a_local_size(b, α, β, ε)`` (:mod:`skhybrid.hybrid._constants`) the
    quantile term is ``λ ≤ α/16``, i.e. the paper's ``α/4 + 2·α/16``; the paper's "``n/2``
    is sufficiently large" for the counting half is looser than our union bound (the
    ``2Kt/n₂`` term needs ``n₂ ≥ 128 K² c_ε² ln(16K/β)/α²`` to be ``≤ α/4``).

    Returns
    -------
    bound : dict
        ``lam``, ``bin_width`` (``α/4 + 2λ``), ``count_term``, ``sampling_term``, ``total``.
    """
    K, n_q, T = _app_a_shape(bits, alpha)
    n1 = int(n) // 2
    n2 = int(n) - n1
    m_round = (n1 // n_q) // T
    lam = _app_a_lambda(m_round, T, beta / (4 * n_q), epsilon)
    t = HadamardResponse(epsilon, 2 * K).error_bound(max(n2, 1), beta / 4)
    count = 2 * K * t / max(n2, 1)
    sampling = 2 * math.sqrt(math.log(8 * (K + 1) / beta) / (2 * max(n2, 1)))
    width = alpha / 4 + 2 * lam
    return {"lam": lam, "bin_width": width, "count_term": count, "sampling_term": sampling,
            "total": width + count + sampling}


def app_a_threshold(t, labels, bits, alpha, epsilon, rng):
    """BKNSS App. A's local-model threshold learner: quantile bins, then label counts per bin.

    Each agent sends **one** ε-LDP report. The agents are split by public randomness,
    before any report and independently of the data:

    1. **Quantiles** (first ``⌊n/2⌋`` agents, in ``n_q = ⌈4/α⌉ − 1`` equal groups): group
       ``i`` runs the randomized-response binary search of BKNSS Thm 2.19
       (:meth:`~skhybrid.mechanisms.local.QuantileSearch.search_integers`, fresh agents
       per round, exact integer comparisons)
       for the ``i·α/4``-quantile on ``[0, 2^b]`` with ``τ = 1/4``; the boundary is
       ``q_i = ⌊hi⌋`` of the returned bracket (the bracket holds at most one integer, so
       ``F(q_i) = F(hi) ≥ p − λ`` and ``F(q_i − 1) ≤ F(lo) < p + λ``). Sorting the ``q_i``
       keeps both inequalities.
    2. **Label counts per bin** (the other agents): bin ``j`` is ``[q_j, q_{j+1})`` with
       ``q_0 = 0``, ``q_K = 2^b``; each agent sends one Hadamard-response report
       (:class:`~skhybrid.mechanisms.local.HadamardResponse`, the frequency oracle behind
       the heavy hitters of Thm 2.18) of ``label·K + bin``. The paper has 0-label agents
       report a constant instead of their bin; reporting the bin too lets the referee
       estimate each bin's size as well as its 1-label count (the *fraction* of 1-labels
       the paper asks for), at the same ε.
    3. **Referee**: among the boundaries ``q_0..q_K`` pick the one with the smallest
       estimated error ``Σ_{i<j} Ĉ(1, i) + Σ_{i≥j} Ĉ(0, i)``. On realizable data this is
       the paper's "first quantile from which all agents have 1-label".

    Guarantee: :func:`app_a_error_bound`.

    Parameters
    ----------
    t : ndarray of int, shape (n,)
        Agents' values in ``[0, 2^bits)``.
    labels : ndarray of {0, 1}, shape (n,)
    bits : int
    alpha : float in (0, 1)
    epsilon : float
        Each agent's local ε; ``np.inf`` uses exact quantiles and counts (same split).
    rng : numpy.random.Generator
        Source of every random draw.

    Returns
    -------
    result : dict
        ``threshold`` (int in ``[0, 2^bits]``), ``boundaries`` (``K + 1`` sorted ints),
        ``counts`` (shape ``(2, K)``: estimated 0- and 1-label counts per bin),
        ``estimated_errors`` (``K + 1``), ``lam`` (the quantile tolerance the agents buy),
        ``n_quantile`` and ``n_count`` (agents per phase).
    """
    t = np.asarray(t, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    n = t.shape[0]
    K, n_q, T = _app_a_shape(bits, alpha)
    private = np.isfinite(epsilon)
    if n < app_a_min_agents(bits, alpha, epsilon if private else np.inf):
        raise ValueError(
            f"method='app-a' needs at least {app_a_min_agents(bits, alpha, epsilon)} local "
            f"agents for threshold_bits={bits}, alpha={alpha}, epsilon={epsilon} "
            f"({n_q} quantile searches of {T} rounds each); got {n}. Add agents, increase "
            "alpha, or use method='cdf'.")
    top = 1 << int(bits)
    # Public-randomness assignment of agents to phases and groups (data-independent).
    order = _noise.permutation(rng, n, tag="app_a:assign")
    n1 = n // 2
    groups = np.array_split(order[:n1], n_q)
    second = order[n1:]
    m_round = min(len(g) for g in groups) // T
    beta_q = _APP_A_DESIGN_BETA / (4 * n_q)
    lam = _app_a_lambda(m_round, T, beta_q, epsilon) if private else 0.0

    q = np.empty(n_q, dtype=np.int64)
    for i, g in enumerate(groups, start=1):  # n_q = ⌈4/α⌉ − 1 searches, not agents
        p_star = i * alpha / 4
        if private:
            # Integer arithmetic: a float midpoint is not exact beyond 2^53.
            _, hi = _app_a_search(m_round, bits, alpha, epsilon).search_integers(
                t[g], p_star, rng)
            q[i - 1] = min(math.floor(hi), top)
        else:
            q[i - 1] = np.quantile(t[g], p_star, method="inverted_cdf")
    bounds = np.concatenate([[0], np.sort(q), [top]])

    bins = np.searchsorted(bounds[1:-1], t[second], side="right")  # q_j ≤ t < q_{j+1}
    codes = labels[second] * K + bins
    if private:
        hrr = HadamardResponse(epsilon, 2 * K)
        counts = hrr.estimate_counts(*hrr.randomize(codes, rng)).reshape(2, K)
    else:
        counts = np.bincount(codes, minlength=2 * K).astype(float).reshape(2, K)
    # error(q_j) = #1-labels below q_j + #0-labels at or above q_j, j = 0..K
    ones_below = np.concatenate([[0.0], np.cumsum(counts[1])])
    zeros_above = np.concatenate([np.cumsum(counts[0][::-1])[::-1], [0.0]])
    errors = (ones_below + zeros_above) / max(second.size, 1)
    best = int(np.argmin(errors))
    return {"threshold": int(bounds[best]), "boundaries": bounds, "counts": counts,
            "estimated_errors": errors, "lam": lam, "n_quantile": n1, "n_count": second.size}


class LocalThresholdClassifier(_HybridParams, PrivateEstimatorMixin, ClassifierMixin,
                               BaseEstimator):
    """Threshold learner, ε-LDP, from local agents' (value, label) reports (BKNSS App. A).

    Learns ``Thr_θ(t) = 1[t ≥ θ]`` over the integer threshold feature ``t ∈ [0, 2^b)``;
    every other column is ignored (on parity-XOR-threshold data this is the local-only
    baseline: no local learner can see the parity, Lemma 3.2).

    The class above the cut is ``classes_[1]`` (the larger label; ``classes`` is sorted).
    When that class lies *below* the cut (on breast cancer's "worst radius", benign
    tumours, label 1, are the small ones), the learner can do no better than a constant:
    flip the feature, which is public arithmetic (``t ↦ 2^b − 1 − t`` on the threshold
    column, before the fit and before predicting), or relabel ``y`` so that the larger
    label is the one above the cut.

    Each agent sends **one** ε-LDP report: its value with the label as an extra top bit,
    ``u = label·2^b + t``, to the hierarchical CDF protocol on ``b + 1`` bits (BKNSS
    Thm 2.15; :class:`~skhybrid.mechanisms.local.HierarchicalCDF`). The referee picks the
    ``θ`` minimising the estimated error ``G(2^b+θ−1) − G(θ−1)``
    (:func:`threshold_from_cdf`). This is a non-interactive replacement of App. A's
    two-phase protocol (quantile binary search for the ``α/4``-quantiles, then a
    heavy-hitter count of 1-labels per bin): one CDF of the labelled values answers both
    questions at once, with excess error ``≤ 4·sup|Ĝ − G|``.

    ``method="app-a"`` runs App. A's protocol itself (:func:`app_a_threshold`): half of
    the agents find the ``α/4``-quantiles by the binary search of Thm 2.19 (fresh agents
    per round), the other half send one Hadamard-response report of (label, bin), and
    the referee picks the bin boundary with the fewest estimated errors. Its agent count
    grows like ``b log(b/(αβ))/(α³ε²)`` (Theorem A.1) instead of the CDF's ``b³/α²``
    dependence, but with a large constant (:func:`app_a_error_bound`).

    Parameters
    ----------
    threshold_feature : int, default=-1
        Column index of the integer threshold feature; the other columns are ignored.
    threshold_bits : int, default=8
        ``b``: the feature's public domain is ``[0, 2^b)``. ``method="cdf"`` with a
        finite ``epsilon`` supports ``b <= 21`` (the referee searches every threshold of
        the agents' CDF; larger ``b`` is refused before the charge); ``np.inf`` and
        ``"app-a"`` support ``b <= 61``.
    alpha : float in (0, 1), default=0.1
        Target error (the learner aims at error α). ``method="cdf"``: used only by
        :meth:`error_bound`.
        ``method="app-a"``: sets the quantile grid ``α/4, 2α/4, …`` (``⌈4/α⌉`` bins).
    epsilon : float, default=1.0
        Local ε of each agent. ``np.inf``: exact empirical risk minimisation.
    method : {"cdf", "app-a"}, default="cdf"
        The protocol (see above). Both send one ε-LDP report per agent.
    classes : array-like of shape (2,) or None, default=None
        The label set (a public domain); ``None`` reads it from ``y`` with a
        :class:`~skhybrid.PrivacyLeakWarning`.
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
    threshold_ : int in [0, 2^b]
        Predict ``classes_[1]`` iff ``t ≥ threshold_``.
    estimated_errors_ : ndarray
        Estimated training error at each of ``candidate_thresholds_``.
    candidate_thresholds_ : ndarray of int64
        ``"cdf"``: the first threshold of each piece of ``[0, 2^b]`` on which the
        estimated error is constant (every threshold for ``threshold_bits <= 19``, and
        for ``<= 21`` with a finite ``epsilon``); the
        minimum is over all thresholds (:func:`threshold_from_cdf`). ``"app-a"``: the
        ``K + 1`` bin boundaries, the only candidates.
    boundaries_ : ndarray of shape (K + 1,)
        ``"app-a"`` only: the sorted quantile boundaries ``0 = q_0 ≤ … ≤ q_K = 2^b``.
    bin_counts_ : ndarray of shape (2, K)
        ``"app-a"`` only: estimated 0- and 1-label counts per bin.
    classes_, privacy_spent_, privacy_events_, n_features_in_

    Notes
    -----
    Uses the local agents only (rows with ``curator_mask`` False); curator rows are
    ignored. ``curator_mask=None`` means every row is held by the curator, who runs the
    same protocol on them (an ε-LDP protocol is also ε-DP centrally); its event is then
    charged to the ``"central"`` population. An explicit mask without local rows raises.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.hybrid import LocalThresholdClassifier
    >>> rng = np.random.default_rng(42)   # data and mechanism seeds must differ
    >>> t = rng.integers(0, 256, size=100000)
    >>> X, y = t[:, None], (t >= 77).astype(int)
    >>> clf = LocalThresholdClassifier(threshold_bits=8, classes=[0, 1], random_state=0)
    >>> clf = clf.fit(X, y)
    >>> abs(clf.threshold_ - 77) < 26
    True
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        "method": [StrOptions({"cdf", "app-a"})],
        "threshold_feature": [Integral],
        "threshold_bits": [Interval(Integral, 1, 61, closed="both")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "accountant": [PrivacyAccountant, None],
        "classes": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, threshold_feature=-1, threshold_bits=8, alpha=0.1, epsilon=1.0, *,
                 method="cdf", classes=None, accountant=None, random_state=None, verbose=0):
        self.threshold_feature = threshold_feature
        self.threshold_bits = threshold_bits
        self.alpha = alpha
        self.epsilon = epsilon
        self.method = method
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, *, curator_mask=None):
        """Run the protocol on the local agents' rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows with the integer threshold column ``threshold_feature``.
        y : array-like of shape (n_samples,)
            Two-class labels.
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True rows are ignored. None: every row is held by the curator, who runs the
            same protocol on all of them (charged to the "central" population).

        Returns
        -------
        self : LocalThresholdClassifier
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X, y = validate_data(self, X, y, dtype=None)
        self.classes_, bits = binary_labels(y, type(self).__name__, self.classes)
        _, tf = split_columns(X, self.threshold_feature, check_parity=False)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        local = np.ones(X.shape[0], dtype=bool)
        if curator_mask is not None:
            local = ~check_mask(curator_mask, X.shape[0], "curator_mask", index=x_index)
            if not local.any():
                raise ValueError("curator_mask leaves no local agents: at least one row must "
                                 "be False in curator_mask.")
        b = self.threshold_bits
        name = type(self).__name__
        # With curator_mask=None every row is the curator's (docs/user_guide/hybrid.rst,
        # "curator_mask"): the same ε-LDP
        # protocol run on them is ε-DP centrally, so the charge goes to "central".
        population = "central" if curator_mask is None else "local"
        if self.method == "app-a":
            return self._fit_app_a(t[local], bits[local], name, population)
        if not self.nonprivate and b > _HIERARCHICAL_SEARCH_BITS:  # parameters only: before the charge
            _refuse_unsearchable(b, "method='cdf' with a finite epsilon")
        if self.nonprivate:
            self._charge([nonprivate_event(population, name)])
        else:
            self._charge([HierarchicalCDF(self.epsilon, b + 1).event(population=population,
                                                                    source=name)])
        rng = self._make_rng()
        u = encode_labelled(t[local], bits[local], b)
        if self.nonprivate:
            cdf = EmpiricalCDF(u)
        else:
            cdf = HierarchicalCDF(self.epsilon, b + 1).fit(u, rng)
        self.threshold_, self.estimated_errors_, self.candidate_thresholds_ = (
            threshold_from_cdf(cdf, b))
        self._warn_if_constant()
        if self.verbose:
            print(f"[LocalThresholdClassifier] {int(local.sum())} agents, "
                  f"threshold {self.threshold_}")
        return self

    def _warn_if_constant(self):
        """The released threshold at an end of [0, 2^b] predicts one class everywhere."""
        if self.threshold_ in (0, 1 << self.threshold_bits):
            label = self.classes_[1] if self.threshold_ == 0 else self.classes_[0]
            warn_degenerate(type(self).__name__,
                            f"the threshold is at the edge of its domain, so it predicts "
                            f"{label_repr(label)} everywhere",
                            "The labels may not follow a threshold on this feature, or there "
                            "are too few agents for this epsilon.")

    def _fit_app_a(self, t, bits, name, population):
        """App. A's two-phase protocol on the local agents (:func:`app_a_threshold`)."""
        b = self.threshold_bits
        need = app_a_min_agents(b, self.alpha, self.epsilon)
        if t.shape[0] < need:  # the agent count is public; check before charging
            raise ValueError(
                f"method='app-a' needs at least {need} local agents for threshold_bits={b}, "
                f"alpha={self.alpha}, epsilon={self.epsilon}; got {t.shape[0]}. Add agents, "
                "increase alpha, or use method='cdf'.")
        if self.nonprivate:
            self._charge([nonprivate_event(population, name)])
        else:
            # Every agent sends one report (an RR bit in one quantile round, or one HRR
            # report): the groups are disjoint, so the local charge is ε once.
            K, n_q, T = _app_a_shape(b, self.alpha)
            self._charge([PrivacyEvent("app_a_threshold", "pure", float(self.epsilon),
                                       population=population, source=name,
                                       params={"quantiles": n_q, "rounds": T, "bins": K})])
        rng = self._make_rng()
        res = app_a_threshold(t, bits, b, self.alpha, self.epsilon, rng)
        self.threshold_ = res["threshold"]
        self.estimated_errors_ = res["estimated_errors"]
        self.boundaries_ = res["boundaries"]
        self.candidate_thresholds_ = res["boundaries"]
        self.bin_counts_ = res["counts"]
        self._warn_if_constant()
        if self.verbose:
            print(f"[LocalThresholdClassifier] app-a: {t.shape[0]} agents, lambda="
                  f"{res['lam']:.3g}, threshold {self.threshold_}")
        return self

    def error_bound(self, n, beta=0.05):
        """Return the error bound of a fit with ``n`` agents, w.p. ``≥ 1 − β``.

        ``"cdf"``: excess error ``4 c_ε (b+1) sqrt(2((b+1) ln 2 + ln(2/β))/n)``, four times
        the CDF's sup error (:ref:`notes_hierarchical_cdf` on ``b + 1`` bits).
        ``"app-a"``: the total of ``app_a_error_bound`` (realizable i.i.d. data).

        Parameters
        ----------
        n : int
            Number of local agents.
        beta : float, default=0.05
            Failure probability.

        Returns
        -------
        bound : float
            The excess error bound.
        """
        if getattr(self, "method", "cdf") == "app-a":
            return app_a_error_bound(n, self.threshold_bits, self.alpha, beta,
                                     self.epsilon)["total"]
        if self.threshold_bits > _HIERARCHICAL_SEARCH_BITS:  # such a fit is refused
            _refuse_unsearchable(self.threshold_bits, "method='cdf' with a finite epsilon")
        return 4 * HierarchicalCDF(self.epsilon, self.threshold_bits + 1).error_bound(n, beta)

    def predict(self, X):
        """Predict ``classes_[1[t ≥ threshold_]]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows with the integer threshold column ``threshold_feature``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self, "threshold_")
        X = validate_data(self, X, dtype=None, reset=False)
        _, tf = split_columns(X, self.threshold_feature, check_parity=False)
        t = check_threshold_values(X[:, tf], self.threshold_bits, at_fit=False)
        return self.classes_[(t >= self.threshold_).astype(np.int64)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # One ε-LDP report per agent: with sklearn's ~100-row check sets the CDF error is
        # of order b·c_ε/√n ≫ 1, so accuracy thresholds are out of reach.
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags


class ParityAndThresholdClassifier(_HybridParams, PrivateEstimatorMixin, ClassifierMixin,
                                   BaseEstimator):
    """Parity *and* threshold in the hybrid model (BKNSS App. A, Theorem A.1): a 2-bit label.

    The concept is ``c_{k,θ}(x, t) = (⟨k, x⟩, 1[t ≥ θ])``; ``y`` has shape
    ``(n_samples, 2)`` (sklearn's multi-output convention), column 0 the parity label and
    column 1 the threshold label, each with two classes. The curator learns the parity
    part (:class:`~skhybrid.learners.PrivateParityClassifier`'s boosted PPAR on disjoint
    chunks, ε central) and the local agents the threshold part
    (:class:`LocalThresholdClassifier`'s protocol, ε-LDP, one report each); the two
    interactions are independent, as in App. A.

    Parameters
    ----------
    threshold_feature : int, default=-1
        Column index of the ordered threshold feature; every other column is a 0/1 parity
        feature.
    threshold_bits : int, default=8
        ``b``: the threshold feature's public domain is the integers ``[0, 2^b)``. With
        local agents and a finite ``epsilon``, ``b <= 21`` (the referee searches every
        threshold of the agents' CDF; larger ``b`` is refused before the charge).
    alpha : float in (0, 1), default=0.1
        Target error of the threshold part.
    epsilon : float, default=1.0
        The ε of both populations. ``np.inf`` runs the non-private protocol.
    n_chunks : int, default=4
        Disjoint chunks of the curator's PPAR (parallel composition).
    rate : {"tanh", "klnrs"}, default="tanh"
        PPAR inclusion rate (see :class:`~skhybrid.learners.PrivateParityClassifier`).
    floor : float, default=0.5
        PPAR ⊥ floor, at least ``(1-p)/(3-p)``.
    classes : pair of array-likes of shape (2,), or None, default=None
        The label sets of the two columns (public domains); ``None`` reads them from
        ``y`` with a :class:`~skhybrid.PrivacyLeakWarning`.
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
    parity_ : ndarray of shape (c,) or None
    threshold_ : int
    classes_ : list of two ndarrays of shape (2,)
    privacy_spent_, privacy_events_, n_features_in_

    Notes
    -----
    ``curator_mask=None``: every row is at the curator, which spends ``ε/2`` on PPAR and
    ``ε/2`` on the threshold through a Laplace dyadic tree of the label-encoded values
    (:class:`~skhybrid.hybrid._parity_threshold.LaplaceTreeCDF`); still ε-DP. An explicit
    mask leaving either group empty raises.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.hybrid import ParityAndThresholdClassifier
    >>> rng = np.random.default_rng(0)
    >>> n = 60000
    >>> X = np.column_stack([rng.integers(0, 2, (n, 5)), rng.integers(0, 256, n)])
    >>> Y = np.column_stack([X[:, :5] @ [1, 1, 0, 0, 1] % 2, X[:, -1] >= 99])
    >>> clf = ParityAndThresholdClassifier(threshold_bits=8, classes=([0, 1], [0, 1]),
    ...                                    random_state=1)
    >>> clf = clf.fit(X, Y, curator_mask=np.arange(n) < 5000)
    >>> clf.parity_.tolist()
    [1, 1, 0, 0, 1]
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        **{k: v for k, v in LocalThresholdClassifier._parameter_constraints.items()
           if k != "method"},
        "n_chunks": [Interval(Integral, 1, None, closed="left")],
        "rate": [StrOptions({"tanh", "klnrs"})],
        "floor": [Interval(Real, 0, 1, closed="both"), StrOptions({"min"})],
    }

    def __init__(self, threshold_feature=-1, threshold_bits=8, alpha=0.1, epsilon=1.0, *,
                 n_chunks=4, rate="tanh", floor=0.5, classes=None, accountant=None,
                 random_state=None, verbose=0):
        self.threshold_feature = threshold_feature
        self.threshold_bits = threshold_bits
        self.alpha = alpha
        self.epsilon = epsilon
        self.n_chunks = n_chunks
        self.rate = rate
        self.floor = floor
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, *, curator_mask=None):
        """Run both halves of the protocol.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 parity columns plus the integer threshold column ``threshold_feature``.
        y : array-like of shape (n_samples, 2)
            Parity labels (column 0) and threshold labels (column 1).
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True for the curator's rows, False for local agents. ``None``: every row is at
            the curator (see Notes).

        Returns
        -------
        self : ParityAndThresholdClassifier
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X, y = validate_data(self, X, y, dtype=None, multi_output=True)
        if y.ndim != 2 or y.shape[1] != 2:
            raise ValueError(f"y must have shape (n_samples, 2) (parity label, threshold "
                             f"label); got {y.shape}.")
        Xp, tf = split_columns(X, self.threshold_feature)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        # (each column's type is checked against its label set: resolve_classes)
        name = type(self).__name__
        col0, col1 = (None, None) if self.classes is None else self.classes
        c0, par_bits = binary_labels(y[:, 0], name + " (parity column y[:, 0])", col0)
        c1, thr_bits = binary_labels(y[:, 1], name + " (threshold column y[:, 1])", col1)
        self.classes_ = [c0, c1]
        mask = self._check_masks(curator_mask, X.shape[0], x_index)
        curator_only = curator_mask is None
        b = self.threshold_bits

        if not (self.nonprivate or curator_only) and b > _HIERARCHICAL_SEARCH_BITS:
            _refuse_unsearchable(b, "the local agents' threshold")  # before the charge
        if curator_only:
            check_epsilon_halves(self.epsilon, "curator_mask=None: the parity and the threshold "
                                 "are both learnt from the curator's rows")
        eps_par = self.epsilon / 2 if curator_only else self.epsilon
        if self.nonprivate:
            events = [nonprivate_event("central", name)]
            if not curator_only:
                events.append(nonprivate_event("local", name))
        else:
            floor = resolve_floor(
                eps_par, self.rate, self.floor,
                context=f"{name}(epsilon={self.epsilon!r}) learns the parity at "
                        f"epsilon={eps_par:.4g}"
                        + (" (half of epsilon: curator_mask=None)" if curator_only else ""))
            events = [parity_event(eps_par, rate=self.rate, floor=floor,
                                   n_chunks=int(self.n_chunks), source=name)]
            if curator_only:
                events.append(LaplaceTreeCDF(self.epsilon / 2, b + 1).event(source=name))
            else:
                events.append(HierarchicalCDF(self.epsilon, b + 1).event(source=name))
        self._charge(events)
        rng = self._make_rng()

        cur = np.flatnonzero(mask)
        if self.nonprivate:
            ok, particular, _ = solve_affine(pack_bits(Xp[cur]), par_bits[cur],
                                             n_features=Xp.shape[1])
            self.parity_ = particular if ok else None
        else:
            self.parity_ = select_candidate(boosted_private_parity(
                Xp[cur], par_bits[cur], eps_par, rng, int(self.n_chunks), rate=self.rate,
                floor=floor))
        agents = cur if curator_only else np.flatnonzero(~mask)
        u = encode_labelled(t[agents], thr_bits[agents], b)
        if self.nonprivate:
            cdf = EmpiricalCDF(u)
        elif curator_only:
            cdf = LaplaceTreeCDF(self.epsilon / 2, b + 1).fit(u, rng)
        else:
            cdf = HierarchicalCDF(self.epsilon, b + 1).fit(u, rng)
        self.threshold_, _, _ = threshold_from_cdf(cdf, b)
        if self.parity_ is None:
            warn_degenerate(type(self).__name__,
                            "no parity was found, so its parity label is constant",
                            "The first label may not be a parity of the binary features, or "
                            "there are too few curator rows for this epsilon.")
        return self

    def predict(self, X):
        """Predict both labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 parity columns plus the integer threshold column.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, 2)
            Parity and threshold labels.
        """
        check_is_fitted(self, "threshold_")
        X = validate_data(self, X, dtype=None, reset=False)
        Xp, tf = split_columns(X, self.threshold_feature)
        t = check_threshold_values(X[:, tf], self.threshold_bits, at_fit=False)
        par = (np.zeros(X.shape[0], dtype=np.int64) if self.parity_ is None
               else predict_parity(self.parity_, Xp).astype(np.int64))
        thr = (t >= self.threshold_).astype(np.int64)
        return np.column_stack([self.classes_[0][par], self.classes_[1][thr]])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        # Binary parity columns, an integer threshold column and a DP fit: sklearn's
        # check data and sizes are out of reach (see ParityThresholdClassifier).
        tags.classifier_tags.poor_score = True
        return tags
