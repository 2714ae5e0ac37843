"""Floats on the safe side of an exact value: sensitivities, TV bounds and noise parameters
that a proof states as real numbers, computed from float parameters and rounded up."""

import math
from fractions import Fraction


def float_at_least(value):
    """The smallest float at least ``value`` (a :class:`~fractions.Fraction` or int).

    ``float(value)`` rounds to nearest, so it can land one unit in the last place below;
    then the next float up is the answer.
    """
    out = float(value)
    return math.nextafter(out, math.inf) if Fraction(out) < value else out


def float_at_most(value):
    """The largest float at most ``value`` (a :class:`~fractions.Fraction` or int)."""
    out = float(value)
    return math.nextafter(out, -math.inf) if Fraction(out) > value else out


def float_sqrt_at_least(value):
    """The smallest float whose square is at least ``value`` (>= 0), i.e. √value rounded up."""
    out = math.sqrt(float_at_least(value))
    while Fraction(out) ** 2 < value:
        out = math.nextafter(out, math.inf)
    while out > 0 and Fraction(math.nextafter(out, 0.0)) ** 2 >= value:
        out = math.nextafter(out, 0.0)
    return out
