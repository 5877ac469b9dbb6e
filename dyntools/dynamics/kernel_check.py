"""The pre-run of a user's model kernel: its workspace and its gradient, checked before the loop.

A model kernel ``loss_grad(θ, X, y, idx, b, noise, grad, ws, iargs, fargs) -> loss`` is compiled
without bounds checks, so a workspace one entry short (``workspace_size`` too small) or a gradient
written past its end corrupts memory silently — at best the process aborts. Before the training loop
:func:`dyntools.train` runs such a kernel once (:func:`check_kernel`):

1. **guarded buffers** — ``ws`` and ``grad`` are views of the first entries of longer buffers whose
   tail (``GUARD`` entries, at least as many as the buffer) holds a canary value; a kernel that writes
   past its workspace or gradient changes a canary and is reported with the first entry it wrote;
2. **central finite differences** — at the initial θ, on the first batch (examples ``0 … b−1``, no
   label noise), every coordinate ``j`` (at most :data:`MAX_COORDS` of them, evenly spaced) compares
   the kernel's ``g_j`` with ``(L(θ + h e_j) − L(θ − h e_j)) / 2h``, ``h = 1e-6 (1 + |θ_j|)``; the
   gradient is wrong at ``j`` when ``|g_j − fd_j| > RTOL · max(|g_j|, |fd_j|, 1e-3 ‖fd‖_∞, 1e-8)``
   (``RTOL = 1e-4``: finite differences in float64 are good to ~1e-8 relative on smooth losses; a
   kink within ``h`` of θ, such as a ReLU switching, can exceed it — ``check_gradient=False`` skips);
3. **the readable twin** — when the model also has ``loss_grad_np`` (its NumPy twin) and the loop runs the
   compiled kernel, both run on the first batch *with* label noise (``noise_q ~ 0.1·N(0, 1)``, a fixed
   stream): loss and gradient must agree to ``1e-9`` relative (``1e-12`` of the largest entry absolute), else
   :class:`~dyntools.validation.KernelMismatch` names the first differing entry with both values. Finite
   differences check the kernel's gradient against its own loss; the twin checks the loss itself (a kernel
   that doubles loss and gradient, or mishandles the noise, passes 2 and fails 3).

The built-in models skip the pre-run: their kernels are held to NumPy twins and independent
references by the test suite, and the check would cost every run a few hundred kernel calls.

A :class:`~dyntools.models.symbolic.SymbolicModel` is the library's code, but its kernel is generated from the
user's expression (and loaded from an on-disk cache anyone can edit): :func:`check_generated` holds it to the
generated NumPy twin (step 3, at ``GENERATED_RTOL``: the kernel is compiled with ``fastmath`` reassociation, the
twin is not) on the first batch at first use. Two choices keep the cost small (for a dense model of p ≈ 1000
parameters the full NumPy module takes seconds to derive): the twin is the loss-and-gradient one
(:attr:`~dyntools.models.symbolic.SymbolicModel.twin_module`: outputs and Jacobian, no Hessian–vector
expressions), and the check runs *once per model per installation*: a stamp in the code cache, named by the
SHA-256 of both generated files and numba's version, records that it passed. A file changed since (or another
numba) has another stamp: checked again.
"""

from __future__ import annotations

import numpy as np

from dyntools.validation import KernelMismatch, first_difference

#: Relative tolerance of the gradient check (see the module docstring).
RTOL = 1e-4
#: At most this many coordinates are finite-differenced (evenly spaced, always including the first and last).
MAX_COORDS = 200
#: The canary written past the end of the guarded buffers.
CANARY = -7.0e300


def is_builtin(model) -> bool:
    """Whether ``model`` is one of the library's models (their kernels are tested; no pre-run)."""
    return type(model).__module__.startswith("dyntools.models.")


def _guarded(size: int):
    tail = max(64, size)
    buf = np.full(size + tail, CANARY)
    return buf, buf[:size]


def _first_overrun(buf: np.ndarray, size: int) -> int | None:
    changed = np.flatnonzero(buf[size:] != CANARY)
    return int(changed[0]) + size if changed.size else None


def check_kernel(model, kernel, theta, X, y, b: int, iargs, fargs, ws_size: int, *, gradient: bool = True) -> None:
    """Run ``kernel`` once on guarded buffers and (with ``gradient``) finite-difference its gradient at
    ``theta`` (see the module docstring); raise ValueError naming the model and the first bad entry."""
    name = model.name
    theta = np.array(theta, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y)
    if y.dtype != np.int64:
        y = y.astype(np.float64)
    p = theta.shape[0]
    idx = np.arange(b, dtype=np.int64) % X.shape[0]
    noise = np.zeros(b)
    ws_buf, ws = _guarded(ws_size)
    grad_buf, grad = _guarded(p)

    def loss_at(th):
        ws_buf[:ws_size] = 0.0
        return float(kernel(th, X, y, idx, b, noise, grad, ws, iargs, fargs))

    try:
        loss = loss_at(theta)
    except Exception as exc:  # a bounds-checked (NumPy) kernel on a short buffer, a typing error, ...
        raise ValueError(f"Invalid model {name!r}: its kernel raised {type(exc).__name__}: {exc} (at the initial "
                         f"parameters, on a batch of {b} with a workspace of workspace_size({b}) = {ws_size} "
                         f"entries and a gradient of n_params = {p})") from None
    where = _first_overrun(ws_buf, ws_size)
    if where is not None:
        raise ValueError(f"Invalid model {name!r}: its kernel wrote past its workspace (entry ws[{where}], but "
                         f"workspace_size({b}) = {ws_size}); make workspace_size return at least {where + 1}")
    where = _first_overrun(grad_buf, p)
    if where is not None:
        raise ValueError(f"Invalid model {name!r}: its kernel wrote past the gradient (entry grad[{where}] of "
                         f"n_params = {p})")
    if not np.isfinite(loss) or not np.all(np.isfinite(grad)):
        bad = "the loss" if not np.isfinite(loss) else f"grad[{int(np.flatnonzero(~np.isfinite(grad))[0])}]"
        raise ValueError(f"Invalid model {name!r}: its kernel returned a non-finite {bad} at the initial parameters")
    twin = model.loss_grad_np
    if twin is not None and twin is not kernel and hasattr(kernel, "py_func"):
        check_twin(name, kernel, twin, theta, X, y, b, iargs, fargs, ws_size)
    if not gradient:
        return
    g = grad.copy()
    coords = np.unique(np.linspace(0, p - 1, min(p, MAX_COORDS)).round().astype(np.int64))
    fd = np.empty(coords.size)
    for k, j in enumerate(coords):
        h = 1e-6 * (1.0 + abs(theta[j]))
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        fd[k] = (loss_at(up) - loss_at(down)) / (2.0 * h)
    scale = np.maximum(np.maximum(np.abs(g[coords]), np.abs(fd)), max(1e-3 * np.max(np.abs(fd)), 1e-8))
    bad = np.flatnonzero(np.abs(g[coords] - fd) > RTOL * scale)
    if bad.size:
        j, k = int(coords[bad[0]]), int(bad[0])
        raise ValueError(
            f"Invalid model {name!r}: its kernel's gradient is wrong at coordinate {j}: the kernel gives "
            f"{g[j]:.6g}, central finite differences {fd[k]:.6g} (relative error "
            f"{abs(g[j] - fd[k]) / scale[k]:.2g} > {RTOL:g}; {bad.size} of {coords.size} coordinates checked "
            "disagree); check_gradient=False skips this check")


#: Relative tolerance of a generated kernel against its generated twin (module docstring).
GENERATED_RTOL = 1e-7


def check_generated(model, theta, X, y, b: int, iargs, fargs, ws_size: int) -> None:
    """A generated kernel against its generated twin, once per model per installation (module docstring)."""
    if model.twin_checked():
        return
    check_twin(model.name, model.loss_grad, model.loss_grad_np, np.asarray(theta, dtype=np.float64), X, y, b,
               iargs, fargs, ws_size, rtol=GENERATED_RTOL, generated=model.code_paths["kernel"])
    model.mark_twin_checked()


def check_twin(name: str, kernel, twin, theta, X, y, b: int, iargs, fargs, ws_size: int, *, rtol: float = 1e-9,
               generated: str | None = None) -> None:
    """Step 3 of the module docstring: ``kernel`` against ``twin`` on the first batch with label noise (entries
    agree within ``rtol`` relative, ``rtol``/1000 of the largest entry absolute); ``generated``: the path of the
    kernel's generated source, named in the error."""
    p = theta.shape[0]
    idx = np.arange(b, dtype=np.int64) % X.shape[0]
    noise = 0.1 * np.random.default_rng(36).standard_normal(b)
    values = []
    for fn in (twin, kernel):
        grad, ws = np.zeros(p), np.zeros(max(ws_size, 1))
        try:
            loss = float(fn(theta.copy(), X, y, idx, b, noise.copy(), grad, ws[:ws_size], iargs, fargs))
        except Exception as exc:  # the twin (the kernel already ran once): a bug of the readable version
            raise ValueError(f"Invalid model {name!r}: its loss_grad_np raised {type(exc).__name__}: {exc} (on the "
                             f"first batch of {b}, with the kernel's arguments)") from None
        values.append(np.concatenate([[loss], grad]))
    readable, compiled = values
    diff = first_difference(readable, compiled, rtol=rtol, atol=1e-3 * rtol * max(1.0, float(np.max(np.abs(readable)))))
    if diff is not None:
        k, r_val, c_val = diff
        what = "the loss" if k == 0 else f"grad[{k - 1}]"
        if generated:
            raise KernelMismatch(
                f"Invalid model {name!r}: its generated loss_grad does not compute what its generated NumPy twin "
                f"computes — on the first batch of {b} with label noise, {what} is {c_val!r} by the kernel but "
                f"{r_val!r} by the twin; the generated file {generated} is stale or was edited: delete it (it is "
                "regenerated)")
        raise KernelMismatch(
            f"Invalid model {name!r}: its compiled loss_grad does not compute what its loss_grad_np computes — on the "
            f"first batch of {b} with label noise, {what} is {c_val!r} by the kernel but {r_val!r} by loss_grad_np; "
            "fix the one that is wrong (the kernel runs the training)")
