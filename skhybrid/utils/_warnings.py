"""The library's warning filters, changed one block at a time per process.

``warnings.catch_warnings`` saves and restores process-wide state. Two blocks that
overlap in two threads restore each other's filters: a block that silences warnings
about private rows can then show them, or leave an ``ignore`` filter behind that hides
later warnings (red team 15). Every block of the library goes through
:func:`catch_warnings`, which holds one re-entrant lock for its duration. (Python 3.14
makes the state context-local; before it, a user's own ``catch_warnings`` in another
thread can still overlap with the library's.)
"""

import contextlib
import threading
import warnings

__all__ = ["WARNINGS_LOCK", "catch_warnings"]

#: Held by every ``catch_warnings`` block of the library (re-entrant: blocks nest).
WARNINGS_LOCK = threading.RLock()

#: Seconds a block waits for the lock before it goes on without it.
_WAIT = 1.0


@contextlib.contextmanager
def catch_warnings(*args, **kwargs):
    """:class:`warnings.catch_warnings` under :data:`WARNINGS_LOCK`.

    A block waits at most ``_WAIT`` seconds for the lock, then goes on without it: the
    thread that holds it may be waiting for this one (a block around a fit whose thread
    pool runs another block: ``search_cost`` over a ``ColumnTransformer(n_jobs=2)`` of
    ``PublicFitTransformer`` steps on joblib's threading backend hung; red team 16), and an
    overlap is better than a deadlock.
    """
    locked = WARNINGS_LOCK.acquire(timeout=_WAIT)
    try:
        with warnings.catch_warnings(*args, **kwargs) as caught:
            yield caught
    finally:
        if locked:
            WARNINGS_LOCK.release()
