"""The package version, in a module of its own so that any layer can read it without importing
the package root (which loads the Python API)."""

__version__ = "0.1.0"


def version_line() -> str:
    """What `clineval --version` prints."""
    return f"clineval {__version__}"
