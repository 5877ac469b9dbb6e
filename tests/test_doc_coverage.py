"""Doc coverage of the public API, read from the docstrings (no site build): every entry of the API reference
(a public name of ``import dyntools as dt`` or a member of a public module, docs/_ext/public_api.py) that takes
parameters has a numpydoc ``Parameters`` section naming each of them, and every public name sits in a section
of the API index. The site's own checks (pages, links, widths) are in tests/test_docs.py."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]

def _public_api():
    spec = importlib.util.spec_from_file_location("dyntools_docs_public_api", ROOT / "docs" / "_ext" / "public_api.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


API = _public_api()
CALLABLES = [entry for entry in API.entries() if entry.kind in ("function", "class")]
SECTION = re.compile(r"^([A-Z][A-Za-z ]+)\n-{3,}\n", re.M)


def sections(doc: str) -> dict[str, str]:
    """The numpydoc sections of a docstring: title → body."""
    heads = list(SECTION.finditer(doc))
    return {m.group(1): doc[m.end(): heads[i + 1].start() if i + 1 < len(heads) else len(doc)]
            for i, m in enumerate(heads)}


def documented_parameters(body: str) -> set[str]:
    """The names a Parameters section documents (``x, y : float`` names two; ``**kwargs`` names kwargs)."""
    names = set()
    for line in body.splitlines():
        match = re.match(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::|$)", line)
        if match and line[:1] not in (" ", ""):
            names |= {name.strip().lstrip("*") for name in match.group(1).split(",")}
    return names


def docstring(obj) -> str:
    """The text a reader of the entry sees: a class's docstring and its ``__init__``'s."""
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and "__init__" in vars(obj) and vars(obj)["__init__"].__doc__:
        doc += "\n\n" + inspect.getdoc(vars(obj)["__init__"])
    return doc


def parameters(obj) -> list[str]:
    """The parameters a caller passes (not ``self``)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # pragma: no cover - every public callable of dyntools has a signature
        return []
    return [name for name in signature.parameters if name not in ("self", "cls")]


def missing(entry) -> list[str]:
    """The parameters of ``entry`` its Parameters section (or a class's Attributes section) does not name
    (all of them when it has none)."""
    wanted = parameters(entry.obj)
    found = sections(docstring(entry.obj))
    body = found.get("Parameters")
    if inspect.isclass(entry.obj) and "Attributes" in found:   # a dataclass documents its fields as attributes
        body = (body or "") + "\n" + found["Attributes"]
    if body is None:
        return wanted
    return [name for name in wanted if name not in documented_parameters(body)]


def test_the_parser_reads_numpydoc_sections():
    doc = ("Sum.\n\nParameters\n----------\nx, y : float\n    Terms.\n**kwargs\n    Ignored.\n\n"
           "Returns\n-------\nfloat\n")
    parsed = sections(doc)
    assert set(parsed) == {"Parameters", "Returns"}
    assert documented_parameters(parsed["Parameters"]) == {"x", "y", "kwargs"}

    def f(x, y, *, z=1):
        """Sum.

        Parameters
        ----------
        x, y : float
            Terms.
        """

    assert missing(API.Entry("f", f)) == ["z"]


def test_every_entry_of_a_module_member_is_at_its_public_path():
    paths = {entry.path for entry in API.entries()}
    assert {"schedules.CosineAnnealingLR", "data.sparse_regression", "metrics.feature_sparsity", "train",
            "sde_models.gbm", "plots.figure"} <= paths
    import dyntools

    for entry in API.entries():
        obj = dyntools
        for part in entry.path.split("."):
            obj = getattr(obj, part)
        assert obj is entry.obj, f"dt.{entry.path} is not the documented object"


@pytest.mark.parametrize("entry", CALLABLES, ids=[entry.path for entry in CALLABLES])
def test_every_public_callable_documents_its_parameters(entry):
    assert not missing(entry), f"dt.{entry.path}'s docstring has no Parameters entry for {missing(entry)}"


def test_every_callable_has_a_summary_line():
    assert not [entry.path for entry in CALLABLES if not API.summary(entry.obj)]


def test_every_public_name_is_in_one_section_of_the_index():
    listed = [name for _, names in API.GROUPS.values() for name in names]
    assert len(listed) == len(set(listed)), "a name is in two sections of the API index"
    assert sorted(listed) == sorted(API.public_names()), \
        f"not in a section of the API index: {sorted(set(API.public_names()) - set(listed))}"


def test_every_entry_is_what_its_public_path_resolves_to():
    for entry in API.entries():
        if entry.kind in ("function", "class", "module"):
            assert API.resolve(entry.path).obj is entry.obj, f"dt.{entry.path} links elsewhere"
    assert API.resolve("RunResult.status").path == "RunResult"          # an attribute links to its class
    assert API.resolve("optim.adamw").path == "adamw"                   # an alias links to its first entry


@given(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True))
@settings(max_examples=200, deadline=None)
def test_a_name_that_is_not_public_resolves_to_nothing(name):
    assume(name not in API.public_names())
    assert API.resolve(name) is None
    assert API.resolve(f"{name}.train") is None


def test_highlighted_code_is_linked_to_the_entry():
    pytest.importorskip("sphinx")
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import api_links
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    span = '<span class="n">dt</span><span class="o">.</span><span class="n">schedules</span>' \
           '<span class="o">.</span><span class="n">CosineAnnealingLR</span><span class="p">(</span>'
    linked = api_links.link_code(span, "../")
    assert linked.startswith('<a class="dyntools-api-link" href="../api/schedules.CosineAnnealingLR.html#'
                             'dyntools.schedules.CosineAnnealingLR">')
    unknown = span.replace("schedules", "nothing_here")
    assert api_links.link_code(unknown, "../") == unknown


EXAMPLES = [entry for entry in CALLABLES if ">>>" in docstring(entry.obj)]


@pytest.mark.parametrize("entry", EXAMPLES, ids=[entry.path for entry in EXAMPLES])
def test_the_examples_of_the_docstrings_run(entry):
    import doctest

    test = doctest.DocTestParser().get_doctest(docstring(entry.obj), {}, f"dt.{entry.path}", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert test.examples and runner.failures == 0, f"dt.{entry.path}'s Examples do not print what they say"
