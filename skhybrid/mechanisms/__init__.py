"""Central and local mechanisms. Each declares its privacy event before it runs."""

from .exponential import (
    ExponentialMechanism,
    ReportNoisyMax,
    exponential_mechanism,
    report_noisy_max,
    report_noisy_min,
)
from .gaussian import GaussianMechanism, gaussian_mechanism
from .laplace import LaplaceMechanism, laplace_mechanism
from .randomized_response import GaussianRandomizedResponse, RandomizedResponse

__all__ = [
    "LaplaceMechanism",
    "laplace_mechanism",
    "GaussianMechanism",
    "gaussian_mechanism",
    "ExponentialMechanism",
    "exponential_mechanism",
    "ReportNoisyMax",
    "report_noisy_max",
    "report_noisy_min",
    "RandomizedResponse",
    "GaussianRandomizedResponse",
]
