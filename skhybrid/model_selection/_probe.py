"""What a fit would charge, learnt without letting it read a private row.

Every skhybrid estimator computes the events of its fit from parameters, the mask and the
number of rows alone, and charges them before it reads a private row. A probing
accountant records those events and stops the fit right there, so a search can price a
candidate (and refuse it) before it charges anything or trains anything.
"""

from collections.abc import Sequence
from numbers import Real

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from ..accounting import PrivacyAccountant
from ..preprocessing import PublicFitTransformer
from ..utils._sklearn_compat import get_tags

__all__ = ["privacy_prefix", "check_private_steps", "probe_events", "mask_fit_params"]


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


def _fits_no_private_row(step):
    """A step whose fit learns nothing from the private rows it is given."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return True
    if isinstance(step, PublicFitTransformer):  # fit on the public rows only
        return True
    if isinstance(step, Pipeline):
        return all(_fits_no_private_row(inner) for _, inner in step.steps)
    if isinstance(step, FunctionTransformer) and step.check_inverse and not (
            step.func is None or step.inverse_func is None):
        # Its fit tries inverse_func on a sample of the rows and warns when it fails: a
        # bit about the private rows.
        return False
    # Stateless transformers (FunctionTransformer, Normalizer, ...) say so in their tags.
    return get_tags(step).requires_fit is False


def _batch_function(step):
    """A FunctionTransformer in ``step`` (or inside it) whose function is not known to
    treat rows apart, or None.

    A function of the whole batch (``scale`` standardises by the batch's own mean) lets
    one private row move every other row's features, beyond the sensitivity the noise is
    calibrated to, when it transforms the training rows or the scored validation rows,
    wrapped in a PublicFitTransformer or not. Only an elementwise numpy ufunc is known to
    treat rows apart.
    """
    if step is None or isinstance(step, str):
        return None
    inner = [step, *step.get_params(deep=True).values()] if hasattr(step, "get_params") \
        else [step]
    for est in inner:
        if isinstance(est, FunctionTransformer) and not (
                est.func is None or isinstance(est.func, np.ufunc)):
            return est  # (inverse_func runs only in inverse_transform and check_inverse)
    return None


def structural_grid(param_distributions):
    """The candidates of ``param_distributions`` that differ in anything but numbers.

    A Pipeline step, a function or a flag set by the grid can change which steps see the
    private rows; a number cannot. Lists keep only their non-numeric values' keys (all of
    a key's values when one of them is not a number), distributions are left out.
    """
    grids = []
    for dist in param_distributions:
        keep = {}
        for key, values in dist.items():
            if isinstance(values, Sequence) and not isinstance(values, str) and any(
                    isinstance(v, bool) or not isinstance(v, Real) for v in values):
                keep[key] = list(values)
        grids.append(keep)
    return ParameterGrid(grids)


def check_candidate_steps(estimator, param_distributions, prefix):
    """:func:`check_private_steps` on every candidate the grid can make, not only the
    template: a grid value may replace a step (``{"prep": [StandardScaler()]}``), turn on a
    ``FunctionTransformer``'s ``check_inverse`` or swap the private step itself.

    Checked over the whole (structural) grid, before anything is drawn: which candidates a
    search draws, and how many, must not decide whether it is refused.
    """
    for params in structural_grid(param_distributions):
        if not params:
            continue
        candidate = clone(estimator).set_params(**params)
        try:
            same = privacy_prefix(candidate) == prefix
        except ValueError:
            same = False
        if not same:
            raise ValueError(
                f"The candidate {sorted(params)} of param_distributions replaces the private "
                f"step ({prefix[:-2] or type(estimator).__name__!r}) with one that is not a "
                "skhybrid estimator: its fits would not be charged. Tune only the private "
                "step's parameters. Nothing was charged.")
        check_private_steps(candidate, prefix)


def check_private_steps(estimator, prefix):
    """Refuse an estimator in which anything besides the private step fits on private rows.

    The search fits every run on the private training rows. In a Pipeline, each other step
    is fitted on them too, with no noise, and ``best_estimator_`` releases what it learnt
    (a ``StandardScaler``'s ``mean_`` moves with one private row) outside the search's ε.
    Allowed besides the private step (named by ``prefix``): a
    :class:`~skhybrid.preprocessing.PublicFitTransformer` (fit on public rows only),
    ``"passthrough"`` or ``None``, a stateless transformer (``get_tags(step).requires_fit``
    is False: ``Normalizer``, ...; a ``FunctionTransformer`` only with an elementwise numpy
    ufunc, not one that checks its ``inverse_func`` on the rows) and Pipelines of these. The
    private step may sit in nested Pipelines only: another meta-estimator may fit
    anything on the rows it is given.

    Raises
    ------
    ValueError
        Naming the step and the fix.
    """
    path = prefix[: -len("__")].split("__") if prefix else []
    container, where = estimator, ""
    for name in path:
        if not isinstance(container, Pipeline):
            raise ValueError(
                f"PrivateSearchCV cannot tune {type(estimator).__name__}: its private step "
                f"sits inside {type(container).__name__}"
                f"{f' (step {where[:-2]!r})' if where else ''}, which may fit more than the "
                "private step on the private rows, with no noise. Tune the skhybrid "
                "estimator alone or as a step of a Pipeline.")
        for other, step in container.steps:
            batch = None if other == name else _batch_function(step)
            if batch is not None:
                func = batch.func
                raise ValueError(
                    f"The Pipeline step {where + other!r} applies FunctionTransformer(func="
                    f"{getattr(func, '__name__', type(func).__name__)}) to the whole batch of "
                    "rows: unless that function treats each row apart, one private row moves "
                    "the other rows' features, beyond the sensitivity the noise is calibrated "
                    "to. Use an elementwise numpy ufunc (np.log1p, ...), or apply a row-wise "
                    "function to X before the search. Nothing was charged.")
            if other != name and not _fits_no_private_row(step):
                raise ValueError(
                    f"The Pipeline step {where + other!r} ({type(step).__name__}) would be "
                    "fitted on the private training rows of every run, with no noise, and "
                    "best_estimator_ would release what it learnt from them outside the "
                    f"search's epsilon. Wrap it as PublicFitTransformer({type(step).__name__}"
                    "(...)) (skhybrid.preprocessing: fitted on the public rows only) or use "
                    "a stateless transformer (FunctionTransformer with a numpy ufunc and "
                    "check_inverse=False, Normalizer). Nothing was charged.")
        container, where = container.get_params(deep=True)[name], where + name + "__"


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
