"""Synthetic covariate-shift data of Bassily, Mohri & Suresh (AISTATS 2023), §7.

The setting follows Cortes & Mohri (TCS 2014, §7.1): a target Gaussian sitting on the kink
of a piecewise-linear labelling function, and a source that is mostly a Gaussian on its
linear part. A linear model fit to the source alone is therefore biased on the target.
"""

import numbers

import numpy as np
from sklearn.utils import Bunch

__all__ = ["adaptation_label", "make_adaptation_data"]


def _as_generator(random_state):
    # Non-privacy randomness (data simulation): accept the usual sklearn seeds.
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if random_state is None or isinstance(random_state, numbers.Integral):
        return np.random.default_rng(random_state)
    raise ValueError(
        f"random_state must be None, an int, a numpy Generator or RandomState, got {random_state!r}."
    )


def adaptation_label(X):
    """Labelling function of BMS23 §7: ``f(x) = u.x`` if ``u.x > 0`` else ``u.x / 2``.

    ``u = (1/sqrt(d), ..., 1/sqrt(d))``. Noise-free, as in the paper.
    """
    X = np.asarray(X, dtype=float)
    s = X.sum(axis=1) / np.sqrt(X.shape[1])
    return np.where(s > 0, s, 0.5 * s)


def make_adaptation_data(
    n_source=1000, n_target=1000, n_test=10000, d=10, *, source_target_weight=0.25,
    random_state=None,
):
    """Generate the §7 experiment of Bassily, Mohri & Suresh (2023).

    - ``sigma^2 = 1/(9 d)``; every Gaussian is spherical with covariance ``sigma^2 I``.
    - Target ``P_X``: mean ``(-1, +1, -1, +1, ...) / sqrt(2d)`` (alternating signs, first
      coordinate negative, as printed).
    - ``Q_X``: mean ``(1, ..., 1) / sqrt(2d)``.
    - Source: the mixture ``0.25 P_X + 0.75 Q_X``; each source row draws its component
      i.i.d. (the source sample is i.i.d. from the mixture, BMS23 §2).
    - Labels ``y = f(x)`` with ``f`` of :func:`adaptation_label`, no label noise.

    Parameters
    ----------
    n_source : int, default=1000
        The number m of labelled public source rows (§7 uses 1000).
    n_target : int, default=1000
        The number n of private target rows (§7: 1000 ... 8000). Their labels are
        returned only for the oracle baseline.
    n_test : int, default=10000
        Labelled target rows for measuring test MSE (not specified in §7).
    d : int, default=10
        Dimension (§7 uses 10). Must be even for the alternating target mean to be
        orthogonal to ``u``; odd ``d`` is accepted but moves the target off the kink.
    source_target_weight : float, default=0.25
        Weight of ``P_X`` in the source mixture.
    random_state : int, numpy.random.Generator, RandomState or None, default=None
        Seed of the simulation (not privacy noise).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X_source, y_source`` (m rows), ``X_target, y_target`` (n rows; ``y_target`` is
        for the oracle only), ``X_test, y_test``, ``source_from_target`` (bool mask of
        source rows drawn from ``P_X``), ``mean_target``, ``mean_other``, ``sigma``.

    Notes
    -----
    Ambiguities in §7 and the choices made: "variance sigma^2 in all directions" is read as
    covariance ``sigma^2 I`` (not a total variance); the mixture is sampled per row rather
    than with exactly 25 % of the rows; labels carry no noise (none is mentioned); the test
    set size is ours. Row norms concentrate around ``sqrt(1/2 + 1/9) ~ 0.78``.
    """
    for name, v in (("n_source", n_source), ("n_target", n_target), ("n_test", n_test)):
        if not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}.")
    if not isinstance(d, numbers.Integral) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}.")
    if not 0.0 <= source_target_weight <= 1.0:
        raise ValueError(
            f"source_target_weight must lie in [0, 1], got {source_target_weight!r}."
        )
    rng = _as_generator(random_state)
    sigma = np.sqrt(1.0 / (9.0 * d))
    signs = np.where(np.arange(d) % 2 == 0, -1.0, 1.0)
    mean_p = signs / np.sqrt(2.0 * d)
    mean_q = np.ones(d) / np.sqrt(2.0 * d)

    from_p = rng.random(n_source) < source_target_weight
    X_source = np.where(from_p[:, None], mean_p, mean_q) + sigma * rng.standard_normal((n_source, d))
    X_target = mean_p + sigma * rng.standard_normal((n_target, d))
    X_test = mean_p + sigma * rng.standard_normal((n_test, d))
    return Bunch(
        X_source=X_source,
        y_source=adaptation_label(X_source),
        X_target=X_target,
        y_target=adaptation_label(X_target),
        X_test=X_test,
        y_test=adaptation_label(X_test),
        source_from_target=from_p,
        mean_target=mean_p,
        mean_other=mean_q,
        sigma=sigma,
    )
