"""skhybrid: differentially private learners for mixed-trust data, for scikit-learn.

Public rows, a trusted curator's rows and local-model agents, in one API: every learner
takes a boolean row mask in ``fit`` and charges a shared :class:`PrivacyAccountant`.
Importing skhybrid never changes scikit-learn's global configuration.
"""

from .accounting import BudgetExceededError, PrivacyAccountant, PrivacyEvent
from .exceptions import DegenerateModelWarning, PrivacyLeakWarning, SeedReuseWarning
from .learners import DPLogisticRegression
from .preprocessing import PublicFitTransformer

__version__ = "0.1.0.dev0"

__all__ = [
    "PrivacyAccountant",
    "PrivacyEvent",
    "BudgetExceededError",
    "PrivacyLeakWarning",
    "DegenerateModelWarning",
    "SeedReuseWarning",
    "DPLogisticRegression",
    "PublicFitTransformer",
]
