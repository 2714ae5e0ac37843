"""Private hyperparameter tuning: a search covered by one charge, and scorers that say
what they release.

A score computed on private validation rows is a release, not post-processing of the
fit: a plain ``GridSearchCV`` with the default scorer publishes scores the accountant
never charged. Use :class:`PrivateSearchCV` (one charge for the whole search),
:func:`public_scorer` (free scores on public rows) or :func:`dp_scorer` (charged noisy
scores), and :func:`search_cost` to price a search before it runs.
"""

from ._cost import SearchCost, search_cost
from ._scorers import dp_scorer, public_scorer
from ._search import PrivateSearchCV

__all__ = ["PrivateSearchCV", "public_scorer", "dp_scorer", "search_cost", "SearchCost"]
