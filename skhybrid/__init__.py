"""skhybrid: differentially private learners for mixed-trust data, for scikit-learn.

Public rows, a trusted curator's rows and local-model agents, in one API: every learner
takes a boolean row mask in ``fit`` and charges a shared :class:`PrivacyAccountant`.
Importing skhybrid never changes scikit-learn's global configuration.
"""

# ``import skhybrid`` imports no submodule: each public name below is imported on first
# use (``skhybrid.X`` or ``from skhybrid import X``), so a command or script pays only
# for the parts it uses. To export a name, add one line to _EXPORTS; to make a
# subpackage reachable as ``skhybrid.<name>`` without importing it first, one line to
# _SUBMODULES.

import importlib as _importlib

__version__ = "0.1.0.dev0"

# public name -> the submodule that defines it
_EXPORTS = {
    "PrivacyAccountant": "accounting",
    "PrivacyEvent": "accounting",
    "BudgetExceededError": "accounting",
    "PrivacyLeakWarning": "exceptions",
    "DegenerateModelWarning": "exceptions",
    "SeedReuseWarning": "exceptions",
    "DPLogisticRegression": "learners",
    "PublicFitTransformer": "preprocessing",
}

_SUBMODULES = (
    "accounting",
    "adaptation",
    "datasets",
    "exceptions",
    "experiments",
    "hybrid",
    "learners",
    "mechanisms",
    "model_selection",
    "ppm",
    "preprocessing",
    "transfer",
)

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))
