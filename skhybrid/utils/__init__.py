"""Internal utilities. ``_sklearn_compat`` holds every private or version-dependent
scikit-learn import the package uses; nothing here is public API."""
