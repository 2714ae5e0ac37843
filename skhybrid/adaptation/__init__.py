"""Private domain adaptation from a public labelled source to a private unlabelled target
(Bassily, Mohri & Suresh)."""

from ._data import make_adaptation_data
from ._regressor import DiscrepancyAdaptationRegressor

__all__ = ["DiscrepancyAdaptationRegressor", "make_adaptation_data"]
