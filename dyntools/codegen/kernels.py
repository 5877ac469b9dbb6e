"""Python source of a symbolic model's compiled kernel and of its NumPy twin, from the same expressions.

Input: a :class:`~dyntools.codegen.derive.Derivation` (predictor in internal symbols), its Jacobian
``J[k][m] = ∂h_k/∂θ_m`` and the head. Both sources are printed from the *same* common-subexpression
eliminated expressions (``sympy.cse``):

* :func:`kernel_source` — a numba module with ``loss_grad(θ, X, y, idx, b, noise, grad, ws, iargs,
  fargs)`` of the model protocol (:mod:`dyntools.models.base`); the trainer calls it through a function
  pointer from one loop compiled for every such kernel (:func:`dyntools.dynamics.path_loop.by_pointer`),
  so a new model compiles only its kernel.
  Per example ``i = idx[q]`` of the batch (``r = h(x_i) − y_i − noise_q``, ``s`` the loss scale)::

      regression:     L += s r²,                       grad += 2 s r ∇_θ h
      cross-entropy:  L += log Σ_k e^{h_k} − h_{y_i},   grad += Σ_k (softmax_k − 1[k = y_i]) ∇_θ h_k

  and finally ``L/b``, ``grad/b``. Dense models evaluate the subexpressions that depend on θ only
  once per call, outside the loop over examples; a dense kernel of more than :data:`ROLL_STATEMENTS`
  expressions and input columns is *rolled* (:mod:`dyntools.codegen.rolling`: statements of one shape
  become a loop over an index table, temporaries live in an array ``tmp``), since numba compiles long
  straight-line code superlinearly; its common subexpressions come from ``sympy.cse`` without the ``basic``
  pre-processing, seconds faster at p ≈ 1000, and its sums of more than :data:`SUM_CHUNK` terms are added
  in chunks. Coordinatewise models (``h = Σ_j f(θ_{·j}, x_j)``)
  loop over ``j``; when ``f = P(θ)·G(x)`` the products ``P`` are computed once per call, and when a
  Jacobian entry ``∂f/∂θ_{mj} = P_m(θ_{·j}) G(x_j)`` the kernel sums ``2 s r_q G(x_{qj})`` over the
  batch and multiplies by ``P_m`` at the end (the order of work of the hand-written diagonal-net kernel).
* :func:`numpy_source` — plain NumPy functions evaluated on whole arrays: ``outputs(θ, X)`` (n × K),
  ``jacobian(θ, X)`` (n × K × p), ``hessian_direction(θ, X, v)`` (n × K × p: ``∇²h_k(x_i) v``) and
  ``features(θ, X)``; :mod:`dyntools.models.symbolic` builds the twin ``loss_grad_np`` and the metric
  hooks on them.

Printing: ``math``/``numpy`` functions; ``Heaviside(z)`` as ``1 if z > 0 else 0`` (ReLU's derivative 0
at 0, PyTorch's convention), ``DiracDelta`` as 0 (almost everywhere), ``Max``/``Min`` pairwise.
A construct neither printer knows raises a ``ValueError`` naming it.
"""

from __future__ import annotations

import re

import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from dyntools.codegen import rolling
from dyntools.codegen.derive import Derivation, direction_symbols, split_separable

#: bump when the generated code changes (part of the cache key)
VERSION = 7
#: a dense kernel with more expressions and input columns (outputs, nonzero Jacobian entries, columns of X:
#: each a statement of straight-line code) is rolled into loops (:mod:`dyntools.codegen.rolling`); up to it,
#: it stays straight-line code
ROLL_STATEMENTS = 250
#: in rolled code a sum of more terms is added up in chunks of this many, each chunk a temporary (chunks of
#: one shape then become one loop): one statement of d terms compiles superlinearly in d, like straight-line code
SUM_CHUNK = 16
FASTMATH = '{"reassoc", "contract", "nsz"}'


class _PairwiseMinMax:
    """``Max``/``Min`` of several arguments as nested calls of a binary function (:attr:`MAX`, :attr:`MIN`)."""

    MAX = MIN = ""

    def _pairwise(self, e, fn):
        out = self._print(e.args[0])
        for a in e.args[1:]:
            out = f"{fn}({out}, {self._print(a)})"
        return out

    def _print_Max(self, e):
        return self._pairwise(e, self.MAX)

    def _print_Min(self, e):
        return self._pairwise(e, self.MIN)

    def _print_DiracDelta(self, e):
        return "0.0"


class _ScalarPrinter(_PairwiseMinMax, PythonCodePrinter):
    """Scalar code for numba (``math`` functions)."""

    MAX, MIN = "max", "min"

    def __init__(self):
        settings = {"fully_qualified_modules": True}
        if "strict" in PythonCodePrinter._default_settings:     # sympy ≥ 1.13 (1.12 has no such setting)
            settings["strict"] = False
        super().__init__(settings)

    def _print_Heaviside(self, e):                  # a select, not a branch: straight-line code compiles fast
        return f"(({self._print(e.args[0])}) > 0.0) * 1.0"

    def _print_relu(self, e):                       # exactly max(z, 0) (z + |z| = 2z or 0, both exact)
        z = self._print(e.args[0])
        return f"0.5 * (({z}) + abs({z}))"


class _ArrayPrinter(_PairwiseMinMax, NumPyPrinter):
    """Array code for NumPy."""

    MAX, MIN = "numpy.maximum", "numpy.minimum"

    def _print_Heaviside(self, e):
        return f"numpy.where(({self._print(e.args[0])}) > 0, 1.0, 0.0)"

    def _print_relu(self, e):
        return f"numpy.maximum({self._print(e.args[0])}, 0.0)"


_UNSUPPORTED = re.compile(r"# Not supported in Python:\s*\n\s*# (\w+)")


def _printer(kind: str, name_of):
    printer = _ScalarPrinter() if kind == "scalar" else _ArrayPrinter()

    def show(expr) -> str:
        text = printer.doprint(expr)
        bad = _UNSUPPORTED.search(text)
        if bad:
            raise ValueError(f"Invalid predictor: no {('numba' if kind == 'scalar' else 'NumPy')} code for "
                             f"the construct {bad.group(1)} (in {sp.sstr(expr.subs(_names(name_of, expr)))})")
        return text

    return show


def _names(name_of, expr):
    return {s: sp.Symbol(name_of(s)) for s in expr.free_symbols}


def _temps(prefix: str):
    return sp.numbered_symbols(prefix)


def _split_hoisted(replacements, inputs):
    """Split cse replacements into those free of the inputs (hoisted) and the others, in order."""
    dependent = set(inputs)
    hoisted, inner = [], []
    for sym, expr in replacements:
        if expr.free_symbols & dependent:
            dependent.add(sym)
            inner.append((sym, expr))
        else:
            hoisted.append((sym, expr))
    return hoisted, inner


def _lines(assignments, show, indent: str) -> list[str]:
    return [f"{indent}{s} = {show(e)}" for s, e in assignments]


def _head_lines(head: str, scale: float, K: int, indent: str) -> list[str]:
    """Loss of one example into ``tot`` and the coefficients ``c0 … c{K−1}`` of ``∇_θ h_k``."""
    if head == "regression":
        return [f"{indent}r = h0 - (y[i] + noise[q])", f"{indent}tot += {scale!r} * r * r",
                f"{indent}c0 = {2.0 * scale!r} * r"]
    out = [f"{indent}mx = h0"] + [f"{indent}mx = max(mx, h{k})" for k in range(1, K)]
    out += [f"{indent}e{k} = math.exp(h{k} - mx)" for k in range(K)]
    out += [f"{indent}se = " + " + ".join(f"e{k}" for k in range(K)), f"{indent}lab = y[i]", f"{indent}hl = h0"]
    out += [f"{indent}if lab == {k}:\n{indent}    hl = h{k}" for k in range(1, K)]
    out += [f"{indent}tot += math.log(se) + mx - hl"]
    out += [f"{indent}c{k} = e{k} / se - (1.0 if lab == {k} else 0.0)" for k in range(K)]
    return out


_PREAMBLE = '''"""Generated by dyntools.codegen.kernels (version {version}) for the model {name!r}: do not edit.
Cache key {key}."""
import math

import numpy
from numba import njit

'''

_SIGNATURE = (f"@njit(cache=True, fastmath={FASTMATH}, error_model=\"numpy\")\n"
              "def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):\n")


def kernel_source(der: Derivation, jac, head: str, scale: float, name_of, *, name: str, key: str,
                  roll: bool | None = None) -> str:
    """The numba module of the model (see the module docstring). A dense model's code is rolled into loops
    (:mod:`dyntools.codegen.rolling`) when ``roll`` is True, or when it is None and it has more than
    :data:`ROLL_STATEMENTS` expressions and input columns."""
    show = _printer("scalar", name_of)
    tables = rolling.Tables()
    if der.mode == "dense":
        body = _dense_kernel(der, jac, head, scale, show, roll, tables)
    else:
        body = _coordinatewise_kernel(der, jac, head, scale, show)
    tail = "\n\n" + "\n".join(_predict_jacobian(der, jac, show, roll, tables)) + "\n" if len(der.outputs) == 1 else ""
    return (_PREAMBLE.format(version=VERSION, name=name, key=key) + tables.source() + "\n" + _SIGNATURE
            + "\n".join(body) + "\n" + tail)


def _cse(exprs, rolled: bool):
    """``sympy.cse`` of ``exprs``; without its ``basic`` pre/post-processing for rolled code and for more
    than :data:`ROLL_STATEMENTS` NumPy expressions (it costs seconds at p ≈ 1000 and finds no more common
    subexpressions in a ReLU net's derivatives). Rolled code has its long sums chunked (:func:`_chunk_sums`)."""
    replacements, reduced = sp.cse(list(exprs), symbols=_temps("a"), optimizations=None if rolled else "basic")
    return _chunk_sums(replacements, reduced) if rolled else (replacements, reduced)


def _chunk_sums(replacements, reduced):
    """Every sum of more than :data:`SUM_CHUNK` terms (``Σ_j u_j x_j`` of a model with d inputs) as a sum of
    temporaries ``s_k``, each the sum of :data:`SUM_CHUNK` consecutive terms (recursively, until the top sum
    is short): the same terms, added in chunks. The chunks' temporaries come just before the statement that
    uses them, so the order of the replacements stays a valid order of evaluation."""
    fresh = _temps("s")
    out: list = []

    def chunked(node):
        terms = list(node.args)
        while len(terms) > SUM_CHUNK:
            parts = []
            for k in range(0, len(terms), SUM_CHUNK):
                chunk = terms[k:k + SUM_CHUNK]
                if len(chunk) == 1:
                    parts.append(chunk[0])
                    continue
                sym = next(fresh)
                out.append((sym, sp.Add(*chunk)))
                parts.append(sym)
            terms = parts
        return sp.Add(*terms)

    def long_sum(e):
        return isinstance(e, sp.Add) and len(e.args) > SUM_CHUNK

    for sym, expr in replacements:
        out.append((sym, expr.replace(long_sum, chunked)))
    reduced = [sp.sympify(e).replace(long_sum, chunked) for e in reduced]
    return out, reduced


def _should_roll(roll, n_expressions: int, n_inputs: int) -> bool:
    return bool(roll) if roll is not None else n_expressions + n_inputs > ROLL_STATEMENTS


def _rolled_dense(der, replacements, show, tables, loop_header):
    """Rolled code of a dense function up to its per-example statements: the temporaries free of the
    inputs (once), ``loop_header`` (the loop over examples, defining ``i``), the other temporaries."""
    hoisted, inner = _split_hoisted(replacements, der.inputs)
    leaves = rolling.Leaves({s: n for n, (s, _) in enumerate(replacements)}, der.theta, der.inputs)
    lines = [f"    tmp = numpy.empty({max(len(replacements), 1)})"]
    lines += rolling.roll([(rolling.TEMP, leaves.slot[s], e) for s, e in hoisted], leaves, show, tables, "    ")
    lines += loop_header
    lines += rolling.roll([(rolling.TEMP, leaves.slot[s], e) for s, e in inner], leaves, show, tables, "        ")
    return lines, leaves


def _predict_jacobian(der, jac, show, roll=None, tables=None):
    """``predict_jacobian(θ, X, h_out, J_out)``: ``h_θ(x_i)`` and the rows ``∇_θ h_θ(x_i)`` of φ_θ(X)
    (one output), the form :func:`dyntools.dynamics.sde_models.label_noise_sde` integrates."""
    (h,), (row,) = der.outputs, jac
    lines = [f"@njit(cache=True, fastmath={FASTMATH}, error_model=\"numpy\")",
             "def predict_jacobian(theta, X, h_out, J_out):", "    n = X.shape[0]"]
    rolled = der.mode == "dense" and _should_roll(roll, 1 + sum(e != 0 for e in row), len(der.inputs))
    reps, red = _cse([h, *row], rolled)
    if rolled:
        body, leaves = _rolled_dense(der, reps, show, tables, ["    for i in range(n):"])
        lines += body + [f"        h_out[i] = {rolling.inline(red[0], leaves, show)}"]
        return lines + rolling.roll([("J_out[i, {}] = {}", m, e) for m, e in enumerate(red[1:])], leaves, show,
                                    tables, "        ")
    if der.mode == "dense":
        hoisted, inner = _split_hoisted(reps, der.inputs)
        lines += [f"    {t} = theta[{m}]" for m, t in enumerate(der.theta)] + _lines(hoisted, show, "    ")
        lines += ["    for i in range(n):"] + [f"        {x} = X[i, {c}]" for c, x in enumerate(der.inputs)]
        lines += _lines(inner, show, "        ") + [f"        h_out[i] = {show(red[0])}"]
        lines += [f"        J_out[i, {m}] = {show(e)}" for m, e in enumerate(red[1:])]
        return lines
    lines += ["    d = X.shape[1]", "    for i in range(n):", "        acc = 0.0", "        for j in range(d):",
              f"            {der.inputs[0]} = X[i, j]"]
    lines += [f"            {t} = theta[{m} * d + j]" for m, t in enumerate(der.theta)]
    lines += _lines(reps, show, "            ") + [f"            acc += {show(red[0])}"]
    lines += [f"            J_out[i, {m} * d + j] = {show(e)}" for m, e in enumerate(red[1:])]
    lines.append("        h_out[i] = acc")
    return lines


def _dense_kernel(der, jac, head, scale, show, roll=None, tables=None):
    K, p = len(der.outputs), len(der.theta)
    entries = [(k, m) for k in range(K) for m in range(p) if jac[k][m] != 0]
    exprs = list(der.outputs) + [jac[k][m] for k, m in entries]
    rolled = _should_roll(roll, len(exprs), len(der.inputs))
    replacements, reduced = _cse(exprs, rolled)
    if rolled:
        header = [f"    for m in range({p}):", "        grad[m] = 0.0", "    tot = 0.0", "    for q in range(b):",
                  "        i = idx[q]"]
        lines, leaves = _rolled_dense(der, replacements, show, tables, header)
        lines += [f"        h{k} = {rolling.inline(reduced[k], leaves, show)}" for k in range(K)]
        lines += _head_lines(head, scale, K, "        ")
        lines += rolling.roll([(f"grad[{{}}] += c{k} * ({{}})", m, e) for (k, m), e in zip(entries, reduced[K:])],
                              leaves, show, tables, "        ")
        return lines + ["    inv_b = 1.0 / b", f"    for m in range({p}):", "        grad[m] *= inv_b",
                        "    return tot * inv_b"]
    hoisted, inner = _split_hoisted(replacements, der.inputs)
    lines = [f"    {t} = theta[{m}]" for m, t in enumerate(der.theta)]
    lines += _lines(hoisted, show, "    ")
    lines += [f"    for m in range({p}):", "        grad[m] = 0.0", "    tot = 0.0", "    for q in range(b):",
              "        i = idx[q]"]
    lines += [f"        {x} = X[i, {c}]" for c, x in enumerate(der.inputs)]
    lines += _lines(inner, show, "        ")
    lines += [f"        h{k} = {show(reduced[k])}" for k in range(K)]
    lines += _head_lines(head, scale, K, "        ")
    for (k, m), e in zip(entries, reduced[K:]):
        lines.append(f"        grad[{m}] += c{k} * ({show(e)})")
    lines += ["    inv_b = 1.0 / b", f"    for m in range({p}):", "        grad[m] *= inv_b", "    return tot * inv_b"]
    return lines


def _coordinatewise_kernel(der, jac, head, scale, show):
    (f,), (row,) = der.outputs, jac
    c = len(der.theta)
    load = [f"            {t} = theta[{m} * d + j]" for m, t in enumerate(der.theta)]
    x = der.inputs[0]
    lines = ["    d = iargs[0]"]
    forward = split_separable(f, der.inputs)
    if forward is not None:                         # f = P(θ) G(x): P once per call into ws[0:d]
        lines += ["    for j in range(d):"] + [s[4:] for s in load] + [f"        ws[j] = {show(forward[0])}"]
    parts = [split_separable(e, der.inputs) for e in row]
    separable = all(pp is not None for pp in parts)
    groups: list = []
    if separable:
        for pp in parts:
            if pp[1] not in groups:
                groups.append(pp[1])
        lines += [f"    for j in range({len(groups)} * d):", "        ws[d + j] = 0.0"]
    else:
        lines += [f"    for m in range({c} * d):", "        grad[m] = 0.0"]
    lines += ["    tot = 0.0", "    for q in range(b):", "        i = idx[q]", "        h0 = -(y[i] + noise[q])",
              "        for j in range(d):", f"            {x} = X[i, j]"]
    if forward is not None:
        lines.append(f"            h0 += ({show(forward[1])}) * ws[j]")
    else:
        reps, (red,) = sp.cse([f], symbols=_temps("a"), optimizations="basic")
        lines += load + _lines(reps, show, "            ") + [f"            h0 += {show(red)}"]
    # the head of a coordinatewise model is the square loss: h0 above already holds r = h − y − noise
    lines += [f"        tot += {scale!r} * h0 * h0", f"        c0 = {2.0 * scale!r} * h0", "        for j in range(d):",
              f"            {x} = X[i, j]"]
    if separable:
        reps, red = sp.cse(groups, symbols=_temps("a"), optimizations="basic")
        lines += _lines(reps, show, "            ")
        lines += [f"            ws[{g + 1} * d + j] += c0 * ({show(e)})" for g, e in enumerate(red)]
        lines += ["    inv_b = 1.0 / b", "    for j in range(d):"] + [s[4:] for s in load]
        for m, pp in enumerate(parts):
            lines.append(f"        grad[{m} * d + j] = (ws[{groups.index(pp[1]) + 1} * d + j] * inv_b) * "
                         f"({show(pp[0])})")
    else:
        reps, red = sp.cse(list(row), symbols=_temps("a"), optimizations="basic")
        lines += load + _lines(reps, show, "            ")
        lines += [f"            grad[{m} * d + j] += c0 * ({show(e)})" for m, e in enumerate(red)]
        lines += ["    inv_b = 1.0 / b", f"    for m in range({c} * d):", "        grad[m] *= inv_b"]
    lines.append("    return tot * inv_b")
    return lines


def workspace_size(der: Derivation, jac, d: int) -> int:
    """Scratch entries the kernel of :func:`kernel_source` needs (coordinatewise: ``d`` per group)."""
    if der.mode == "dense":
        return 0
    parts = [split_separable(e, der.inputs) for e in jac[0]]
    groups = {pp[1] for pp in parts} if all(pp is not None for pp in parts) else set()
    return d * (1 + len(groups))


# ------------------------------------------------------------------------------------------ NumPy

_NUMPY_PREAMBLE = '''"""Generated by dyntools.codegen.kernels (version {version}) for the model {name!r}: do not edit.
NumPy functions of the same expressions as the compiled kernel. Cache key {key}."""
import numpy


def _full(value, shape):
    return numpy.broadcast_to(numpy.asarray(value, dtype=numpy.float64), shape)

'''


def _numpy_function(name, args, der, exprs, show, assemble, extra_loads=()):
    """``def name(args)``: load θ (and ``extra_loads``), evaluate ``exprs`` with cse, return ``assemble(texts)``."""
    dense = der.mode == "dense"
    lines = [f"def {name}({args}):", "    n = X.shape[0]", "    d = X.shape[1]"]
    if dense:
        lines += [f"    {t} = theta[{m}]" for m, t in enumerate(der.theta)]
        lines += [f"    {x} = X[:, {c}]" for c, x in enumerate(der.inputs)]
    else:
        lines += [f"    {t} = theta[{m} * d:{m + 1} * d]" for m, t in enumerate(der.theta)]
        lines += [f"    {der.inputs[0]} = X"]
    lines += list(extra_loads)
    reps, red = _cse(exprs, len(exprs) > ROLL_STATEMENTS) if exprs else ([], [])
    lines += _lines(reps, show, "    ")
    lines.append(f"    return {assemble([show(e) for e in red])}")
    return "\n".join(lines) + "\n"


def numpy_source(der: Derivation, jac, hess_dir, name_of, *, name: str, key: str) -> str:
    """The NumPy module of the model (see the module docstring); ``hess_dir=None``: without the Hessian
    direction (its ``hessian_direction`` raises), the twin of the loss and gradient only."""
    show = _printer("array", name_of)
    dense = der.mode == "dense"
    shape = "(n,)" if dense else "(n, d)"
    K, p = len(der.outputs), len(der.theta)

    def stack_outputs(texts):
        if dense:
            return "numpy.stack([" + ", ".join(f"_full({t}, (n,))" for t in texts) + "], axis=1)"
        return f"_full({texts[0]}, (n, d)).sum(axis=1)[:, None]"

    def stack_rows(texts):
        if not texts:
            return "numpy.zeros((n, 0, 0))"
        rows = [texts[k * p:(k + 1) * p] for k in range(K)]
        if dense:
            inner = ["numpy.stack([" + ", ".join(f"_full({t}, (n,))" for t in row) + "], axis=1)" for row in rows]
            return "numpy.stack([" + ", ".join(inner) + "], axis=1)"
        return "numpy.concatenate([" + ", ".join(f"_full({t}, (n, d))" for t in rows[0]) + "], axis=1)[:, None, :]"

    flat_jac = [e for row in jac for e in row]
    flat_hv = [e for row in hess_dir for e in row] if hess_dir is not None else []
    vs = direction_symbols(p)
    vloads = ([f"    {v} = V[{m}]" for m, v in enumerate(vs)] if dense
              else [f"    {v} = V[{m} * d:{m + 1} * d]" for m, v in enumerate(vs)])
    out = _NUMPY_PREAMBLE.format(version=VERSION, name=name, key=key)
    out += "\n" + _numpy_function("outputs", "theta, X", der, der.outputs, show, stack_outputs)
    out += "\n\n" + _numpy_function("jacobian", "theta, X", der, flat_jac, show, stack_rows)
    if hess_dir is None:                # the loss-and-gradient twin: no Hessian–vector expressions derived
        out += ("\n\ndef hessian_direction(theta, X, V):\n    raise NotImplementedError(\"the loss-and-gradient twin "
                "has no Hessian direction (see SymbolicModel.numpy_module)\")\n")
    else:
        out += "\n\n" + _numpy_function("hessian_direction", "theta, X, V", der, flat_hv, show, stack_rows, vloads)
    feats = list(der.features.items())
    sizes = [len(v) for _, v in feats]
    flat_feats = [e for _, v in feats for e in v]

    def assemble_features(texts):
        items, pos = [], 0
        for (fname, _), size in zip(feats, sizes):
            cols = texts[pos:pos + size]
            pos += size
            items.append(f"{fname!r}: numpy.stack([" + ", ".join(f"_full({t}, {shape})" for t in cols)
                         + "], axis=1)" if dense else f"{fname!r}: _full({cols[0]}, (n, d))")
        return "{" + ", ".join(items) + "}"

    out += "\n\n" + _numpy_function("features", "theta, X", der, flat_feats, show, assemble_features)
    return out
