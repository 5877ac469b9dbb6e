"""The package's version (the one of pyproject.toml; ``dyntools --version``, recorded in every result).

It sits on the ground floor so that the engine can record it without importing the package's façade."""

__version__ = "0.1.0"
