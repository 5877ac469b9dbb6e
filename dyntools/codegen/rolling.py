"""Loop rolling: straight-line generated code of a large dense model written as a few loops over index tables.

numba compiles straight-line code superlinearly in its length (on an AMD EPYC Zen 4: 500 statements
~4 s, 1000 ~30 s, 2000 ~150 s), so the kernel of a dense declaration with p ≈ 1000 parameters cannot
be one statement per Jacobian entry. But its statements repeat a few shapes: a one-hidden-layer ReLU
net's ``∂h/∂W_ij = (A_i H(z_i)) x_j`` are ``m·d`` copies of ``T · X`` (a temporary times an input),
its pre-activations ``z_i = Σ_j W_ij x_j + b_i`` ``m`` copies of one sum.

A statement ``target = e`` gets a **template**: ``e`` with its leaves — temporaries ``T`` (of
``sympy.cse``), parameters ``Q`` (entries of θ) and inputs ``X`` — replaced by placeholders numbered in
a canonical order (the arguments of a sum or product sorted by their own shape, so that
``t0*x0 + t810`` and ``t811 + t9*x0`` have the same template). Statements with the same template and
target kind that do not depend on one another (the same topological *level* of the temporaries'
dependency graph) form a **group**, emitted as one loop over a constant table: row ``g`` holds the target
index and the leaf indices of the group's ``g``-th statement, so the loop body evaluates exactly that
statement's expression — the same arithmetic as the straight-line code, in the same order within a
statement. Temporaries live in a local array ``tmp``; the tables are module globals, which numba
freezes into the compiled code as constants (its ``cache=True`` keeps working). A group of one
statement stays straight-line code.

:func:`roll` returns the lines and the table definitions; :mod:`dyntools.codegen.kernels` decides when
to roll (:data:`dyntools.codegen.kernels.ROLL_STATEMENTS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sympy as sp

#: the target of a statement: ``"tmp"`` (a temporary) or a format with ``{}`` for its index
TEMP = "tmp"
_PLACEHOLDER = re.compile(r"\b([TQX])_(\d+)\b")


@dataclass
class Tables:
    """The index tables of one generated module (``name → rows``), named ``_ROLL<n>``; a table equal to
    one already made (the kernel's and ``predict_jacobian``'s temporaries) is that one."""

    rows: dict = field(default_factory=dict)

    def add(self, rows: list[list[int]]) -> str:
        for name, known in self.rows.items():
            if known == rows:
                return name
        name = f"_ROLL{len(self.rows)}"
        self.rows[name] = rows
        return name

    def source(self) -> str:
        out = []
        for name, rows in self.rows.items():
            flat = ", ".join(str(v) for row in rows for v in row)
            out.append(f"{name} = numpy.array([{flat}], dtype=numpy.int64).reshape({len(rows)}, {len(rows[0])})")
        return "\n".join(out) + ("\n" if out else "")


class Leaves:
    """What a symbol of a statement is: a temporary (its slot in ``tmp``), an entry of θ, an input column."""

    def __init__(self, temps: dict, theta: list, inputs: list):
        self.slot = dict(temps)
        self.theta = {t: m for m, t in enumerate(theta)}
        self.inputs = {x: c for c, x in enumerate(inputs)}

    def kind(self, sym) -> tuple[str, int]:
        if sym in self.slot:
            return "T", self.slot[sym]
        if sym in self.theta:
            return "Q", self.theta[sym]
        if sym in self.inputs:
            return "X", self.inputs[sym]
        raise ValueError(f"rolling: unknown symbol {sym}")


def _shape(expr, leaves: Leaves, memo: dict) -> str:
    """A text that is equal for two expressions iff they are equal up to renaming leaves of the same kind
    (arguments of sums and products in sorted order)."""
    if expr in memo:
        return memo[expr]
    if expr.is_Symbol:
        out = leaves.kind(expr)[0]
    elif not expr.args:
        out = sp.srepr(expr)
    else:
        keys = [_shape(a, leaves, memo) for a in expr.args]
        if isinstance(expr, (sp.Add, sp.Mul)):
            keys.sort()
        out = f"{type(expr).__name__}({','.join(keys)})"
    memo[expr] = out
    return out


def _leaf_order(expr, leaves: Leaves, memo: dict, out: list) -> None:
    """The distinct leaves of ``expr`` in canonical order (first occurrence, sorted arguments)."""
    if expr.is_Symbol:
        if expr not in out:
            out.append(expr)
        return
    args = list(expr.args)
    if isinstance(expr, (sp.Add, sp.Mul)):
        args.sort(key=lambda a: _shape(a, leaves, memo))
    for a in args:
        _leaf_order(a, leaves, memo, out)


def template(expr, leaves: Leaves, show, memo: dict) -> tuple[str, list[tuple[str, int]]]:
    """``(code, [(kind, index)…])``: ``expr`` printed with placeholders ``T_0000``… for its leaves (symbols
    with the leaves' assumptions, so that renaming changes nothing else), and the leaves in placeholder
    order."""
    expr = sp.sympify(expr)
    order: list = []
    _leaf_order(expr, leaves, memo, order)
    kinds = [leaves.kind(s) for s in order]
    names = {s: sp.Symbol(f"{k}_{n:04d}", **s.assumptions0) for n, (s, (k, _)) in enumerate(zip(order, kinds))}
    return show(expr.xreplace(names)), kinds


def _refer(code: str, ref) -> str:
    return _PLACEHOLDER.sub(lambda mt: ref(mt.group(1), int(mt.group(2))), code)


_ACCESS = {"T": "tmp[{}]", "Q": "theta[{}]", "X": "X[i, {}]"}


def inline(expr, leaves: Leaves, show) -> str:
    """``expr`` printed with its leaves read from ``tmp``, ``theta`` and ``X[i]`` (straight-line code)."""
    code, kinds = template(expr, leaves, show, {})
    return _refer(code, lambda k, n: _ACCESS[k].format(kinds[n][1]))


def roll(statements, leaves: Leaves, show, tables: Tables, indent: str, *, min_group: int = 2) -> list[str]:
    """Code for ``statements`` — ``(target, index, expr)`` with ``target`` :data:`TEMP` or a format such as
    ``"grad[{}] += c0 * ({})"`` (index, value) — in an order that respects their dependencies: level by
    level, each group of at least ``min_group`` statements one loop over a table, the rest straight-line."""
    memo: dict = {}
    level_of_slot: dict = {}
    groups: dict = {}
    for target, index, expr in statements:
        code, kinds = template(expr, leaves, show, memo)
        level = 1 + max((level_of_slot.get(i, -1) for k, i in kinds if k == "T"), default=-1)
        if target == TEMP:
            level_of_slot[index] = level
        groups.setdefault((level, target, code), []).append([index] + [i for _, i in kinds])
    lines: list[str] = []
    for (_level, target, code), rows in sorted(groups.items(), key=lambda kv: kv[0][0]):   # stable: first seen
        fmt = "tmp[{}] = {}" if target == TEMP else target
        if len(rows) < min_group:
            for row in rows:
                body = _refer(code, lambda k, n, row=row: _ACCESS[k].format(row[1 + n]))
                lines.append(indent + fmt.format(row[0], body))
            continue
        name = tables.add(rows)
        body = _refer(code, lambda k, n, name=name: _ACCESS[k].format(f"{name}[g, {1 + n}]"))
        lines += [f"{indent}for g in range({len(rows)}):", indent + "    " + fmt.format(f"{name}[g, 0]", body)]
    return lines
