"""Learning halfspaces from public and private rows in the label-determined model (Bassily, Moran & Nandi)."""

from ._classifier import PPMHalfspaceClassifier
from ._sample_complexity import ppm_sample_complexity

__all__ = ["PPMHalfspaceClassifier", "ppm_sample_complexity"]
