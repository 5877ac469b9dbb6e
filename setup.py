"""Which packages the distribution installs (the rest of the metadata is in pyproject.toml).

The repository's ``simulations/`` and ``proofs/`` folders stay at its root, where a reader finds them, and
are installed *inside* the package, as ``dyntools.simulations`` and ``dyntools.proofs``: the only top-level
package in site-packages is ``dyntools`` (no ``simulations`` or ``proofs`` to shadow a researcher's own
packages of those names). From a source checkout ``dyntools/__init__.py`` maps the two folders to the same
names, so the code imports them one way (``tests/test_packaging.py`` builds the wheel and checks).
"""

from setuptools import find_packages, setup

#: installed name → the repository folder it is built from
NESTED = {"dyntools.simulations": "simulations", "dyntools.proofs": "proofs"}

packages = find_packages(include=["dyntools", "dyntools.*"], exclude=list(NESTED))   # not the stubs
for name, folder in NESTED.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=NESTED)
