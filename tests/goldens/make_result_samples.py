"""Regenerate ``tests/goldens/result_samples.json``: the ``config`` and ``summary`` of one small real result of
every kind ``dyntools plot`` draws (the kinds of ``dyntools.plugins.figures()``), as the experiments write them.

    python tests/goldens/make_result_samples.py        # from the repository root, ~1–2 min on 2 cores
    python tests/goldens/make_result_samples.py adamw-grid adamw-schedules    # only these kinds, merged in

The runs are the ones the experiments declare (``SAMPLE_RUNS`` in each experiment's module, gathered by
``dyntools.plugins.sample_runs()``): there is no list here. The fuzz suite damages these samples field by field
(``tests/fuzz_cases.py``: :func:`schema_damages`; a declared kind without a committed sample is run there instead),
``tests/test_fuzz_results.py`` checks that each validates against its kind's declared schema and was made by its
kind's declared run. Regenerate after changing what a kind writes or its sample run.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def train_sample(tmp: str) -> dict:
    """The ``"train"`` kind has no command of its own: a small ``dt.train`` run saved with ``store.save``."""
    import numpy as np

    import dyntools as dt
    from dyntools import store
    from dyntools.models.least_squares import LeastSquares

    class Data:
        X = np.random.default_rng(0).normal(size=(12, 3))
        y = X.sum(axis=1)

    res = dt.train(LeastSquares(3, reduction="mean"), Data(), [dt.sgd(lr=0.01), dt.adamw(lr=0.01)], steps=20,
                   batch=4, seeds=2, records=6)
    out = store.save(res, Path(tmp) / "train")
    meta = json.loads((Path(out) / store.META_FILE).read_text())
    return {"argv": ["python: dt.train(LeastSquares(3), ..., [sgd, adamw], steps=20, seeds=2)"],
            "config": meta["config"], "summary": meta.get("summary", {})}


def main(kinds: list[str]) -> int:
    from dyntools import plugins
    from tests.fuzz_cases import SAMPLES, run_sample

    runs = plugins.sample_runs()
    unknown = sorted(set(kinds) - set(runs) - {"train"})
    if unknown:
        print(f"unknown kinds {unknown} (one of {', '.join(sorted(runs))}, train)", file=sys.stderr)
        return 2
    samples = json.loads(SAMPLES.read_text(encoding="utf-8")) if kinds else {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, argv in runs.items():
            if not kinds or kind in kinds:
                samples[kind] = run_sample(kind, argv, Path(tmp))
        if not kinds or "train" in kinds:
            samples["train"] = train_sample(tmp)
    missing = set(plugins.figures()) - set(samples)
    assert not missing, f"no sample run declared for {sorted(missing)}"
    SAMPLES.write_text(json.dumps(samples, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SAMPLES} ({len(samples)} kinds)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
