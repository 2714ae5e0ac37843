"""Privacy accounting: events, composition, the shared accountant and its ledgers."""

from ._accountant import BudgetExceededError, PrivacyAccountant, best_view, compose_events
from ._composition import (
    calibrate_gaussian_sigma,
    calibrate_laplace_scale,
    calibrate_pure_epsilon,
)
from ._events import POPULATIONS, PrivacyEvent
from ._ledger import DetachedLedgerError, LedgerUnavailableError

__all__ = [
    "PrivacyAccountant",
    "PrivacyEvent",
    "BudgetExceededError",
    "DetachedLedgerError",
    "LedgerUnavailableError",
    "POPULATIONS",
    "compose_events",
    "best_view",
    "calibrate_pure_epsilon",
    "calibrate_gaussian_sigma",
    "calibrate_laplace_scale",
]
