"""The matrix products of the cross-entropy MLP (dyntools.models.mlp_gemm.gemm) and the compiled pieces
under them: register-blocked fma panels (dyntools.lowlevel.fma_block), matrix views of flat arrays and
borrowed arrays (dyntools.lowlevel.flat_views), transposes in vector registers
(dyntools.lowlevel.vector_transpose).

Every entry of a product is defined as one chain of fused multiply-adds in the order of the
contraction index; the reference below is written from that definition with exact rationals, each fma
rounded once to the product's precision, so the kernel must agree with it bit for bit whichever path
(panels of 8 or 1 rows, 2 or 1 vectors, the leftover columns, non-contiguous operands) computed it.
"""

import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dyntools.lowlevel import fma_block, vector_transpose
from dyntools.lowlevel.flat_views import borrowed, matrix
from dyntools.models import mlp_gemm
from tests.conftest import HANG_GUARD


def round_to(dtype, exact: Fraction):
    """``exact`` rounded once to the nearest ``dtype`` number (ties to even)."""
    if dtype == np.float64:
        return np.float64(float(exact))                     # Python rounds a Fraction correctly
    near = np.float32(float(exact))                         # may be one ulp off (double rounding)
    candidates = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
    dist = [abs(Fraction(float(c)) - exact) for c in candidates]
    best = min(dist)
    ties = [c for c, d in zip(candidates, dist) if d == best]
    return min(ties, key=lambda c: int(np.array(c).view(np.uint32)) & 1)


def fma_chain(init, C, In, dtype, by_row=False):
    """``init[j] + Σ_g C[i, g] In[g, j]`` as fma(C[i, g], In[g, j], acc) for g = 0, 1, …, each rounded once
    (``by_row``: each chain of row ``i`` starts at ``init[i]``)."""
    m, kdim = C.shape
    n = In.shape[1]
    out = np.empty((m, n), dtype=dtype)
    for i in range(m):
        for j in range(n):
            acc = init[i] if by_row else init[j]
            for g in range(kdim):
                acc = round_to(dtype, Fraction(float(C[i, g])) * Fraction(float(In[g, j])) + Fraction(float(acc)))
            out[i, j] = acc
    return out


def test_round_to_float32_avoids_double_rounding():
    # 1 + 2^-24 + 2^-60: nearest float64 is 1 + 2^-24 (a float32 tie, which rounds to even: 1.0);
    # the exact value is above the tie, so the correct float32 is 1 + 2^-23
    exact = 1 + Fraction(1, 2 ** 24) + Fraction(1, 2 ** 60)
    assert np.float32(float(exact)) == np.float32(1.0)
    assert round_to(np.float32, exact) == np.float32(1 + 2.0 ** -23)
    assert round_to(np.float32, 1 + Fraction(1, 2 ** 24)) == np.float32(1.0)           # a true tie: even


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 18), kdim=st.integers(0, 9), n=st.integers(1, 40), layout=st.sampled_from(["C", "C.T", "In.T"]),
       dtype=st.sampled_from([np.float64, np.float32]), by_row=st.booleans(), seed=st.integers(0, 1000))
def test_product_is_the_fma_chain_bitwise(m, kdim, n, layout, dtype, by_row, seed):
    """``gemm`` equals the fma-chain reference bitwise; on small integers it is ``init + C @ In`` exactly
    (every partial sum is representable). Shapes cross the panels' edges: 8-row blocks and single rows,
    two vectors (16 / 32 columns), one, and leftover columns; ``C`` transposed (strided rows) and ``In``
    transposed (not contiguous: the leftover-column path for every column); chains started per column
    (``gemm``) or per row (``gemm_row_starts``)."""
    rng = np.random.default_rng(seed)
    for ints in (True, False):
        def draw(*shape, ints=ints):
            x = rng.integers(-9, 10, shape) if ints else rng.standard_normal(shape)
            return x.astype(dtype)
        C = draw(kdim, m).T if layout == "C.T" else draw(m, kdim)
        In = draw(n, kdim).T if layout == "In.T" else draw(kdim, n)
        init = draw(m if by_row else n)
        out = np.full((m, n), np.nan, dtype=dtype)
        (mlp_gemm.gemm_row_starts if by_row else mlp_gemm.gemm)(out, init, C, In, m, kdim, n)
        if ints:
            start = init.astype(float)[:, None] if by_row else init.astype(float)
            np.testing.assert_array_equal(out, start + C.astype(float) @ In.astype(float))
        else:
            np.testing.assert_array_equal(out, fma_chain(init, C, In, dtype, by_row))


def test_product_leaves_everything_outside_the_block_alone():
    """A product into the top-left m × n of a larger array writes exactly that block."""
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        big = np.full((20, 50), 7.0, dtype=dtype)
        C, In, init = (rng.standard_normal(s).astype(dtype) for s in ((20, 5), (5, 50), (50,)))
        mlp_gemm.gemm(big, init, C, In, 17, 5, 33)
        assert np.all(big[17:] == 7.0) and np.all(big[:, 33:] == 7.0)
        np.testing.assert_array_equal(big[:17, :33], fma_chain(init[:33], C[:17], In[:, :33], dtype))


def test_panel_refuses_mixed_precisions_and_bad_shapes():
    with pytest.raises(ValueError, match="Invalid panel"):
        fma_block.panel(0, 2)
    block = fma_block.panel(1, 1)

    @njit
    def call(out, init, C, In):
        block(out, init, C, In, 0, 0, 1, False, 0, out)

    with pytest.raises(Exception, match="(?i)typing|resolve|no implementation"):
        call(np.zeros((1, 8)), np.zeros(8, dtype=np.float32), np.zeros((1, 1)), np.zeros((1, 8)))
    assert fma_block.lanes(8) == fma_block.VECTOR_BITS // 64 and fma_block.lanes(4) == fma_block.VECTOR_BITS // 32


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 18), kdim=st.integers(0, 6), n=st.integers(1, 40),
       dtype=st.sampled_from([np.float64, np.float32]), transposed_in=st.booleans(), seed=st.integers(0, 1000))
def test_epilogues_are_relu_and_mask_of_the_product(m, kdim, n, dtype, transposed_in, seed):
    """``gemm_relu`` stores ``z if z > 0 else +0`` and ``gemm_masked`` ``z if mask > 0 else +0`` of the
    product ``z`` that ``gemm`` computes — bytes compared, so a NaN (injected through ``In`` and the
    mask) or a −0 (zero rows, −0 starts) must come out as +0 exactly as the scalar ``if`` makes it."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((m, kdim)).astype(dtype)
    In = (rng.standard_normal((n, kdim)).T if transposed_in else rng.standard_normal((kdim, n))).astype(dtype)
    init = rng.standard_normal(n).astype(dtype)
    init[::3] = -0.0
    C[::4] = 0.0                                                  # rows whose entries are their starts
    if kdim and n > 2:
        In[0, 1] = np.nan                                         # a NaN column
    mask = rng.standard_normal((m, n)).astype(dtype)
    mask.flat[::5] = np.nan
    mask.flat[1::5] = -0.0
    plain = np.empty((m, n), dtype=dtype)
    mlp_gemm.gemm(plain, init, C, In, m, kdim, n)
    zero = dtype(0.0)
    relu = np.full((m, n), np.nan, dtype=dtype)
    mlp_gemm.gemm_relu(relu, init, C, In, m, kdim, n)
    with np.errstate(invalid="ignore"):
        assert relu.tobytes() == np.where(plain > 0, plain, zero).tobytes()
        masked = np.full((m, n), np.nan, dtype=dtype)
        mlp_gemm.gemm_masked(masked, init, C, In, m, kdim, n, mask)
        assert masked.tobytes() == np.where(mask > 0, plain, zero).tobytes()


@njit
def _views(flat, start, rows, cols):
    a = matrix(flat, start, rows, cols)
    a[rows - 1, cols - 1] = -1.0                   # written through to flat
    return a


@settings(deadline=None)                         # the first examples compile two layouts
@given(start=st.integers(0, 10), rows=st.integers(1, 5), cols=st.integers(1, 5), step=st.sampled_from([1, 2]))
def test_matrix_view_is_the_reshaped_slice(start, rows, cols, step):
    base = np.arange(200.0)
    flat = base[::step]
    want = flat[start:start + rows * cols].reshape(rows, cols).copy()
    want[-1, -1] = -1.0
    got = _views(flat, start, rows, cols)
    np.testing.assert_array_equal(got, want)
    assert flat[start + rows * cols - 1] == -1.0
    assert got.strides == (cols * flat.strides[0], flat.strides[0])


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), dtype=st.sampled_from([np.float64, np.float32]),
       src_view=st.booleans(), seed=st.integers(0, 1000))
def test_vector_transpose_is_the_transpose(rows, cols, dtype, src_view, seed):
    """``transpose`` writes exactly ``srcᵀ`` into the top-left of ``dst`` (whole 8×8 / 16×16 blocks in
    registers, the rest one entry at a time), including NaN payloads and -0.0, and nothing else; a
    source that is a transposed view (not contiguous along rows) takes the entry-wise path."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((cols, rows) if src_view else (rows, cols)).astype(dtype)
    base.flat[::7] = -0.0
    base.flat[::11] = np.nan
    src = base.T if src_view else base
    dst = np.full((cols + 3, rows + 2), 5.0, dtype=dtype)
    vector_transpose.transpose(dst, src, rows, cols)
    assert dst[:cols, :rows].tobytes() == np.ascontiguousarray(src.T).tobytes()
    assert np.all(dst[cols:] == 5.0) and np.all(dst[:, rows:] == 5.0)


def test_transpose_round_masks_are_the_block_transpose():
    """Each round's two shuffles exchange the halves of every group of 2h lanes (a 4 × 4 worked by hand)."""
    low, high = vector_transpose._round_masks(4, 2)
    assert (low, high) == ([0, 1, 4, 5], [2, 3, 6, 7])
    low, high = vector_transpose._round_masks(4, 1)
    assert (low, high) == ([0, 4, 2, 6], [1, 5, 3, 7])


@njit
def _through_borrowed(a):
    b = borrowed(a)
    m = matrix(b, 1, 2, 3)
    m[1, 2] = -1.0                                 # writes reach the caller's array
    return b[:7].sum() + m.T[2, 1]


def test_borrowed_array_is_the_same_memory():
    a = np.arange(10.0)
    total = _through_borrowed(a)
    assert a[6] == -1.0 and total == (0 + 1 + 2 + 3 + 4 + 5 - 1) + -1.0


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("DYNTOOLS_VECTOR_BITS") == "256", reason="already running with 256-bit panels")
def test_256_bit_panels_give_the_same_bits(tmp_path):
    """The panels and transposes written with 256-bit vectors (a processor without AVX-512) pass this
    file's bitwise tests too: run in a fresh process with ``DYNTOOLS_VECTOR_BITS=256`` and an empty numba
    cache; an invalid value is refused when the module is imported."""
    env = {**os.environ, "DYNTOOLS_VECTOR_BITS": "256", "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                          "fma_chain_bitwise or epilogues or vector_transpose or leaves_everything"],
                         env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
    bad = subprocess.run([sys.executable, "-c", "import dyntools.lowlevel.fma_block"], capture_output=True,
                         text=True, env={**env, "DYNTOOLS_VECTOR_BITS": "300"})
    assert bad.returncode != 0 and "Invalid DYNTOOLS_VECTOR_BITS: '300'" in bad.stderr
