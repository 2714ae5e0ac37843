"""Sample sizes of Theorem 4.6 (Bassily, Moran & Nandi 2020) for PPM learning of halfspaces."""

import math
from numbers import Integral, Real

__all__ = ["ppm_sample_complexity"]


def _check_unit(value, name):
    if isinstance(value, bool) or not isinstance(value, Real) or not (0 < value < 1):
        raise ValueError(
            f"{name} must be a float in (0, 1), as Theorem 4.6 assumes; got {value!r}."
        )
    return float(value)


def ppm_sample_complexity(d, alpha, beta, epsilon, *, setting="agnostic", constant=1.0):
    """Total sample size of Theorem 4.6, with the hidden constant made explicit.

    Theorem 4.6 (label-determined model, ``A_LearnHalf`` is an (α, β, ε)-PPM learner):

    - agnostic:   ``n = O((d² log(d/(εα)) + log(1/β)) · max(1/α², 1/(εα)))``
    - realizable: ``n = O((d² log(d/(εα)) + log(1/β)) / (εα))``
      (the same expression as Claim 4.5 for the excess *empirical* error).

    The paper prints no constant; this returns
    ``ceil(constant · expression)`` with natural logarithms, so ``constant=1`` gives
    the bare expression — an order of magnitude, not a guarantee.

    Parameters
    ----------
    d : int
        Dimension (``d >= 1``).
    alpha, beta, epsilon : float in (0, 1)
        Excess error, failure probability and privacy parameter.
    setting : {"agnostic", "realizable"}, default="agnostic"
    constant : float, default=1.0
        Multiplier standing in for the ``O(·)``.

    Returns
    -------
    n : int
        The total sample size.

    Examples
    --------
    >>> from skhybrid.ppm import ppm_sample_complexity
    >>> ppm_sample_complexity(2, 0.1, 0.05, 0.5, setting="realizable")
    356
    """
    if isinstance(d, bool) or not isinstance(d, Integral) or d < 1:
        raise ValueError(f"d must be a positive integer; got {d!r}.")
    alpha = _check_unit(alpha, "alpha")
    beta = _check_unit(beta, "beta")
    epsilon = _check_unit(epsilon, "epsilon")
    if isinstance(constant, bool) or not isinstance(constant, Real) or not 0 < constant < math.inf:
        raise ValueError(f"constant must be a positive finite float; got {constant!r}.")
    core = d**2 * math.log(d / (epsilon * alpha)) + math.log(1 / beta)
    if setting == "realizable":
        value = core / (epsilon * alpha)
    elif setting == "agnostic":
        value = core * max(1 / alpha**2, 1 / (epsilon * alpha))
    else:
        raise ValueError(f"setting must be 'agnostic' or 'realizable'; got {setting!r}.")
    return math.ceil(constant * value)
