"""``dyntools.simulations`` in a source checkout: the repository's ``simulations/`` folder.

The same mechanism as :mod:`dyntools.proofs` (see its stub): installed, ``setup.py`` builds the package from the
folder and this file is not part of the wheel; in a checkout the package's ``__path__`` is the folder
(``simulations/__init__.py`` stays empty).
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[2] / "simulations")]
