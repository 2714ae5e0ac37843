"""Hybrid-model protocols: a trusted curator plus local-model agents (Beimel et al.)."""

from ._local_threshold import LocalThresholdClassifier, ParityAndThresholdClassifier
from ._parity_threshold import ParityThresholdClassifier
from ._select_estimate import SelectThenEstimate

__all__ = [
    "LocalThresholdClassifier",
    "ParityAndThresholdClassifier",
    "ParityThresholdClassifier",
    "SelectThenEstimate",
]
