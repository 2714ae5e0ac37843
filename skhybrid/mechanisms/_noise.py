"""Every random draw that protects privacy goes through this module.

Funnelling noise through a handful of functions buys two things: estimators never
draw noise by hand (DESIGN §1), and tests can *spy* on every draw made during a fit
(:func:`record_noise`) and compare it with the events charged to the accountant
(AUDITING.md, layer D).

All functions take a :class:`numpy.random.Generator`; none touches global state.

Notes
-----
These samplers use floating-point arithmetic and are therefore exposed to the
floating-point attacks of Mironov (2012) and Jin et al. (2022) on textbook
Laplace/Gaussian samplers. skhybrid is a research library: use a hardened sampler
(e.g. OpenDP) before deploying a release whose threat model includes such attacks.
"""

from contextlib import contextmanager

import numpy as np

__all__ = [
    "NoiseDraw",
    "record_noise",
    "laplace",
    "gaussian",
    "gumbel",
    "bernoulli",
    "integers",
    "permutation",
    "uniform",
    "gamma",
]

_RECORDERS = []


class NoiseDraw:
    """One recorded call to a noise primitive.

    Attributes
    ----------
    kind : str
        Name of the primitive (``"laplace"``, ``"gaussian"``, ...).
    scale : float
        Its scale parameter (Laplace ``b``, Gaussian ``sigma``, Gumbel scale,
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
    >>> draws[0].kind, draws[0].scale
    ('laplace', 1.0)
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


def laplace(rng, scale, size=None, *, tag=None):
    """Draw Laplace(0, ``scale``) noise."""
    _record("laplace", scale, _size_of(size, scale), tag)
    return rng.laplace(0.0, scale, size)


def gaussian(rng, sigma, size=None, *, tag=None):
    """Draw N(0, ``sigma**2``) noise (``sigma`` is a standard deviation)."""
    _record("gaussian", sigma, _size_of(size, sigma), tag)
    return rng.normal(0.0, sigma, size)


def gumbel(rng, scale, size=None, *, tag=None):
    """Draw Gumbel(0, ``scale``) noise (used by the Gumbel-max exponential mechanism)."""
    _record("gumbel", scale, _size_of(size, scale), tag)
    return rng.gumbel(0.0, scale, size)


def bernoulli(rng, p, size=None, *, tag=None):
    """Draw Bernoulli(``p``) bits as a boolean array (randomized response, subsampling)."""
    _record("bernoulli", p, _size_of(size, p), tag)
    return rng.random(_size_of(size, p)) < p


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
