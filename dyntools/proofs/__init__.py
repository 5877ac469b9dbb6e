"""``dyntools.proofs`` in a source checkout: the repository's ``proofs/`` folder.

Installed, ``setup.py`` builds the package ``dyntools.proofs`` from that folder itself and this file is not part
of the wheel. In a checkout this stub sets the package's ``__path__`` — the import system's own list of the folders
a package's modules are found in — to the folder, so ``dyntools.proofs.voronoi`` is ``proofs/voronoi.py``
under one name, with no ``sys.path`` or ``sys.modules`` entry of its own (``proofs/__init__.py`` stays empty).
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[2] / "proofs")]
