"""Every random draw that protects privacy goes through this module.

Funnelling noise through a handful of functions buys two things: estimators never
draw noise by hand, and tests can *spy* on every draw made during a fit
(:func:`record_noise`) and compare it with the events charged to the accountant
(docs/notes/auditing.rst, layer D).

All functions take a :class:`numpy.random.Generator`; none touches global state.

Exact samplers
--------------
Real values that leave the library go through exact samplers on the integers, drawn from
uniform integers only (Canonne, Kamath & Steinke 2020, "The discrete Gaussian for
differential privacy", Algorithms 1-3): :func:`bernoulli_exp` (a Bernoulli(exp(-gamma))
coin for rational gamma), :func:`discrete_laplace` and :func:`discrete_gaussian`. The
mechanisms snap their input to a lattice of step ``2^k`` and add lattice noise, so the
released value is a lattice point whatever the floating-point details (the remedy of
Mironov 2012 for the attack on textbook samplers, as in OpenDP and Google's "secure
noise generation"). Every random bit comes from the caller's numpy ``Generator``, so a
``random_state`` still reproduces a fit.

The selection mechanisms are exact too (:mod:`skhybrid.mechanisms._exact_selection`):
the exponential mechanism is rejection sampling with uniform proposals and exact
Bernoulli(exp(-γd)) coins on lattice scores, report-noisy-max adds :func:`discrete_laplace`
noise to lattice scores. (Float Gumbel noise, used before, has bounded support: a
candidate far below the best got probability exactly 0 on one data set and a positive
one on a neighbour.)

What stays floating point, and why it is not the low-bits attack surface:

- :func:`gaussian` inside optimisers (noisy SGD's gradient noise, noisy mirror descent,
  the objective-perturbation vector) and :func:`gamma`: their noise is never released; the
  estimator releases a model computed from many noisy steps. Where an estimator releases a
  real vector directly (the Laplace and Gaussian mechanisms, Gaussian randomized
  response), it goes through the exact lattice samplers.
- :func:`uniform` only for the subsample draws of STR's non-private Algorithm 1
  (``epsilon=np.inf``); its private rounds draw uniform integers against exact integer
  κ-dense weights (:mod:`skhybrid.transfer._exact_subsample`, docs/guarantee.rst).

Coins
-----
:func:`bernoulli` compares uniform integers: its probability is ``p`` rounded *up* to a
multiple of 2^-53, exactly (:func:`coin_probability`), never the float ``rng.random() < p``,
whose probability is off in the last bits and whose rare outcome vanishes once ``p`` rounds
to 0 or 1. Each caller passes the probability of the outcome whose probability must not be
understated: randomized response its *flip* probability 1/(e^ε + 1), PPAR its *drop*
probability and its ⊥ floor. Rounding those up (with a margin for the float error in
computing them) can only lower the likelihood ratio below e^ε; at ε ≳ 37, where e^ε/(1 + e^ε)
is 1.0 in floating point, the report still flips with probability 2^-53.
"""

import math
from bisect import bisect_right
from contextlib import contextmanager

import numpy as np

# Largest integer numpy's bounded-integer sampler takes as an exclusive bound (int64).
_INT_HIGH = np.iinfo(np.int64).max

__all__ = [
    "NoiseDraw",
    "record_noise",
    "gaussian",
    "bernoulli",
    "coin_probability",
    "integers",
    "permutation",
    "uniform",
    "gamma",
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
    "MAX_GAUSSIAN_SIGMA",
]

_RECORDERS = []


class NoiseDraw:
    """One recorded call to a noise primitive.

    Attributes
    ----------
    kind : str
        Name of the primitive (``"discrete_laplace"``, ``"gaussian"``, ...).
    scale : float
        Its scale parameter (Laplace ``b``, Gaussian ``sigma``, the exponential
        mechanism's ``1/γ`` in score units,
        Bernoulli ``p``, ...). For array-valued parameters, the largest value.
    count : int
        Number of variates drawn.
    tag : str or None
        Free-form label given by the caller (usually the mechanism name).
    """

    __slots__ = ("kind", "scale", "count", "tag")

    def __init__(self, kind, scale, count, tag):
        self.kind = kind
        self.scale = scale
        self.count = count
        self.tag = tag

    def __repr__(self):
        return (
            f"NoiseDraw(kind={self.kind!r}, scale={self.scale!r}, "
            f"count={self.count}, tag={self.tag!r})"
        )


@contextmanager
def record_noise():
    """Record every noise draw made inside the ``with`` block.

    Yields
    ------
    draws : list of NoiseDraw
        Filled in as draws happen.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mechanisms import laplace_mechanism
    >>> from skhybrid.mechanisms._noise import record_noise
    >>> with record_noise() as draws:
    ...     _ = laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0,
    ...                           rng=np.random.default_rng(0))
    >>> draws[0].kind, round(draws[0].scale, 3)   # lattice noise, scale about 1/epsilon
    ('discrete_laplace', 1.001)
    """
    draws = []
    _RECORDERS.append(draws)
    try:
        yield draws
    finally:
        _RECORDERS.remove(draws)


def _record(kind, scale, size, tag):
    if _RECORDERS:
        count = 1 if size is None else int(np.prod(size))
        scale = float(np.max(scale)) if np.size(scale) else float("nan")
        for draws in _RECORDERS:
            draws.append(NoiseDraw(kind, scale, count, tag))


def _size_of(size, *params):
    """Output size, taking broadcasting of array parameters into account."""
    if size is not None:
        return size
    shape = np.broadcast_shapes(*(np.shape(p) for p in params))
    return shape or None


def gaussian(rng, sigma, size=None, *, tag=None):
    """Draw N(0, ``sigma**2``) noise (``sigma`` is a standard deviation)."""
    _record("gaussian", sigma, _size_of(size, sigma), tag)
    return rng.normal(0.0, sigma, size)


#: Resolution of :func:`bernoulli`: its probabilities are multiples of 2^-53.
_COIN_BITS = 53

#: A float computed by a few correctly rounded operations (and ``math.exp``, within an ulp)
#: is within a few ulps of the value it stands for; this factor lifts it above that value.
_FLOAT_SLACK = 1.0 + 2.0 ** -50


def coin_probability(p, *, computed=False, positive=False):
    """The probability :func:`bernoulli` realises for ``p``: ``p`` rounded up to a multiple
    of 2^-53 (exact; a multiple stays as it is).

    Parameters
    ----------
    p : float in [0, 1]
    computed : bool, default=False
        ``p`` approximates a real number within a few ulps (it was computed in floating
        point): round up ``p·(1 + 2^-50)`` instead, so the result is at least that number.
    positive : bool, default=False
        That number is known to be positive (a computed 0 is an underflow, such as
        e^-ε for ε > 745): the result is at least 2^-53.

    Returns
    -------
    float
        A multiple of 2^-53 in [0, 1].
    """
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a coin's probability must lie in [0, 1]; got {p!r}.")
    if computed:
        p = min(p * _FLOAT_SLACK, 1.0)
    out = math.ldexp(math.ceil(math.ldexp(p, _COIN_BITS)), -_COIN_BITS)
    return max(out, math.ldexp(1.0, -_COIN_BITS)) if positive else out


def bernoulli(rng, p, size=None, *, tag=None):
    """Draw Bernoulli bits as a boolean array, exactly with probability
    :func:`coin_probability(p) <coin_probability>` (``p`` rounded up to a multiple of
    2^-53): a uniform integer below 2^53 is compared with that multiple's numerator.

    Pass the probability of the outcome whose probability must not be understated (a
    flip, a drop, a ⊥), computed with ``coin_probability(..., computed=True)`` when it
    comes from floating-point arithmetic.
    """
    q = coin_probability(p)
    _record("bernoulli", q, _size_of(size, p), tag)
    numerator = int(math.ldexp(q, _COIN_BITS))
    return rng.integers(0, 1 << _COIN_BITS, size, dtype=np.int64) < numerator


def integers(rng, high, size=None, *, tag=None):
    """Draw uniform integers in ``[0, high)`` (data-independent assignments, secret bits)."""
    _record("integers", high, _size_of(size, high), tag)
    return rng.integers(0, high, size)


def permutation(rng, n, *, tag=None):
    """A uniform random permutation of ``range(n)`` (data-independent assignment of rows to
    chunks, rounds or batches: parallel composition needs it to ignore the data)."""
    _record("permutation", n, None, tag)
    return rng.permutation(n)


def uniform(rng, size=None, *, tag=None):
    """Draw Uniform[0, 1) variates."""
    _record("uniform", 1.0, size, tag)
    return rng.random(size)


def gamma(rng, shape, scale, size=None, *, tag=None):
    """Draw Gamma(``shape``, ``scale``) variates (norm of objective-perturbation noise)."""
    _record("gamma", scale, _size_of(size, shape, scale), tag)
    return rng.gamma(shape, scale, size)


# ----------------------------------------------------------------------------- exact


def _bernoulli_exp_unit(rng, num, den):
    """Exact Bernoulli(exp(-num/den)) for integer arrays with 0 <= num <= den.

    Canonne, Kamath & Steinke (2020), Algorithm 1 (gamma in [0, 1]): draw
    A_k ~ Bernoulli(gamma/k) for k = 1, 2, ... until one is 0; return 1 iff the stopping k
    is odd. Bernoulli(num/(den*k)) is ``U < num`` for U uniform on {0, ..., den*k - 1}.
    Vectorised: each pass draws for the entries still running.
    """
    out = np.zeros(num.shape, dtype=bool)
    active = np.arange(num.size)
    num = num.ravel()
    scalar = np.ndim(den) == 0  # one denominator for all: numpy's fast scalar bound
    if not scalar:
        den = den.ravel()
    k = 1
    while active.size:
        high = den * k if scalar else den[active] * k
        if np.any(high > _INT_HIGH // 2):  # pragma: no cover - callers bound den by 2^56,
            # so k would have to pass 64: probability below 1/64!
            raise OverflowError("bernoulli_exp: denominator too large for exact sampling.")
        draws = rng.integers(0, high, active.size) if scalar else rng.integers(0, high)
        keep_going = draws < num[active]
        stopped = active[~keep_going]
        out.ravel()[stopped] = (k % 2) == 1
        active = active[keep_going]
        k += 1
    return out


def bernoulli_exp(rng, num, den):
    """Exact Bernoulli(exp(-num/den)) coins for non-negative integer arrays ``num``, ``den``.

    gamma = num/den is split into its integer part q and remainder r/den: the coin is 1
    iff q coins Bernoulli(exp(-1)) and one Bernoulli(exp(-r/den)) are all 1 (Canonne,
    Kamath & Steinke 2020, Algorithm 1, gamma > 1). Only uniform integers are drawn.
    """
    num = np.asarray(num, dtype=np.int64)
    if np.ndim(den) == 0:
        den = np.int64(den)
        q, r = np.divmod(num, den)
        out = _bernoulli_exp_unit(rng, r, den)
    else:
        den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
        q, r = np.divmod(num, den)
        out = _bernoulli_exp_unit(rng, r, den.copy())
    pending = np.flatnonzero(out.ravel() & (q.ravel() > 0))
    left = q.ravel()[pending]
    while pending.size:  # q coins Bernoulli(exp(-1)), stopping at the first 0
        coin = _bernoulli_exp_unit(rng, np.ones(pending.size, dtype=np.int64), np.int64(1))
        out.ravel()[pending[~coin]] = False
        left = left - 1
        still = coin & (left > 0)
        pending, left = pending[still], left[still]
    return out


#: Bernoulli(exp(-1)) from one uniform integer U below 20!: in CKS 2020, Algorithm 1 with
#: gamma = 1, the stopping index K (first k with A_k ~ Bernoulli(1/k) equal to 0) has
#: P(K > k) = 1/k!, and {K > k} = {U < 20!/k!} has exactly that probability for k <= 20
#: (the events are nested). The coin is 1 iff K is odd. U = 0 (K > 20, probability 1/20!)
#: continues the algorithm from k = 21 with fresh draws.
_FACT20 = math.factorial(20)
_ASCENDING = np.array([_FACT20 // math.factorial(k) for k in range(20, 0, -1)], dtype=np.int64)


def _bernoulli_exp_minus_one(rng, size):
    """``size`` exact Bernoulli(exp(-1)) coins, one uniform integer each (see above)."""
    u = rng.integers(0, _FACT20, size)
    k = 1 + _ASCENDING.size - np.searchsorted(_ASCENDING, u, side="right")  # K, capped
    tail = np.flatnonzero(u == 0)  # K > 20: continue with A_k ~ Bernoulli(1/k), k >= 21
    j = 21
    while tail.size:
        k[tail] = j
        tail = tail[rng.integers(0, j, tail.size) == 0]  # A_j = 1 w.p. 1/j: go on
        j += 1
    return (k % 2) == 1


#: Bernoulli(exp(-1)) coins drawn per entry in the first round of the run-length
#: samplers (most runs end there) and in the later ones; the coins after an entry's first
#: failure are discarded (they are independent of the rest).
_COINS_PER_ROUND = (1, 4)


def _leading_successes(rng, size, coins):
    """Number of leading successes (0 to ``coins``) among ``coins`` Bernoulli(exp(-1)) each."""
    flips = _bernoulli_exp_minus_one(rng, size * coins)
    if coins == 1:
        return flips.astype(np.int64)
    return np.cumprod(flips.reshape(size, coins), axis=1).sum(axis=1)


def _run_lengths(rng, size):
    """V with P(V >= j) = e^-j: Bernoulli(exp(-1)) successes before the first failure."""
    v = np.zeros(size, dtype=np.int64)
    running = np.arange(size)
    coins = _COINS_PER_ROUND[0]
    while running.size:
        lead = _leading_successes(rng, running.size, coins)
        v[running] += lead
        running = running[lead == coins]
        coins = _COINS_PER_ROUND[1]
    return v


# Scalar paths: a handful of draws costs less on Python integers from raw 64-bit words
# than through numpy calls (a few microseconds each); the comparisons are the same.


#: Bit generators whose raw outputs are full 64-bit words. MT19937's (what a
#: ``RandomState`` becomes) are 32-bit: read as 64-bit words, their top bit is always 0.
_RAW_64_BIT = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


class _Words:
    """Uniform 64-bit words from the generator, a few at a time.

    Raw outputs where they are 64-bit words (:data:`_RAW_64_BIT`), else full words from
    ``rng.integers(0, 2^64, dtype=uint64)``, which combines narrower raw outputs.
    """

    __slots__ = ("_fill", "_buf")

    def __init__(self, rng):
        bit_generator = rng.bit_generator
        if isinstance(bit_generator, _RAW_64_BIT):
            raw = bit_generator.random_raw
            self._fill = lambda: raw(16).tolist()
        else:
            self._fill = lambda: rng.integers(0, 1 << 64, 16, dtype=np.uint64).tolist()
        self._buf = []

    def word(self):
        if not self._buf:
            self._buf = self._fill()
        return self._buf.pop()

    def bits(self, b):
        """Uniform integer below ``2^b`` (``0 <= b <= 64``): the top b bits of a word."""
        return self.word() >> (64 - b)

    def below(self, n):
        """Uniform integer below the Python int ``n >= 1``, exactly (rejection)."""
        if n <= 1 << 64:
            limit = (1 << 64) - (1 << 64) % n  # a multiple of n: w % n is uniform below it
            while True:
                w = self.word()
                if w < limit:
                    return w % n
        nbits = n.bit_length()
        nwords = -(-nbits // 64)
        while True:
            w = 0
            for _ in range(nwords):
                w = (w << 64) | self.word()
            w >>= 64 * nwords - nbits
            if w < n:
                return w


_ASCENDING_LIST = _ASCENDING.tolist()


def _py_exp_minus_one(words):
    """One Bernoulli(exp(-1)) coin: :func:`_bernoulli_exp_minus_one` on Python integers
    (U below 20! gives the stopping index K of CKS Algorithm 1, capped)."""
    u = words.below(_FACT20)
    if u:
        return (21 - bisect_right(_ASCENDING_LIST, u)) & 1 == 1
    k = 21  # K > 20: go on with A_k ~ Bernoulli(1/k), k >= 21
    while words.below(k) == 0:
        k += 1
    return k & 1 == 1


#: Bernoulli(exp(-1)) as above with 12! in place of 20! (U = 0, probability 1/12!, goes on
#: from k = 13): below 2^32, numpy draws these bounds at half the cost.
_FACT12 = math.factorial(12)
_ASCENDING12 = np.array([_FACT12 // math.factorial(k) for k in range(12, 0, -1)],
                        dtype=np.int64)


def _exp_minus_one_coins(rng, shape):
    """Exact Bernoulli(exp(-1)) coins of any shape, one uniform integer below 12! each."""
    u = rng.integers(0, _FACT12, shape)
    k = 1 + _ASCENDING12.size - np.searchsorted(_ASCENDING12, u, side="right")
    tail = np.flatnonzero(u.ravel() == 0)
    j = 13
    while tail.size:  # K > 12: A_j ~ Bernoulli(1/j) for j >= 13, exactly as the 20! form
        k.ravel()[tail] = j
        tail = tail[rng.integers(0, j, tail.size) == 0]
        j += 1
    return (k & 1) == 1


def _geometric_runs(rng, size):
    """V with P(V >= j) = e^-j, as :func:`_run_lengths`, with fewer numpy calls: two coins
    per entry in the first round (e^-2 of the runs go on), four in the later ones."""
    coins = _exp_minus_one_coins(rng, (size, 2))
    v = coins[:, 0].astype(np.int64) + (coins[:, 0] & coins[:, 1])
    running = np.flatnonzero(v == 2)
    while running.size:
        lead = np.cumprod(_exp_minus_one_coins(rng, (running.size, 4)), axis=1).sum(axis=1)
        v[running] += lead
        running = running[lead == 4]
    return v


#: Thresholds of one uniform W below 5! = 120 for the A_k's integer parts, k = 2..5:
#: {W < 120/k!} are nested with probability 1/k!, the chance that A_2..A_k's independent
#: "V = 0 among k" events all hold; only the first failure matters, so nesting suffices.
_NESTED = np.array([60, 20, 5, 1], dtype=np.int64)


def _exp_unit_coins(rng, num, t):
    """Exact Bernoulli(exp(-num/t)) for an int64 array ``0 <= num < t``, integer ``t``.

    :func:`_bernoulli_exp_unit` (CKS 2020, Algorithm 1) with its rounds batched:
    A_k ~ Bernoulli(num/(t k)) is ``U_k < num`` (U_k uniform below t) and ``V_k = 0``
    (V_k uniform below k). Round 1 draws A_1 for all; round 2 draws A_2..A_5 at once for
    the runs still going (U_k in one (n, 4) draw, the V events from one W below 5!, see
    ``_NESTED``); the few runs past k = 5 (probability at most 1/5!) finish one k at a
    time. The coin is 1 iff the first failing k is odd.
    """
    out = np.ones(num.shape, dtype=bool)
    go = np.flatnonzero(rng.integers(0, t, num.size) < num)  # A_1 = 1: K >= 2
    if not go.size:
        return out
    nums = num[go]
    a = ((rng.integers(0, t, (go.size, 4)) < nums[:, None])
         & (rng.integers(0, 120, go.size)[:, None] < _NESTED))
    lead = np.cumprod(a, axis=1).sum(axis=1)  # A_2..A_{1+lead} = 1
    out[go] = (lead & 1) == 1  # K = 2 + lead, odd iff lead is odd
    tail = lead == 4
    active, nums = go[tail], nums[tail]
    k = 6
    while active.size:
        step = rng.integers(0, t * k, active.size) < nums
        out[active[~step]] = (k & 1) == 1
        active, nums = active[step], nums[step]
        k += 1
    return out


def _py_discrete_laplace(words, t, n):
    """``n`` discrete Laplace draws (as :func:`discrete_laplace`) on Python integers."""
    out = []
    while len(out) < n:
        u = words.below(t)
        if u:  # kept w.p. exp(-u/t): A_k = Bernoulli(u/(t k)) until one is 0, K odd
            k = 1
            while words.below(t * k) < u:
                k += 1
            if not k & 1:
                continue
        while _py_exp_minus_one(words):  # V: a run of exp(-1) successes
            u += t
        if words.word() >> 63:  # a uniform sign, rejecting -0
            if not u:
                continue
            u = -u
        out.append(u)
    return out


#: Below this many draws, :func:`discrete_laplace` runs on Python integers.
_SCALAR_DRAWS = 40


def discrete_laplace(rng, t, size, *, unit=1.0, tag=None):
    """Exact discrete Laplace on the integers: P(x) proportional to exp(-|x|/t).

    Canonne, Kamath & Steinke (2020), Algorithm 2 with s = 1 and integer ``t >= 1``:
    U uniform on {0..t-1} kept with probability exp(-U/t), V geometric (a run of
    Bernoulli(exp(-1)) successes), X = U + tV, a uniform sign (rejecting -0; U and the
    sign come from one uniform integer below 2t). Vectorised with few numpy calls
    (report-noisy-max draws it once per step of a long loop): proposals are drawn in
    excess (1.7 per output plus 40, so one pass nearly always suffices; the first outputs
    kept are i.i.d. whatever the excess), the exp(-U/t) coins' rounds are batched
    (:func:`_exp_unit_coins`), and each exp(-1) coin is one uniform integer
    (:func:`_geometric_runs`); fewer than ``_SCALAR_DRAWS`` draws are made on Python
    integers (:func:`_py_discrete_laplace`). Integer ``t`` in [1, 2^56] only; the
    mechanisms round their scale up to one, which only adds noise, and choose lattices
    that keep it below 2^56.

    ``unit`` is the lattice step the caller multiplies the draws by: the spy records the
    scale in the caller's units, ``t * unit``.

    Returns an int64 array of shape ``size`` (an int64 scalar for ``size=None``).
    """
    t = int(t)
    if not 1 <= t <= 1 << 56:  # beyond, t·k and u + t·v could leave int64
        raise ValueError(f"discrete_laplace takes an integer scale t in [1, 2^56]; got {t}.")
    n = int(np.prod(size)) if size is not None else 1
    _record("discrete_laplace", float(t) * unit, size, tag)
    if n < _SCALAR_DRAWS:
        out = np.array(_py_discrete_laplace(_Words(rng), t, n), dtype=np.int64)
        return out.reshape(size) if size is not None else out[0]
    out = np.empty(n, dtype=np.int64)
    filled = 0
    t64 = np.int64(t)
    while filled < n:
        need = n - filled
        w = rng.integers(0, 2 * t, need + (need * 7) // 10 + 40)  # U = w // 2, sign w % 2
        u = w >> 1
        kept = _exp_unit_coins(rng, u, t)  # kept w.p. exp(-u/t)
        u, negative = u[kept], (w[kept] & 1) == 1
        x = u + t64 * _geometric_runs(rng, u.size)
        x = np.where(negative, -x, x)[~(negative & (x == 0))][:need]
        out[filled:filled + x.size] = x
        filled += x.size
    return out.reshape(size) if size is not None else out[0]


#: Largest integer ``sigma`` of :func:`discrete_gaussian` (its acceptance test squares
#: |Y|·t − sigma², which must stay in int64).
MAX_GAUSSIAN_SIGMA = 1 << 12


def discrete_gaussian(rng, sigma, size, *, unit=1.0, tag=None):
    """Exact discrete Gaussian on the integers: P(x) proportional to exp(-x^2/(2 sigma^2)).

    Canonne, Kamath & Steinke (2020), Algorithm 3 with an integer ``sigma >= 1`` (so that
    sigma^2 is an integer): Y ~ discrete Laplace with t = sigma + 1, accepted with
    probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)), i.e. Bernoulli(exp(-num/den)) with
    num = (|Y| t - sigma^2)^2 and den = 2 sigma^2 t^2 (integers). Vectorised rejection.

    ``unit``: as for :func:`discrete_laplace` (the spy records ``sigma * unit``).

    Returns an int64 array of shape ``size``.
    """
    sigma = int(sigma)
    if not 1 <= sigma <= MAX_GAUSSIAN_SIGMA:
        raise ValueError(f"discrete_gaussian takes an integer sigma in [1, "
                         f"{MAX_GAUSSIAN_SIGMA}]; got {sigma}.")
    n = int(np.prod(size)) if size is not None else 1
    _record("discrete_gaussian", float(sigma) * unit, size, tag)
    s2, t = sigma * sigma, sigma + 1
    den = 2 * s2 * t * t
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    with _silenced():
        while todo.size:
            y = discrete_laplace(rng, t, todo.size)
            # |Y| t stays below 2^31, so num fits in int64; a draw beyond 2^18 (probability
            # below exp(-64) for t <= 4097) is redrawn, which conditions the output on
            # |x| < 2^18: a change of total variation below exp(-2^36 / (2 sigma^2)).
            small = np.abs(y) < (1 << 18)
            num = np.where(small, (np.abs(y) * t - s2), 0) ** 2
            ok = small & bernoulli_exp(rng, num, den)
            out[todo[ok]] = y[ok]
            todo = todo[~ok]
    return out.reshape(size) if size is not None else out[0]


@contextmanager
def _silenced():
    """Hide inner draws from the spy: the outer sampler records one draw."""
    saved = list(_RECORDERS)
    _RECORDERS.clear()
    try:
        yield
    finally:
        _RECORDERS.extend(saved)
