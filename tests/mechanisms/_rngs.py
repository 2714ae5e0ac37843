"""Generators that force a sampler's rare branches, for exact-law tests."""

import numpy as np


class ZeroFirst:
    """A generator whose first ``integers`` draw is all zeros (a sampler's rarest start,
    e.g. U = 0 below n!, from which an exp(-1) coin goes on past k = n), then seeded."""

    def __init__(self, seed=0):
        self.rng, self.first = np.random.default_rng(seed), True

    def integers(self, low, high, size):
        if self.first:
            self.first = False
            return np.zeros(size, dtype=np.int64)
        return self.rng.integers(low, high, size)
