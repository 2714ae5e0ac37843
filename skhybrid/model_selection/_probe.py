"""What a fit would charge, learnt without letting it read a private row.

Every skhybrid estimator computes the events of its fit from parameters, the mask and the
number of rows alone, and charges them before it reads a private row. A probing
accountant records those events and stops the fit right there, so a search can price a
candidate (and refuse it) before it charges anything or trains anything.
"""

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ..accounting import PrivacyAccountant

__all__ = ["privacy_prefix", "probe_events", "mask_fit_params"]


class _Charged(Exception):
    """Raised by the probing accountant at the fit's charge, carrying its events."""

    def __init__(self, events):
        super().__init__("probe")
        self.events = list(events)


class _ProbingAccountant(PrivacyAccountant):
    """An accountant that records the events of the first spend and stops the fit."""

    def __init__(self):
        super().__init__(epsilon=np.inf, delta=1.0)

    def spend(self, events, *, source=None):
        raise _Charged(events)


def privacy_prefix(estimator):
    """The parameter prefix of the one step that holds ``epsilon`` and ``accountant``.

    ``""`` for a skhybrid estimator, ``"clf__"`` for a Pipeline whose step ``clf`` is one.

    Raises
    ------
    ValueError
        When no step, or more than one, has both parameters.
    """
    params = estimator.get_params(deep=True)
    prefixes = sorted(
        key[: -len("epsilon")] for key in params
        if key.endswith("epsilon") and key[: -len("epsilon")] + "accountant" in params
        and (key == "epsilon" or key.endswith("__epsilon"))
    )
    if len(prefixes) != 1:
        what = "no step" if not prefixes else f"{len(prefixes)} steps ({prefixes})"
        raise ValueError(
            f"{type(estimator).__name__} cannot be tuned privately: {what} with both an "
            "'epsilon' and an 'accountant' parameter. PrivateSearchCV tunes one skhybrid "
            "estimator (alone or as the private step of a Pipeline)."
        )
    return prefixes[0]


def _steps_requesting(estimator, mask_name):
    if isinstance(estimator, Pipeline):
        return [name for name, step in estimator.steps
                if step not in (None, "passthrough")
                and hasattr(step, "get_metadata_routing")
                and step.get_metadata_routing().consumes("fit", [mask_name])]
    return None


def mask_fit_params(estimator, mask_name, mask, routing_enabled):
    """Fit parameters that deliver ``mask`` to the estimator, routed as sklearn would.

    A plain estimator takes ``mask_name=mask``. A Pipeline takes the same with sklearn's
    metadata routing on, and ``step__mask_name=mask`` for every step that asks for the
    mask without it (``Pipeline`` then forwards prefixed parameters).
    """
    if mask is None:
        return {}
    steps = _steps_requesting(estimator, mask_name)
    if steps is None or routing_enabled:
        return {mask_name: mask}
    return {f"{step}__{mask_name}": mask for step in steps}


def probe_events(estimator, prefix, X, y, fit_params):
    """The events ``estimator.fit(X, y, **fit_params)`` would charge (nothing is trained).

    Returns
    -------
    events : list of PrivacyEvent or None
        ``None`` when the fit finished without charging (an estimator that does not keep
        the charge-before-compute contract: it cannot be tuned privately).
    """
    probe = clone(estimator).set_params(**{prefix + "accountant": _ProbingAccountant()})
    try:
        probe.fit(X, y, **fit_params)
    except _Charged as charged:
        return charged.events
    return None
