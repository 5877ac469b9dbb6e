"""The project's own promises: README Quickstart ↔ .ci/run, lint, and the CLI skeleton."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_quickstart_has_exactly_two_commands():
    cmds = quickstart_commands()
    assert len(cmds) == 2
    assert "dyntools reproduce" in cmds[0]
    assert "pytest" in cmds[1]
    assert all("\n" not in c for c in cmds)


def test_ci_runs_the_readme_test_command_verbatim():
    test_cmd = quickstart_commands()[1]
    ci_lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert test_cmd in ci_lines
    runs = [ln for ln in ci_lines if "-m pytest" in ln and not ln.startswith("#")]
    assert runs[0] == test_cmd, "the README's test command is .ci/run's first test run"


def test_ci_runs_the_suite_again_under_the_newest_python_in_the_classifiers():
    """Issue 43: a second run in a fresh venv outside the clone, under the newest Python that pyproject's
    classifiers list, with the newest dependencies and dyntools' own deprecations as errors."""
    text = (ROOT / ".ci/run").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    classifiers = set(re.findall(r'"([^"]+)"', pyproject))
    assert {f"Programming Language :: Python :: 3.{m}" for m in (11, 12, 13)} <= classifiers
    assert "requires-python = \">=3.11\"" in pyproject
    second = text[text.find(quickstart_commands()[1]) + len(quickstart_commands()[1]):]
    assert "Programming Language :: Python :: 3" in text and "mktemp -d" in second
    assert re.search(r'pip" install -q --upgrade "\.\[test\]" numpy scipy sympy matplotlib', second)
    assert re.search(r'\nDYNTOOLS_OWN_DEPRECATIONS_AS_ERRORS=1 "\$venv/bin/python" -m pytest -q\n', second)
    import importlib.util

    spec = importlib.util.spec_from_file_location("ci_conftest", ROOT / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    AS_ERRORS, own = conftest.AS_ERRORS, conftest.OWN_MODULES
    assert {"DeprecationWarning", "FutureWarning"} <= set(AS_ERRORS)
    assert all(re.match(own, m) for m in ("dyntools", "dyntools.store", "dyntools.simulations.sde"))
    assert not any(re.match(own, m) for m in ("numpy", "numba.core.errors", "dyntools_user_loop_1", "sympy"))


def test_ci_picks_the_newest_python_that_the_classifiers_list(tmp_path):
    """.ci/run's interpreter search: the highest 3.N of pyproject's classifiers among ~/.pyenv/versions/*; a
    newer unsupported one (3.99) and one that refuses to run (a pre-release, a free-threaded build) are passed
    over; none present means an empty answer (the step is skipped)."""
    text = (ROOT / ".ci/run").read_text()
    function = text[text.index("newest_supported_python() {"):]
    function = function[:function.index("\n}\n") + 3]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home")}

    def newest():
        script = f"cd {ROOT}\n{function}newest_supported_python\n"
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env).stdout.strip()

    assert newest() in ("", *(f"/usr/bin/python3.{m}" for m in (11, 12, 13)))   # no pyenv: what PATH has
    for version, answer in (("3.12.1", "print(12)"), ("3.13.0", "print(13)"), ("3.99.0", "print(99)"),
                            ("3.13.1t", "raise SystemExit(1)")):
        fake = tmp_path / "home" / ".pyenv" / "versions" / version / "bin" / "python3"
        fake.parent.mkdir(parents=True)
        fake.write_text(f"#!/bin/sh\n{sys.executable} -c '{answer}'\n")
        fake.chmod(0o755)
    assert newest() == str(tmp_path / "home" / ".pyenv" / "versions" / "3.13.0" / "bin" / "python3")


def test_ci_installs_chromium_before_the_tests():
    """tests/test_docs.py needs a browser: .ci/run installs Debian's chromium quietly when it is missing."""
    text = (ROOT / ".ci/run").read_text()
    install = text.find("apt-get install")
    assert install != -1 and "chromium" in text[install:text.find("\n", install + 200)]
    assert install < text.find(quickstart_commands()[1])


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
                    reason="ruff not installed")
def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, as printed."""
    return re.findall(r"```python\n(.*?)\n```", path.read_text(), flags=re.S)


def test_readme_examples_run(tmp_path, monkeypatch):
    """The README's Python examples run as printed, and its claim comes out as its comment says."""
    import dyntools as dt

    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) == 2 and "dt.train(" in blocks[0] and "CLAIMS" in blocks[1]
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {})
    assert dt.load(tmp_path / "runs" / "adam-diag").status in ("converged", "completed")
    namespace = {}
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    result = dt.prove(namespace["CLAIMS"])["m-hat-is-the-average"]
    assert result.verdict == "refuted"
    shown = "refuted ... counterexample beta=1/2, t=2, g[1]=0, g[2]=1, difference=1/6"
    assert shown in (ROOT / "README.md").read_text()


def test_readme_is_short_and_has_no_issue_numbers():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert not re.search(r"issue\s*#?\d+|#\d+\b", text, flags=re.I)


def test_version_is_one_and_printed(cli):
    """``dyntools --version`` prints the version of pyproject.toml, and results record it."""
    import tomllib

    import dyntools
    from dyntools.engine.result import package_versions

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert dyntools.__version__ == declared
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"dyntools {declared}"
    assert package_versions()["dyntools"] == declared


def _built_package(tmp_path: Path) -> tuple[Path, list[str]]:
    """What ``pip install .`` puts into site-packages, built by setuptools from a copy of the sources (the
    checkout is left untouched): the build's library folder and the distribution's top-level names."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for folder in ("dyntools", "simulations", "proofs"):
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-base", str(tmp_path / "build"),
                           "--build-lib", str(tmp_path / "site"), "egg_info", "--egg-base", str(tmp_path)],
                          cwd=src, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (info,) = tmp_path.glob("*.egg-info")
    return tmp_path / "site", (info / "top_level.txt").read_text().split()


@pytest.mark.skipif(subprocess.run([sys.executable, "-c", "import setuptools"]).returncode != 0,
                    reason="setuptools is needed to build the package")
def test_the_install_has_dyntools_alone_with_simulations_and_proofs_inside(tmp_path):
    """``pip install .`` puts one top-level package into site-packages, ``dyntools`` (no ``simulations`` or
    ``proofs`` to shadow a user's own); the repository's simulations/ and proofs/ are in it as
    dyntools.simulations and dyntools.proofs, and the installed package finds them from any directory."""
    site, top_level = _built_package(tmp_path)
    assert top_level == ["dyntools"]
    assert sorted(p.name for p in site.iterdir()) == ["dyntools"]
    for folder, installed in (("simulations", "dyntools/simulations"), ("proofs", "dyntools/proofs"),
                              ("dyntools", "dyntools")):
        for py in (ROOT / folder).rglob("*.py"):
            rel = py.relative_to(ROOT / folder).as_posix()
            assert (site / installed / rel).is_file(), f"{folder}/{rel} is not installed as {installed}/{rel}"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = ("import dyntools, dyntools.simulations as s, dyntools.proofs.report as r\n"
            "from dyntools import plugins\n"
            "assert s.__file__.startswith(dyntools.__path__[0]) and r.__file__.startswith(dyntools.__path__[0])\n"
            "print(len(plugins.experiments('simulate')), len(plugins.catalogue()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "NUMBA_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    n_simulate, n_catalogue = map(int, proc.stdout.split())
    assert n_simulate > 5 and n_catalogue > 5
    for folder in ("simulations", "proofs"):      # built from the root folders, not from the checkout's stubs
        assert (site / "dyntools" / folder / "__init__.py").read_text() == (ROOT / folder / "__init__.py").read_text()

    code = ("import dyntools as dt, dyntools.proofs as p\n"
            "print(p.__path__[0]); print(','.join(dt.claim_families()))")
    for pythonpath, home in ((str(site), site / "dyntools"), (f"{ROOT}:{site}", ROOT)):
        # the wheel alone; the checkout first (the README's test command after `pip install .`): it shadows
        proc = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "NUMBA_CACHE_DIR": str(tmp_path)})
        assert proc.returncode == 0, proc.stderr
        path, families = proc.stdout.split()
        assert Path(path).resolve() == (home / "proofs").resolve()
        assert families.split(",")[0] == "sgd-weight-decay" and len(families.split(",")) > 10
    proc = subprocess.run([sys.executable, "-m", "dyntools.proofs", "brownian"], cwd=elsewhere, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)})
    assert proc.returncode == 0 and "brownian-projection-l1-norm" in proc.stdout, proc.stderr


def test_a_checkout_imports_simulations_and_proofs_under_the_package_name():
    """From the repository (its root first on sys.path, as the README's test command runs) the folders
    at the root are the same modules as ``dyntools.simulations``/``dyntools.proofs``."""
    import dyntools.proofs.report
    import dyntools.simulations.diag_nets

    import dyntools

    assert Path(dyntools.simulations.diag_nets.__file__).resolve() == ROOT / "simulations" / "diag_nets.py"
    assert Path(dyntools.proofs.report.__file__).resolve() == ROOT / "proofs" / "report.py"
    assert "simulations" not in sys.modules or sys.modules["simulations"] is not dyntools.simulations


def test_the_checkout_uses_the_import_systems_own_package_path():
    """No ``sys.modules``/``sys.path`` splicing: in a checkout the stubs dyntools/simulations/__init__.py and
    dyntools/proofs/__init__.py set their package's ``__path__`` to the root folder, whose own ``__init__.py``
    stays empty (the stub runs instead of it); the stubs are not installed (setup.py excludes them)."""
    import dyntools.proofs
    import dyntools.simulations

    for package, folder in ((dyntools.simulations, "simulations"), (dyntools.proofs, "proofs")):
        assert [Path(p).resolve() for p in package.__path__] == [ROOT / folder]
        assert Path(package.__file__).resolve() == ROOT / "dyntools" / folder / "__init__.py"
        assert (ROOT / folder / "__init__.py").read_text() == ""
    text = (ROOT / "dyntools" / "__init__.py").read_text()
    assert "sys.modules" not in text and "spec_from_file_location" not in text
