"""Paper reproductions, run by ``python -m skhybrid reproduce <name>``.

Each family has one module here (``transfer.py``, ``ppm.py``, ``adaptation.py``,
``hybrid.py``) defining ``EXPERIMENTS = {name: function}``. A function takes
``(out_dir, quick=False, seed=0)``, prints a table, saves its figures under ``out_dir``
and returns the table's rows (a list of dicts) so slow tests can assert orderings on a
reduced run (``quick=True``).
"""

import importlib

from ._plotting import check_matplotlib

__all__ = ["available", "run"]

_FAMILIES = ("transfer", "ppm", "adaptation", "hybrid")


def available():
    """Return every registered reproduction.

    A family whose module cannot be imported (an optional dependency is missing) is left
    out.

    Returns
    -------
    experiments : dict
        ``{name: function}``; each function takes ``(out_dir, quick=False, seed=0)``.
    """
    found = {}
    for family in _FAMILIES:
        try:
            module = importlib.import_module(f"{__name__}.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{family}":
                raise
            continue
        found.update(module.EXPERIMENTS)
    return found


def run(name, out_dir="figures", quick=False, seed=0):
    """Run one reproduction by name.

    The command ``python -m skhybrid reproduce <name>`` calls this: it prints a table and
    saves figures in ``out_dir``.

    Parameters
    ----------
    name : str
        A key of :func:`available`.
    out_dir : str, default="figures"
        Where figures and cached results go.
    quick : bool, default=False
        Run a smaller configuration (seconds to minutes instead of the paper's size).
    seed : int, default=0
        Seed of the data and of the privacy noise.

    Returns
    -------
    rows : list of dict
        The experiment's result rows.

    Raises
    ------
    ImportError
        Before any computation, if matplotlib (needed for the figures; an optional
        dependency, ``pip install "skhybrid[examples]"``) is missing.
    """
    experiments = available()
    if name not in experiments:
        raise ValueError(
            f"Unknown experiment {name!r}; available: {', '.join(sorted(experiments)) or 'none'}."
        )
    check_matplotlib()
    return experiments[name](out_dir, quick=quick, seed=seed)
