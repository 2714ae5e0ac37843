"""Local-model building blocks of the hybrid protocols (BKNSS §2.3–2.4).

Each protocol is ε-LDP with one report per agent; the assignment of agents to levels,
rounds and Hadamard columns is drawn from public randomness, independently of the data.
"""

from .cdf import HierarchicalCDF, cdf_sample_size
from .frequency_oracle import HadamardResponse, fwht, hadamard_sign
from .heavy_hitters import HeavyHitters, heavy_hitters
from .quantile import QuantileSearch, quantile_sample_size, rr_quantile_search

__all__ = [
    "fwht",
    "hadamard_sign",
    "HadamardResponse",
    "HierarchicalCDF",
    "cdf_sample_size",
    "HeavyHitters",
    "heavy_hitters",
    "QuantileSearch",
    "rr_quantile_search",
    "quantile_sample_size",
]
