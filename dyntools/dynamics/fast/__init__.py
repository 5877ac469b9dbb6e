"""Tuned training loops for settings a model knows well, selected by :func:`dyntools.train` through
``model.fast_path``; each is tested equal to the generic loop of :mod:`dyntools.dynamics.train`."""
