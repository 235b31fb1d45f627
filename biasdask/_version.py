"""The package version (one place for pyproject.toml and biasdask.__version__)."""

__all__ = []


__version__ = "0.1.0"
