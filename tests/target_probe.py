"""Run engine golden cases in this process and save their arrays, for ``tests/test_reproducibility.py``.

Usage: ``python tests/target_probe.py OUT CASE [CASE ...]`` with the repository on ``PYTHONPATH`` and the
compile target chosen by the environment (``NUMBA_CPU_NAME``, ``DYNTOOLS_VECTOR_BITS``, an empty
``NUMBA_CACHE_DIR``). Writes ``OUT/<case>.npz`` (the arrays, keyed as in the goldens), ``OUT/<case>.json``
(the statuses), ``OUT/voronoi.npy`` (:func:`voronoi_steps`) and ``OUT/target.json``: numba's compile
target and, from the machine code of two kernels this process compiled (the fused diagonal-network loop
and the diagonal-network SDE kernel), how many instructions use 512-bit registers (``zmm``), 256-bit
ones (``ymm``) and fused multiply-adds (``vfmadd``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

GOLDEN_DIR = Path(__file__).parent / "goldens" / "engine"


def golden_maker():
    """The golden generator ``tests/goldens/engine/make_engine_goldens.py``, loaded as a module."""
    spec = importlib.util.spec_from_file_location("make_engine_goldens", GOLDEN_DIR / "make_engine_goldens.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def asm_counts() -> dict:
    """Instruction counts in the machine code of compiled kernels (after the cases ran)."""
    from dyntools.dynamics import sde_models
    from dyntools.dynamics.fast import diag_net as fused
    from dyntools.models import mlp_gemm

    kernels = (fused._paths, sde_models._diag_net_blocks, mlp_gemm.gemm)     # gemm: the SDE kernel's products
    text = "".join(asm for k in kernels for asm in k.inspect_asm().values())
    return {"zmm": len(re.findall(r"%zmm\d+", text)), "vfmadd": len(re.findall(r"\bvfn?m(?:add|sub)\w*", text)),
            "ymm": len(re.findall(r"%ymm\d+", text))}


def voronoi_steps() -> np.ndarray:
    """θ after 20 AdamW steps (L1/L2 decay groups, mini-batches of 8) of a tiny Voronoi ladder (16 centers
    in 2-d, two seeds): the ladder's compiled kernel has no golden case of its own; the test compares this
    with the same run compiled for the machine in its own process."""
    from dyntools.data import voronoi as DV
    from dyntools.dynamics.train import train
    from dyntools.models import voronoi as MV
    from dyntools.optim.decay_groups import adamw_decay

    model = MV.VoronoiLadder("centers", dim=2, n_centers=16, box=100.0)
    opt = adamw_decay("l1l2", lr=1e-2, weights=model.decay_mask(("scale",)), groups=model.group_of())
    res = train(model, DV.voronoi(200, n_test=50, seed=1), opt, steps=20, batch=8, sampler="epoch", records=3,
                grid="linear", seeds=2)
    return res.arrays["theta"]


def main(out: Path, cases: list[str]) -> None:
    import numba

    maker = golden_maker()
    out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            arrays, statuses = maker.run_case(case, Path(tmp))
        np.savez(out / f"{case}.npz", **arrays)
        (out / f"{case}.json").write_text(json.dumps(statuses), encoding="utf-8")
    np.save(out / "voronoi.npy", voronoi_steps())
    from dyntools.lowlevel import fma_block

    info = {"cpu_name": numba.config.CPU_NAME, "cpu_features": numba.config.CPU_FEATURES,
            "vector_bits": fma_block.VECTOR_BITS,
            **asm_counts()}
    (out / "target.json").write_text(json.dumps(info), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
