import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dyntools import store
from dyntools.engine.result import RunResult


def make_result(**arrays):
    arrays = arrays or {"a": np.arange(5.0), "b": np.eye(2, dtype=np.int64)}
    return RunResult("demo", {"eta": 0.1, "tuple": (1, 2)}, arrays, "converged", "all good", seed=3,
                     summary={"x": np.float64(1.5), "inf": float("inf")}, timings={"run": 0.1})


@settings(max_examples=25, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(0, 4), st.integers(1, 5))),
       arrays(np.int64, st.integers(0, 7)))
def test_roundtrip_is_exact(tmp_path_factory, a, b):
    d = tmp_path_factory.mktemp("r") / "res"
    r = make_result(a=a, b=b)
    store.save(r, d)
    back = store.load(d)
    assert back.kind == "demo" and back.status == "converged" and back.seed == 3
    assert back.config == {"eta": 0.1, "tuple": [1, 2]}
    np.testing.assert_array_equal(back["a"], a)
    np.testing.assert_array_equal(back["b"], b)
    assert back["a"].dtype == a.dtype


def test_save_replaces_old_result_and_leaves_no_temp(tmp_path):
    d = tmp_path / "res"
    store.save(make_result(), d)
    store.save(make_result(a=np.ones(3)), d)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    np.testing.assert_array_equal(store.load(d)["a"], np.ones(3))


def test_failed_write_leaves_nothing(tmp_path):
    d = tmp_path / "res"
    with pytest.raises(RuntimeError):
        with store.atomic_directory(d) as tmp:
            (tmp / "partial").write_text("x")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_load_rejects_foreign_and_damaged(tmp_path):
    with pytest.raises(store.StoreError, match="does not exist"):
        store.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(store.StoreError, match="not a dyntools result"):
        store.load(tmp_path / "empty")
    d = tmp_path / "res"
    store.save(make_result(), d)
    (d / "arrays.npz").write_bytes(b"garbage")
    with pytest.raises(store.StoreError, match="cannot be read"):
        store.load(d)
    store.save(make_result(), d)
    (d / "arrays.npz").unlink()
    with pytest.raises(store.StoreError, match="missing"):
        store.load(d)
    store.save(make_result(), d)
    (d / "result.json").write_text("{not json")
    with pytest.raises(store.StoreError, match="not valid JSON"):
        store.load(d)
    (d / "result.json").write_text(json.dumps({"schema": "something/else"}))
    with pytest.raises(store.StoreError, match="not a dyntools.result/1"):
        store.load(d)
    store.save(make_result(), d)
    meta = json.loads((d / "result.json").read_text())
    meta["arrays"]["a"]["shape"] = [99]
    (d / "result.json").write_text(json.dumps(meta))
    with pytest.raises(store.StoreError, match="wrong shape"):
        store.load(d)


def test_check_writable(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(store.StoreError, match="not a directory"):
        store.check_writable(tmp_path / "file")
    with pytest.raises(store.StoreError, match="not a directory"):
        store.check_writable(tmp_path / "file" / "sub")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "mine.txt").write_text("x")
    with pytest.raises(store.StoreError, match="did not write"):
        store.check_writable(tmp_path / "foreign")
    assert store.check_writable(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"


@pytest.mark.parametrize("edit,match", [
    (lambda m: m.update(arrays=[]), "field 'arrays' must be an object"),
    (lambda m: m["arrays"].update(x={}), r"arrays\['x'\] must be"),
    (lambda m: m["arrays"].update(x={"shape": [-1], "dtype": "float64"}), r"arrays\['x'\] must be"),
    (lambda m: m.update(summary="x"), "field 'summary' must be an object"),
    (lambda m: m.update(config=[]), "field 'config' must be an object"),
    (lambda m: m.pop("message"), "field 'message' is missing"),
    (lambda m: m.update(status="splendid"), "Invalid status"),
    (lambda m: m.update(seed="3"), "field 'seed' must be an integer or null"),
    (lambda m: m.update(timings={"simulate": "fast"}), r"timings\['simulate'\] must be a number"),
])
def test_damaged_result_json_is_named_field_by_field(tmp_path, edit, match):
    import json

    from dyntools.engine.result import RunResult
    from dyntools.store import StoreError, load, save

    out = save(RunResult("demo", {"a": 1}, {"x": np.arange(3.0)}, "completed", "fine", seed=1), tmp_path / "r")
    meta = json.loads((out / "result.json").read_text())
    edit(meta)
    (out / "result.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=match):
        load(out)


def test_deeply_nested_json_and_nan_are_handled(tmp_path):
    import json

    from dyntools.engine.result import RunResult
    from dyntools.store import StoreError, load, save, to_json

    assert json.loads(to_json({"a": float("nan"), "b": [float("inf")]})) == {"a": None, "b": [None]}
    out = save(RunResult("demo", {}, {}, "completed", ""), tmp_path / "r")
    (out / "result.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(StoreError, match="nested too deeply|not a dyntools.result"):
        load(out)


def test_plot_never_writes_outside_its_directory(tmp_path):
    """A crafted result whose config names a path must not steer where figures go."""
    import json

    from dyntools.cli import main
    from dyntools.engine.result import RunResult
    from dyntools.store import save

    arrays = {"t": np.linspace(0, 1, 5), "x": np.ones((2, 5, 1))}
    config = {"model": "x/../../../../ESCAPE", "h": 0.1, "scheme": "em", "args": [0.0]}
    out = save(RunResult("sde", config, arrays, "completed", ""), tmp_path / "evil")
    meta = json.loads((out / "result.json").read_text())
    assert meta["config"]["model"].endswith("ESCAPE")
    assert main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 2
    meta["config"] = {"model": "gbm"}                       # a damaged config: one line, exit 2
    (out / "result.json").write_text(json.dumps(meta))
    assert main(["plot", str(out), "--out", str(tmp_path / "figs")]) == 2
    assert not list(tmp_path.rglob("*ESCAPE*")) and not list(tmp_path.parent.glob("*ESCAPE*"))


@pytest.mark.parametrize("make,match", [
    (lambda t: "", "empty path"),
    (lambda t: ".", "current directory"),
    (lambda t: t / ("x" * 300), "longer than 255 bytes"),
    (lambda t: (t / "dangling").symlink_to(t / "nowhere") or t / "dangling", "dangling symbolic link"),
    (lambda t: ((t / "a").symlink_to(t / "b"), (t / "b").symlink_to(t / "a")) and t / "a" / "run", "cannot use"),
    (lambda t: (t / "file").write_text("x") and t / "file", "not a directory"),
])
def test_odd_output_paths_are_refused_before_any_work(tmp_path, monkeypatch, make, match):
    from dyntools.store import StoreError, check_writable

    monkeypatch.chdir(tmp_path)
    target = make(tmp_path)
    with pytest.raises(StoreError, match=match):
        check_writable(target)


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path):
    import subprocess

    from dyntools.engine.result import RunResult
    from dyntools.store import StoreError, atomic_write_text, save

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        big = RunResult("demo", {}, {"x": np.random.default_rng(0).standard_normal(100_000)}, "completed", "")
        with pytest.raises(StoreError, match="Cannot write .*No space left"):
            save(big, mnt / "run")
        with pytest.raises(StoreError, match="Cannot write .*No space left"):
            atomic_write_text(mnt / "report.md", "x" * 200_000)
        assert list(mnt.iterdir()) == []                  # no temporary left behind
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_a_link_loop_is_refused_the_same_way_on_every_python(tmp_path):
    """Python 3.13's ``Path.resolve()`` returns a looping path unchanged (3.11/3.12 raised RuntimeError):
    ``resolve_path`` raises ELOOP on each, and both output checks refuse with their one line."""
    import errno
    import os

    from dyntools.store import StoreError, check_output_file, check_writable, resolve_path

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "dir").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "dir")
    for looping in (tmp_path / "a", tmp_path / "a" / "run", tmp_path / "dir" / ".." / "b" / "x" / "y"):
        with pytest.raises(OSError) as info:
            resolve_path(looping)
        assert info.value.errno == errno.ELOOP
        with pytest.raises(StoreError, match=r"^Invalid --out: cannot use .*\(Too many levels of symbolic links\)$"):
            check_writable(looping)
    with pytest.raises(StoreError, match="^Invalid --table: cannot use .*symbolic links"):
        check_output_file(tmp_path / "a" / "table.md", "--table")
    assert resolve_path(tmp_path / "via" / "new" / "run") == Path(os.path.realpath(tmp_path)) / "dir" / "new" / "run"
    assert resolve_path("relative-name") == Path.cwd().resolve() / "relative-name"


def test_text_outputs_never_replace_a_link_or_a_device(tmp_path):
    from dyntools.store import StoreError, atomic_write_text

    (tmp_path / "real.md").write_text("keep")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    with pytest.raises(StoreError, match="never replaced"):
        atomic_write_text(tmp_path / "link.md", "new")
    with pytest.raises(StoreError, match="never replaced"):
        atomic_write_text("/dev/null", "new")
    assert (tmp_path / "real.md").read_text() == "keep" and (tmp_path / "link.md").is_symlink()


@pytest.mark.parametrize("damage, field", [
    (lambda m: m["config"].update(steps="many"), "config['steps']"),
    (lambda m: m["config"].update(sampler="../x"), "config['sampler']"),
    (lambda m: m["config"].update(bound=-3.0), "config['bound']"),
    (lambda m: m["config"].update(drop_last=1), "config['drop_last']"),
    (lambda m: m["summary"].update(first="x"), "summary['first']"),
])
def test_a_damaged_train_result_is_refused_naming_the_field(tmp_path, damage, field):
    """dt.train's results (kind "train") are checked against the trainer's schema by dt.load."""
    from types import SimpleNamespace

    import dyntools as dt

    d = dt.data.spirals(60, seed=0)
    res = dt.train(dt.MLP((2, 4, 2), head="cross-entropy"), SimpleNamespace(X=d.X, y=d.y), dt.optim.sgd(0.1),
                   steps=5, batch=8, sampler="epoch", seed=0)
    store.save(res, tmp_path / "r")
    assert dt.load(tmp_path / "r").config["steps"] == 5                 # intact: loads
    path = tmp_path / "r" / "result.json"
    meta = json.loads(path.read_text())
    damage(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(store.StoreError, match=rf"result.json: {re.escape(field)}"):
        dt.load(tmp_path / "r")
