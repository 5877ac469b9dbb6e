"""Reading results back: only today's status words, and the trainer's kind known without the trainer.

* A ``result.json`` whose status is a word of the vocabulary before it was fixed (``"ok"``, ``"verified"`` …)
  is refused with one line naming the file (no translation table is kept: dyntools 0.1 has no legacy).
* The kind ``"train"`` of :func:`dyntools.train` is declared by :mod:`dyntools.result_schema` itself, so a
  damaged train result is caught by a process that never imported the trainer, and nothing below the trainer
  names it in a string.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dyntools import result_schema, store
from dyntools.engine.result import STATUSES, RunResult
from tests.conftest import HANG_GUARD, assert_usage_error, run_cli


def _saved(directory, status="completed", kind="train", config=None):
    config = config or {"steps": 3, "batch": 1, "sampler": "with-replacement", "drop_last": False,
                        "label_noise": 0.0, "seeds": 1, "bound": None, "records": 2, "common_stream": False,
                        "replayed": False}
    store.save(RunResult(kind, config, {}, status, "a message", seed=0), directory)
    return directory / "result.json"


@pytest.mark.parametrize("old", ["ok", "verified", "order-mismatch", "shrinking", "no-recovery"])
def test_an_old_status_word_is_refused_naming_the_file(tmp_path, old):
    path = _saved(tmp_path / "run")
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["status"] = old
    path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(store.StoreError) as caught:
        store.load(tmp_path / "run")
    text = str(caught.value)
    assert len(text.splitlines()) == 1 and str(path) in text and repr(old) in text
    assert "older dyntools" in text and all(s in text for s in STATUSES)


def test_the_command_line_says_it_in_one_line(tmp_path):
    path = _saved(tmp_path / "run")
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["status"] = "ok"
    path.write_text(json.dumps(meta), encoding="utf-8")
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert_usage_error(run_cli("plot", tmp_path / "run"), "result.json", "'ok'", "older dyntools")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before


def test_every_status_of_the_vocabulary_reads_back(tmp_path):
    for status in STATUSES:
        _saved(tmp_path / status, status=status)
        assert store.load(tmp_path / status).status == status


def test_the_train_schema_names_the_samplers_the_trainer_knows():
    from dyntools.engine import samplers

    assert result_schema.TRAIN_SAMPLERS == samplers.NAMES
    assert result_schema.schema_of("train") is result_schema.TRAIN
    assert not hasattr(result_schema, "DECLARED_IN")


def test_a_damaged_train_result_is_caught_without_importing_the_trainer(tmp_path):
    _saved(tmp_path / "run", config=None)
    path = tmp_path / "run" / "result.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["config"]["sampler"] = "shuffled"
    path.write_text(json.dumps(meta), encoding="utf-8")
    code = ("import sys\nfrom dyntools import store\ntry:\n    store.load(sys.argv[1])\nexcept store.StoreError as e:"
            "\n    print(e)\nprint('dyntools.dynamics.train' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], capture_output=True, text=True,
                         timeout=HANG_GUARD)
    message, imported = out.stdout.strip().splitlines()
    assert "config['sampler']" in message and "'shuffled'" in message and str(path) in message, out.stderr
    assert imported == "False"
