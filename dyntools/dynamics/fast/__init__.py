"""Tuned training loops that :func:`dyntools.train` selects through ``Model.fast_path``."""
