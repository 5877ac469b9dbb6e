"""Your own model as a sympy expression: exact derivatives, a generated numba kernel and its NumPy twin.

A :class:`SymbolicModel` is a predictor ``h_θ(x)`` written in sympy, its parameter symbols, its input
symbols, a head and an initialization. Everything else is derived from that one expression:

* the loss of the head (``"regression"``: ``s·(h − y)²`` with scale ``s = loss_scale``, ½ by default;
  ``"cross-entropy"``: ``log Σ_k e^{h_k} − h_y`` over ``K ≥ 2`` outputs), averaged over the batch;
* the exact Jacobian ``φ_θ(x) = ∇_θ h_θ(x)`` and Hessian–vector products (:mod:`dyntools.codegen.derive`);
* the compiled ``loss_grad`` of the model protocol (:mod:`dyntools.models.base`) and its NumPy twin,
  printed from the same common-subexpression-eliminated expressions (:mod:`dyntools.codegen.kernels`)
  and cached on disk keyed by the expression (:mod:`dyntools.codegen.cache`; the directory is
  ``$DYNTOOLS_SYMBOLIC_CACHE`` or ``~/.cache/dyntools/symbolic``);
* the metric hooks ``predict``, ``jacobian``, ``hvp``, ``features``, ``gradient`` (NumPy).

So :func:`dyntools.train` (every optimizer, schedule, sampler, label noise, recording, the guard),
:func:`dyntools.sde_models.label_noise_sde`, :mod:`dyntools.metrics` and :class:`dyntools.Claim`
all speak about the same object.

**Two ways to declare parameters.**

*Dense*: one sympy symbol per scalar parameter; a block may be an ``sp.Matrix`` of symbols (flattened
row-major into θ, PyTorch's layout for a weight matrix)::

    W, b1, a = sp.Matrix(m, 1, sp.symbols("w0:%d" % m)), sp.Matrix(sp.symbols("b0:%d" % m)), ...
    h = (a.T * (W * x + b1).applyfunc(lambda z: sp.Max(z, 0)))[0]
    SymbolicModel(h, params={"W": W, "b": b1, "a": a}, inputs=x)

*Coordinatewise* (the documented way for vector parameters of length ``d``): a predictor
``h(x) = Σ_{j<d} f(θ_{1j}, …, θ_{cj}, x_j)`` is declared by its summand on one coordinate, with
``coordinates=d`` — or, equivalently, as an ``sp.Sum`` over an ``sp.IndexedBase`` index::

    u, v, w, x = sp.symbols("u v w x")
    SymbolicModel(u * v * w * x, params=[u, v, w], inputs=x, coordinates=200)     # depth-3 diagonal net
    j = sp.Idx("j"); U, V, X = sp.IndexedBase("u"), sp.IndexedBase("v"), sp.IndexedBase("x")
    SymbolicModel(sp.Sum(U[j] * V[j] * X[j], (j, 0, 199)), params=[U, V], inputs=X)  # the diagonal net

θ is then the blocks one after the other (``[u; v; w]``), each of length ``d``; X has ``d`` columns. The form
has one output (regression head) and only per-coordinate parameters. Only ``c`` symbols are differentiated,
whatever ``d`` is, and the kernel is a loop over ``j``. A ``Sum`` the form cannot take — a scalar shared by all
coordinates (a plain Symbol beside the ``IndexedBase`` parameters: ``s·Σ_j u_j x_j``), a sum inside a larger
expression (``tanh(Σ_j u_j x_j)``), several sums — is expanded into the dense declaration of the same model
(each ``IndexedBase`` a ``(d, 1)`` block ``u[0] … u[d−1]``, the same θ layout and columns of X) and compiled
densely; ``expanded_coordinates`` is then d. With ``coordinates=d``, a Matrix block or K outputs are refused,
naming the dense form instead.

**Init** (``init``): per block, a number (constant), ``("constant", c)``, ``("normal", std)``,
``("normal", mean, std)`` or ``("uniform", low, high)`` (default ``("normal", 0.1)``), drawn block by
block in declaration order from a PCG64 generator of the ``symbolic.init`` stream of the seed
(:mod:`dyntools.engine.streams`); seed index ``s`` is child ``s`` of that stream.

**Bad input** is one ``ValueError`` naming the symbol or construct: a parameter that does not appear in
the predictor, a symbol that is neither parameter nor input, a construct sympy cannot differentiate or
no code exists for, an expression whose derivation exceeds ``budget`` seconds, data of the wrong shape.
"""

from __future__ import annotations

import time

import numpy as np
import sympy as sp

from dyntools import validation
from dyntools.codegen import cache as codecache
from dyntools.codegen import derive, milstein
from dyntools.codegen import kernels as codegen
from dyntools.models.base import HEADS, Model

INIT_KINDS = ("constant", "normal", "uniform")
DEFAULT_INIT = ("normal", 0.1)


# --------------------------------------------------------------------------------- declaration

def _block_entries(name, value) -> tuple[tuple[int, ...], list]:
    """``(shape, symbols)`` of one parameter block (row-major)."""
    if isinstance(value, sp.IndexedBase):
        return (), [sp.Symbol(str(value.label))]
    if isinstance(value, sp.MatrixBase):
        return tuple(value.shape), list(value)
    if isinstance(value, sp.Symbol):
        return (), [value]
    raise TypeError(f"Invalid params: block {name!r} must be a sympy Symbol, Matrix of symbols or IndexedBase, "
                    f"got {type(value).__name__}")


def _entry_name(block, shape, k) -> str:
    if not shape:
        return block
    if shape[1] == 1 or shape[0] == 1:
        return f"{block}[{k}]"
    return f"{block}[{k // shape[1]}, {k % shape[1]}]"


def _as_blocks(params) -> dict:
    if isinstance(params, dict):
        blocks = dict(params)
    else:
        items = params if isinstance(params, list | tuple) else [params]
        blocks = {}
        for item in items:
            if not isinstance(item, sp.Symbol | sp.IndexedBase):
                raise TypeError("Invalid params: a list of parameters holds Symbols or IndexedBases "
                                "(name matrix blocks with a dict)")
            blocks[str(item.label if isinstance(item, sp.IndexedBase) else item)] = item
    if not blocks:
        raise ValueError("Invalid params: at least one parameter is needed")
    return blocks


def _as_inputs(inputs) -> list:
    if isinstance(inputs, sp.IndexedBase):
        return [sp.Symbol(str(inputs.label))]
    if isinstance(inputs, sp.MatrixBase):
        items = list(inputs)
    elif isinstance(inputs, list | tuple):
        items = list(inputs)
    else:
        items = [inputs]
    for item in items:
        if isinstance(item, sp.IndexedBase):
            raise TypeError("Invalid inputs: an IndexedBase input goes alone (the coordinate x_j)")
        if not isinstance(item, sp.Symbol):
            raise TypeError(f"Invalid inputs: expected sympy Symbols, got {type(item).__name__}")
    if not items:
        raise ValueError("Invalid inputs: at least one input symbol is needed")
    return items


def _unindex_sum(predictor):
    """``Sum(f(u[j], …, x[j]), (j, 0, d−1))`` → ``(f(u, …, x), d)``."""
    j, d = _sum_range(predictor.limits)
    body = predictor.function
    subs = {}
    for node in body.atoms(sp.Indexed):
        if node.indices != (j,) and tuple(node.indices) != (sp.Idx(str(j)),):
            raise ValueError(f"Invalid predictor: {node} is not indexed by the summation index {j} alone")
        subs[node] = sp.Symbol(str(node.base.label))
    return body.xreplace(subs), d


def _sum_range(limits) -> tuple:
    """``(index, d)`` of a ``Sum`` over one index from 0 to d − 1."""
    if len(limits) != 1:
        raise ValueError("Invalid predictor: a Sum over one index j from 0 to d−1 is expected")
    j, lo, hi = limits[0]
    if lo != 0 or not (hi + 1).is_Integer or hi + 1 < 1:
        raise ValueError(f"Invalid predictor: the sum runs over {j} = {lo} … {hi}; expected 0 … d−1 with an integer d")
    return j, int(hi + 1)


def _expand_sums(predictor, params, inputs, features):
    """The dense declaration of a model written with sums over ``IndexedBase`` coordinates that the
    coordinatewise form cannot take — a scalar shared by all coordinates (``s·Σ_j u_j x_j``), a sum inside a
    larger expression (``tanh(Σ_j u_j x_j)``), several sums.

    Every ``Sum`` over ``j = 0 … d−1`` becomes its d terms; every ``IndexedBase`` parameter ``u`` a ``(d, 1)``
    block of the symbols ``u[0] … u[d−1]``; an ``IndexedBase`` input ``x`` the d columns ``x[0] … x[d−1]``
    of X. Plain Symbols stay scalars. Returns ``(predictor, params, inputs, features, d)`` of the same model,
    declared densely (its derivatives then come from the adjoint pass of :mod:`dyntools.codegen.derive`)."""
    extents = set()

    def expand(node):
        j, d = _sum_range(node.limits)
        extents.add(d)
        names = {j, sp.Symbol(str(j)), sp.Idx(str(j))}
        return sp.Add(*[node.function.xreplace({n: sp.Integer(k) for n in names}) for k in range(d)])

    def expanded(expr):
        expr = sp.sympify(expr)
        while expr.has(sp.Sum):
            expr = expr.replace(lambda e: isinstance(e, sp.Sum) and not e.function.has(sp.Sum), expand)
        return expr

    outputs = predictor.applyfunc(expanded) if isinstance(predictor, sp.MatrixBase) else expanded(predictor)
    features = {k: (v.applyfunc(expanded) if isinstance(v, sp.MatrixBase) else expanded(v))
                for k, v in (features or {}).items()}
    if len(extents) != 1:
        raise ValueError(f"Invalid predictor: its sums run over different lengths {sorted(extents)}; the coordinates "
                         "of one model have one length d")
    d = extents.pop()

    def entry(base, k):
        return sp.Symbol(f"{base.label}[{k}]")

    replace = {}
    exprs = list(outputs) if isinstance(outputs, sp.MatrixBase) else [outputs]
    for e in exprs + [e for v in features.values() for e in (v if isinstance(v, sp.MatrixBase) else [v])]:
        for node in e.atoms(sp.Indexed):
            k = node.indices[0] if len(node.indices) == 1 else None
            if k is None or not k.is_Integer or not 0 <= int(k) < d:
                raise ValueError(f"Invalid predictor: {node} is outside a Sum over its index (or not one index "
                                 f"in 0 … {d - 1})")
            replace[node] = entry(node.base, int(k))
    outputs = outputs.xreplace(replace)
    features = {k: v.xreplace(replace) for k, v in features.items()}
    items = params.items() if isinstance(params, dict) else [
        (str(b.label if isinstance(b, sp.IndexedBase) else b), b)
        for b in (params if isinstance(params, list | tuple) else [params])]
    blocks = {name: (sp.Matrix(d, 1, [entry(b, k) for k in range(d)]) if isinstance(b, sp.IndexedBase) else b)
              for name, b in items}
    if isinstance(inputs, sp.IndexedBase):
        inputs = [entry(inputs, k) for k in range(d)]
    return outputs, blocks, inputs, features, d


def _needs_dense(predictor, params) -> bool:
    """A ``Sum`` predictor the coordinatewise form cannot take: a plain Symbol among the parameters (a scalar
    shared by all coordinates), or sums anywhere but at the top."""
    if not (isinstance(predictor, sp.Basic | sp.MatrixBase) and predictor.has(sp.Sum)):
        return False
    if not isinstance(predictor, sp.Sum) or predictor.function.has(sp.Sum):
        return True
    items = params.values() if isinstance(params, dict) else (params if isinstance(params, list | tuple)
                                                              else [params])
    return not all(isinstance(item, sp.IndexedBase) for item in items)


COORDINATEWISE_LIMITS = ("a coordinatewise model has one output, the regression head, and parameters that are "
                         "all vectors over the d coordinates (θ_{·j}, one symbol each)")
DENSE_INSTEAD = ("declare the model densely instead (one Symbol per scalar parameter, sp.Matrix blocks for vectors "
                 "and matrices, no coordinates=)")


def _check_init(blocks, init) -> dict:
    init = dict(init or {})
    unknown = set(init) - set(blocks)
    if unknown:
        raise ValueError(f"Invalid init: no parameter block named {sorted(unknown)[0]!r} "
                         f"(blocks: {', '.join(blocks)})")
    out = {}
    for name in blocks:
        spec = init.get(name, DEFAULT_INIT)
        if isinstance(spec, int | float):
            spec = ("constant", float(spec))
        if not isinstance(spec, tuple | list) or not spec or spec[0] not in INIT_KINDS:
            raise ValueError(f"Invalid init[{name!r}]: {spec!r} (expected a number or a tuple starting with one of "
                             f"{', '.join(INIT_KINDS)})")
        kind, *args = spec
        arity = {"constant": (1,), "normal": (1, 2), "uniform": (2,)}[kind]
        if len(args) not in arity:
            raise ValueError(f"Invalid init[{name!r}]: {kind} takes {' or '.join(map(str, arity))} numbers")
        args = [validation.finite(f"init[{name!r}]", a) for a in args]
        if kind == "normal" and args[-1] < 0:
            raise ValueError(f"Invalid init[{name!r}]: the standard deviation must be >= 0")
        if kind == "uniform" and args[0] > args[1]:
            raise ValueError(f"Invalid init[{name!r}]: uniform needs low <= high")
        out[name] = (kind, *args)
    return out


# ------------------------------------------------------------------------------------------ model

class SymbolicModel(Model):
    """A model declared by a sympy expression (see the module docstring).

    Parameters
    ----------
    predictor : sympy expression (one output), ``sp.Matrix`` (K outputs), or ``sp.Sum`` over an index
    params : dict name → Symbol / Matrix of Symbols / IndexedBase, or a list of Symbols / IndexedBases
    inputs : Symbol, list or Matrix of Symbols (the columns of X in order), or an IndexedBase
    coordinates : int or None   d of a coordinatewise model (``h = Σ_j f(θ_{·j}, x_j)``)
    head : "regression" | "cross-entropy"
    loss_scale : float          s of the square loss ``s (h − y)²`` (½: DiagNet; ¼: the toy; 1: the MLP)
    init : dict                 per block (see the module docstring)
    features : dict             name → expression or Matrix: hidden activations (for feature sparsity)
    name : str                  recorded in results
    budget : float              processor seconds allowed for deriving and printing the code
    roll : bool or None         dense models: write the kernel as loops over index tables (True), as
                                straight-line code (False), or decide by size (None: loops above
                                :data:`dyntools.codegen.kernels.ROLL_STATEMENTS` expressions and input
                                columns; numba compiles long straight-line code superlinearly)
    init_stream, sampling_stream : stream purposes (:data:`dyntools.engine.streams.KEYS`) of the init and
                                of the SGD indices / label noise (another model's, to replay its draws)
    """

    head = "regression"
    #: dt.train calls the generated kernel through a function pointer from one shared, cached loop
    #: (:func:`dyntools.dynamics.path_loop.by_pointer`): a new model compiles its kernel only
    generated_kernel = True
    init_stream = "symbolic.init"
    sampling_stream = "symbolic.sampling"

    def __init__(self, predictor, params, inputs, *, coordinates: int | None = None, head: str = "regression",
                 loss_scale: float = 0.5, init: dict | None = None, features: dict | None = None,
                 name: str = "symbolic", budget: float = 10.0, init_stream: str = "symbolic.init",
                 sampling_stream: str = "symbolic.sampling", roll: bool | None = None):
        from dyntools.engine import streams

        self.name = str(name)
        streams.key(init_stream)
        streams.key(sampling_stream)
        self.init_stream, self.sampling_stream = init_stream, sampling_stream
        self.head = validation.one_of("head", head, HEADS)
        self.loss_scale = validation.positive("loss_scale", loss_scale)
        self.budget = validation.positive("budget", budget)
        if roll not in (None, True, False):
            raise ValueError(f"Invalid roll: {roll!r} (expected True, False or None)")
        self.roll = roll
        #: d of a model declared with sums that the coordinatewise form cannot take, compiled densely
        self.expanded_coordinates = None
        if isinstance(predictor, sp.Basic | sp.MatrixBase) and predictor.has(sp.Sum) and coordinates is not None:
            raise ValueError("Invalid coordinates: a Sum predictor gives d itself; leave coordinates unset")
        if _needs_dense(predictor, params):
            predictor, params, inputs, features, self.expanded_coordinates = _expand_sums(predictor, params,
                                                                                            inputs, features)
        elif isinstance(predictor, sp.Sum):
            predictor, coordinates = _unindex_sum(predictor)
        self.coordinates = None if coordinates is None else validation.count("coordinates", coordinates)
        blocks = _as_blocks(params)
        user_inputs = _as_inputs(inputs)
        outputs = [derive.with_relu(h) for h in
                   (list(predictor) if isinstance(predictor, sp.MatrixBase) else [sp.sympify(predictor)])]
        features = {k: (v.applyfunc(derive.with_relu) if isinstance(v, sp.MatrixBase) else derive.with_relu(v))
                    for k, v in (features or {}).items()}
        self._declare(blocks, user_inputs, outputs, features)
        self.init_specs = _check_init(blocks, init)
        self._numpy = self._twin = None
        self._twin_kind = "twin"
        self._kernel = self._load_kernel()
        self.loss_grad = self._kernel.loss_grad

    # ---------------------------------------------------------------- declaration → canonical form
    def _declare(self, blocks, user_inputs, outputs, features):
        coordinatewise = self.coordinates is not None
        K = len(outputs)
        if self.head == "regression" and K != 1 and not coordinatewise:
            raise ValueError(f"Invalid predictor: the regression head needs one output, got {K}")
        if self.head == "cross-entropy" and K < 2:
            raise ValueError(f"Invalid predictor: the cross-entropy head needs K >= 2 outputs, got {K}")
        if coordinatewise and (self.head != "regression" or K != 1):
            raise ValueError(f"Invalid head: {self.head} with {K} output(s) — {COORDINATEWISE_LIMITS}; "
                             f"{DENSE_INSTEAD}")
        if coordinatewise and len(user_inputs) != 1:
            raise ValueError("Invalid inputs: a coordinatewise model has one input symbol, the coordinate x_j")
        self.blocks, self.block_shapes, names, user_params = [], {}, [], []
        for bname, value in blocks.items():
            shape, entries = _block_entries(bname, value)
            if coordinatewise and shape:
                raise ValueError(f"Invalid params: block {bname!r} is a Matrix — {COORDINATEWISE_LIMITS}; "
                                 f"{DENSE_INSTEAD}")
            self.blocks.append(bname)
            self.block_shapes[bname] = shape
            for k, s in enumerate(entries):
                if not isinstance(s, sp.Symbol):
                    raise TypeError(f"Invalid params: entry {_entry_name(bname, shape, k)} is {s}, not a Symbol")
                names.append(_entry_name(bname, shape, k))
                user_params.append(s)
        seen: dict = {}
        for s, nm in zip(user_params + user_inputs, names + [str(x) for x in user_inputs]):
            if s in seen:
                raise ValueError(f"Invalid params: the symbol {s} is used twice ({seen[s]} and {nm})")
            seen[s] = nm
        theta = list(sp.symbols(f"t0:{len(user_params)}", real=True))
        xs = list(sp.symbols(f"x0:{len(user_inputs)}", real=True))
        rename = dict(zip(user_params + user_inputs, theta + xs))
        free = set().union(*(sp.sympify(h).free_symbols for h in outputs))
        for s, nm in zip(user_params, names):
            if s not in free:
                raise ValueError(f"Invalid params: parameter {nm} does not appear in the predictor")
        stray = sorted(str(s) for s in free if s not in rename)
        if stray:
            raise ValueError(f"Invalid predictor: symbol {stray[0]!r} is neither a parameter nor an input "
                             "(substitute a number, or declare it)")
        feats = {}
        for fname, expr in features.items():
            items = list(expr) if isinstance(expr, sp.MatrixBase) else [sp.sympify(expr)]
            extra = sorted(str(s) for e in items for s in e.free_symbols if s not in rename)
            if extra:
                raise ValueError(f"Invalid features[{fname!r}]: symbol {extra[0]!r} is neither a parameter "
                                 "nor an input")
            if coordinatewise and len(items) != 1:
                raise ValueError(f"Invalid features[{fname!r}]: a coordinatewise feature is one expression "
                                 "per coordinate")
            feats[str(fname)] = [e.xreplace(rename) for e in items]
        self.param_names = names
        self.input_names = [str(x) for x in user_inputs]
        self._user_of = {t: nm for t, nm in zip(theta + xs, names + self.input_names)}
        #: internal symbol → the user's symbol (for claims stated in the user's terms)
        self.user_symbols = {t: s for s, t in rename.items()}
        self.derivation = derive.Derivation("coordinatewise" if coordinatewise else "dense",
                                            [sp.sympify(h).xreplace(rename) for h in outputs], theta, xs, feats)
        self.n_outputs = K
        canonical = "\n".join([self.derivation.canonical(), self.head, repr(self.loss_scale), str(codegen.VERSION),
                               f"roll={self.roll}"])
        self.key = codecache.key_of(canonical)

    def _name_of(self, sym) -> str:
        return self._user_of.get(sym, str(sym))

    def _jacobian_exprs(self):
        if not hasattr(self, "_jac"):
            self._jac = derive.jacobian(self.derivation, self._name_of, self.budget)
        return self._jac

    def _hessian_direction_exprs(self):
        if not hasattr(self, "_hv"):
            self._hv = derive.hessian_direction(self.derivation, self._jacobian_exprs(), self._name_of, self.budget)
        return self._hv

    def jacobian_symbolic(self, x_row) -> list:
        """The derived row ``∇_θ h_θ(x)`` at the inputs ``x_row`` (numbers or sympy expressions), in the
        user's symbols and θ's layout (coordinatewise: entry ``(m, j)`` is ``∂f/∂θ_m`` at coordinate j, in
        the symbols ``u_j``, as :func:`dyntools.symbolic.model_claims.parameter_symbols` names them)."""
        der, (row,) = self.derivation, self._jacobian_exprs()[:1]
        if der.mode == "dense":
            subs = dict(zip(der.inputs, x_row))
            return [e.xreplace(subs).xreplace(self.user_symbols) for e in row]
        out = []
        for e in row:
            for j, xj in enumerate(x_row):
                subs = {t: sp.Symbol(f"{self.user_symbols[t]}_{j}", real=True) for t in der.theta}
                subs[der.inputs[0]] = xj
                out.append(e.xreplace(subs))
        return out

    def _load_kernel(self):
        def make():
            with_budget = derive.time_limit(self.budget)
            try:
                with with_budget:
                    src = codegen.kernel_source(self.derivation, self._jacobian_exprs(), self.head, self.loss_scale,
                                                self._name_of, name=self.name, key=self.key, roll=self.roll)
            except derive.ProofTimeout:
                raise ValueError(f"Invalid predictor: generating its kernel takes more than the budget of "
                                 f"{self.budget:g} s; declare repeated coordinates with coordinates=d") from None
            ws = codegen.workspace_size(self.derivation, self._jacobian_exprs(), 1)
            return (src + "\n#: scratch entries per coordinate (coordinatewise models)\n"
                    f"WORKSPACE_PER_COORDINATE = {ws}\n")

        return codecache.load("kernel", self.key, make)

    @property
    def numpy_module(self):
        """The generated NumPy functions (``outputs``, ``jacobian``, ``hessian_direction``, ``features``)."""
        if self._numpy is None:
            def make():
                jac, hv = self._jacobian_exprs(), self._hessian_direction_exprs()
                return codegen.numpy_source(self.derivation, jac, hv, self._name_of, name=self.name, key=self.key)

            self._numpy = codecache.load("numpy", self.key, make)
        return self._numpy

    @property
    def twin_module(self):
        """The generated NumPy module :meth:`loss_grad_np` evaluates: :attr:`numpy_module` when it exists (in this
        process or on disk), else the loss-and-gradient twin (``outputs``, ``jacobian``, ``features``; no
        Hessian–vector expressions, whose derivation is most of the twin's cost for a large dense model)."""
        if self._twin is None:
            if self._numpy is not None or codecache.exists("numpy", self.key):
                self._twin, self._twin_kind = self.numpy_module, "numpy"
            else:
                def make():
                    return codegen.numpy_source(self.derivation, self._jacobian_exprs(), None, self._name_of,
                                                name=self.name, key=self.key)

                self._twin, self._twin_kind = codecache.load("twin", self.key, make), "twin"
        return self._twin

    @property
    def code_paths(self) -> dict:
        """Where the generated sources are (the numba cache is in ``__pycache__`` beside them)."""
        return {kind: str(codecache.path_of(kind, self.key)) for kind in ("kernel", "numpy")}

    def compile(self) -> float:
        """Compile the kernel now (or load it from numba's cache); returns the seconds it took."""
        t0 = time.perf_counter()
        n_in = self.n_inputs
        X = np.zeros((1, n_in))
        y = np.zeros(1) if self.head == "regression" else np.zeros(1, dtype=np.int64)
        iargs, fargs = self.kernel_args()
        self.loss_grad(np.zeros(self.n_params), X, y, np.zeros(1, dtype=np.int64), 1, np.zeros(1),
                       np.zeros(self.n_params), np.zeros(self.workspace_size(1)), iargs, fargs)
        return time.perf_counter() - t0

    # ---------------------------------------------------------------- the generated kernel held to its twin
    def twin_check_stamp(self) -> str | None:
        """The name of the stamp that says this model's generated kernel was checked against its generated NumPy
        twin (:attr:`twin_module`) on this installation: the cache key, the SHA-256 of both generated files and
        numba's version (None while the twin is not generated yet). A file edited since, or another numba, means
        another name."""
        import numba

        if self._twin is not None:
            kind = self._twin_kind
        else:                               # the module twin_module will pick (without generating it)
            kind = "numpy" if self._numpy is not None or codecache.exists("numpy", self.key) else "twin"
        kernel, twin = codecache.fingerprint("kernel", self.key), codecache.fingerprint(kind, self.key)
        if kernel is None or twin is None:
            return None
        return f"twin-checked_{self.key}_{kernel}_{kind}{twin}_numba{numba.__version__}"

    def twin_checked(self) -> bool:
        """Whether :func:`dyntools.dynamics.kernel_check.check_generated` passed for this code already."""
        name = self.twin_check_stamp()
        return name is not None and codecache.stamped(name)

    def mark_twin_checked(self) -> None:
        name = self.twin_check_stamp()
        if name is not None:
            codecache.stamp(name)

    # ---------------------------------------------------------------- the model protocol
    @property
    def n_params(self) -> int:
        p = len(self.derivation.theta)
        return p * self.coordinates if self.coordinates is not None else p

    @property
    def n_inputs(self) -> int:
        """Columns of X the model reads."""
        return self.coordinates if self.coordinates is not None else len(self.derivation.inputs)

    def kernel_args(self):
        return np.array([self.n_inputs], dtype=np.int64), np.zeros(0)

    def workspace_size(self, batch: int) -> int:
        return self._kernel.WORKSPACE_PER_COORDINATE * (self.coordinates or 0)

    def check_data(self, X, y=None) -> None:
        """``ValueError`` unless ``X`` is (n, n_inputs) (and ``y`` has n entries)."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_inputs:
            what = (f"d = {self.coordinates} coordinates" if self.coordinates is not None
                    else f"the inputs {', '.join(self.input_names)}")
            raise ValueError(f"Invalid X: the model {self.name!r} reads {self.n_inputs} columns ({what}); "
                             f"got an array of shape {X.shape}")
        if y is not None and np.shape(y) != (X.shape[0],):
            raise ValueError(f"Invalid y: expected {X.shape[0]} labels (one per row of X), got shape {np.shape(y)}")

    def _check_theta(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"Invalid theta: expected {self.n_params} parameters, got shape {theta.shape}")
        return theta

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        from dyntools.engine import streams

        gen = streams.path_generators(seed, index + 1, streams.key(self.init_stream))[index]
        parts = []
        for bname in self.blocks:
            size = self.coordinates or int(np.prod(self.block_shapes[bname], dtype=np.int64))
            kind, *args = self.init_specs[bname]
            if kind == "constant":
                parts.append(np.full(size, args[0]))
            elif kind == "normal":
                mean, std = (0.0, args[0]) if len(args) == 1 else args
                parts.append(mean + std * gen.standard_normal(size))
            else:
                parts.append(gen.uniform(args[0], args[1], size))
        return np.concatenate(parts)

    def config(self) -> dict:
        return {"name": self.name, "n_params": self.n_params, "head": self.head, "loss_scale": self.loss_scale,
                "coordinates": self.coordinates, "blocks": self.blocks, "inputs": self.input_names,
                "predictor": [sp.sstr(h.xreplace({t: sp.Symbol(self._name_of(t)) for t in h.free_symbols}))
                              for h in self.derivation.outputs],
                "key": self.key}

    def sde_terms(self):
        """``(predict_jacobian, p, scale)`` for :func:`dyntools.sde_models.label_noise_sde`: the generated numba
        function writing ``h_θ(X)`` and ``φ_θ(X)``, the parameter count and the loss scale ``2s`` of
        ``s (h − y)² = 2s · ½ (h − y)²``."""
        if self.head != "regression":
            raise ValueError(f"Invalid model: the label-noise SDE needs the regression head ({self.name} has "
                             f"{self.head})")
        return self._kernel.predict_jacobian, self.n_params, 2.0 * self.loss_scale

    # ---------------------------------------------------------------- Milstein for the label-noise SDE
    def noise_commutativity(self, X) -> milstein.Commutativity:
        """Whether the label-noise SDE's noise ``σ = c φ_θ(X)ᵀ`` is commutative on the data ``X``:
        ``∇²h(x_b)∇h(x_a) = ∇²h(x_a)∇h(x_b)`` identically in θ for every pair of rows, decided exactly by
        sympy (:func:`dyntools.codegen.milstein.decide`; first for any data, then for these rows)."""
        self.check_data(X)
        X = np.ascontiguousarray(X, dtype=np.float64)
        cache = self.__dict__.setdefault("_commutativity", {})
        tag = (X.shape, X.tobytes())
        if tag not in cache:
            cache[tag] = milstein.decide(self.derivation, self._jacobian_exprs(), self._hessian_direction_exprs(),
                                         X, self._name_of, self.budget)
        return cache[tag]

    def milstein_correction(self, X):
        """The generated numba ``milstein_correction(θ, X, dw, h, out)`` writing
        ``½ Σ_i ∇²h(x_i)(dw_i g − h ∇h(x_i))``, ``g = Σ_i dw_i ∇h(x_i)`` — the Milstein term of the label-noise
        SDE without its factor ``c²`` (:mod:`dyntools.codegen.milstein`). ``ValueError`` unless the noise is
        commutative on ``X`` (:meth:`noise_commutativity`), naming a pair of columns where it is not."""
        if self.head != "regression" or self.n_outputs != 1:
            raise ValueError(f"Invalid model: the label-noise SDE needs the regression head ({self.name} has "
                             f"{self.head})")
        verdict = self.noise_commutativity(X)
        if verdict.holds is not True:
            if verdict.holds is False:
                a, b = verdict.pair
                why = (f"the noise σ = √(ηδ̃) φ_θ(X)ᵀ is not commutative — columns {a} and {b} (data points {a} "
                       f"and {b}): {verdict.reason}")
            else:
                why = f"commutativity of the noise σ = √(ηδ̃) φ_θ(X)ᵀ could not be decided ({verdict.reason})"
            raise ValueError(f"Invalid scheme: 'milstein' needs commutative noise, and for the model {self.name!r} "
                             f"on this data {why}; use scheme='em'")

        def make():
            show = codegen._printer("scalar", self._name_of)
            return milstein.correction_source(self.derivation, self._jacobian_exprs(),
                                              self._hessian_direction_exprs(), show, name=self.name, key=self.key,
                                              fastmath=codegen.FASTMATH)

        return codecache.load(f"milstein{milstein.VERSION}", self.key, make).milstein_correction

    def milstein_correction_np(self, theta, X, dw, h) -> np.ndarray:
        """NumPy twin of :meth:`milstein_correction` (from the NumPy module's Jacobian and Hessian direction,
        one data point at a time): ``½ Σ_i ∇²h(x_i)(dw_i g − h ∇h(x_i))``."""
        self.check_data(X)
        theta = self._check_theta(theta)
        X = np.asarray(X, dtype=np.float64)
        dw = np.asarray(dw, dtype=np.float64)
        J = self.numpy_module.jacobian(theta, X)[:, 0, :]
        g = dw @ J
        out = np.zeros(self.n_params)
        for i in range(X.shape[0]):
            out += self.numpy_module.hessian_direction(theta, X[i:i + 1], dw[i] * g - h * J[i])[0, 0]
        return 0.5 * out

    def loss(self, theta, X, y) -> float:
        """Full-data loss at ``theta`` from the compiled kernel (every example, no noise): the recorded
        losses of :func:`dyntools.train`, without generating the NumPy twin (whose Hessian–vector
        expressions take seconds to derive for a large dense model)."""
        y = np.ascontiguousarray(y, dtype=np.int64 if self.head == "cross-entropy" else np.float64)
        return self.full_data_loss(self.loss_grad, np.ascontiguousarray(theta, dtype=np.float64),
                                   np.ascontiguousarray(X, dtype=np.float64), y)

    # ---------------------------------------------------------------- the NumPy twin and hooks
    def loss_grad_np(self, theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
        """NumPy twin of the generated kernel: the same expressions evaluated on whole arrays."""
        rows = np.asarray(idx[:b])
        Xb = X[rows]
        twin = self.twin_module
        with np.errstate(over="ignore", invalid="ignore"):
            H = twin.outputs(theta, Xb)
            J = twin.jacobian(theta, Xb)
            if self.head == "regression":
                r = H[:, 0] - (y[rows] + noise[:b])
                grad[:] = ((2.0 * self.loss_scale) * r) @ J[:, 0, :] / b
                return float(self.loss_scale * (r @ r) / b)
            loss, C = _cross_entropy(H, y[rows])
            grad[:] = np.einsum("nk,nkp->p", C, J) / b
            return float(loss.sum() / b)

    def predict(self, theta, X):
        """``h_θ(X)``: (n,) for one output, (n, K) for K."""
        self.check_data(X)
        H = self.numpy_module.outputs(self._check_theta(theta), np.asarray(X, dtype=np.float64))
        return H[:, 0] if self.n_outputs == 1 else H

    def jacobian(self, theta, X):
        """``φ_θ(X)``: (n, p) rows ``∇_θ h_θ(x_i)`` for one output; (n, K, p) for K outputs."""
        self.check_data(X)
        J = self.numpy_module.jacobian(self._check_theta(theta), np.asarray(X, dtype=np.float64))
        return np.array(J[:, 0, :] if self.n_outputs == 1 else J)

    def gradient(self, theta, X, y) -> np.ndarray:
        """``∇L(θ)`` on the whole data set (no noise)."""
        self.check_data(X, y)
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        grad = np.empty(self.n_params)
        self.loss_grad_np(self._check_theta(theta), X, np.asarray(y), np.arange(n), n, np.zeros(n), grad, None,
                          *self.kernel_args())
        return grad

    def hvp(self, theta, X, y, v) -> np.ndarray:
        """``∇²L(θ) v`` on the whole data set, exactly (no finite differences)::

            regression:     (2s/n) Σ_i [∇h_i (∇h_i · v) + r_i ∇²h_i v]
            cross-entropy:  (1/n) Σ_i [J_iᵀ (diag p_i − p_i p_iᵀ) J_i v + Σ_k (p_ik − 1[k = y_i]) ∇²h_ik v]
        """
        self.check_data(X, y)
        theta = self._check_theta(theta)
        v = self._check_theta(v)
        X = np.asarray(X, dtype=np.float64)
        mod = self.numpy_module
        H, J, HV = mod.outputs(theta, X), mod.jacobian(theta, X), mod.hessian_direction(theta, X, v)
        n = X.shape[0]
        Jv = J @ v                                        # (n, K)
        if self.head == "regression":
            r = H[:, 0] - np.asarray(y, dtype=np.float64)
            return (2.0 * self.loss_scale / n) * (Jv[:, 0] @ J[:, 0, :] + r @ HV[:, 0, :])
        _, C = _cross_entropy(H, np.asarray(y))
        P = C + np.eye(self.n_outputs)[np.asarray(y)]
        inner = P * Jv - P * np.sum(P * Jv, axis=1, keepdims=True)          # (diag p − p pᵀ) J v
        return (np.einsum("nk,nkp->p", inner, J) + np.einsum("nk,nkp->p", C, HV)) / n

    def hessian(self, theta, X, y) -> np.ndarray:
        """The dense p × p Hessian of the loss (p products with :meth:`hvp`; small models only)."""
        eye = np.eye(self.n_params)
        return np.stack([self.hvp(theta, X, y, e) for e in eye], axis=1)

    def features_named(self, theta, X) -> dict:
        """The declared features: name → (n, width) activations."""
        self.check_data(X)
        if not self.derivation.features:
            raise NotImplementedError(f"{self.name} names no features (pass features= to SymbolicModel)")
        return self.numpy_module.features(self._check_theta(theta), np.asarray(X, dtype=np.float64))

    def features(self, theta, X) -> list:
        """Hidden activations, one (n × width) array per declared feature (in declaration order)."""
        return list(self.features_named(theta, X).values())


    # ---------------------------------------------------------------- metrics from the one definition
    def jacobian_rank(self, theta, X, rel_threshold: float = 1e-5) -> int:
        """Rank of ``φ_θ(X)`` (:func:`dyntools.metrics.jacobian_rank`; K outputs: the (nK, p) stack)."""
        from dyntools import metrics

        J = self.jacobian(theta, X)
        return int(metrics.jacobian_rank(J.reshape(-1, J.shape[-1]), rel_threshold))

    def sharpness(self, theta, X, y, *, iters: int = 500, tol: float = 1e-9, seed: int = 0) -> float:
        """``λ_max(∇²L(θ))`` by power iteration on the derived Hessian–vector product
        (:func:`dyntools.metrics.sharpness`; no dense Hessian)."""
        from dyntools import metrics

        return metrics.sharpness(lambda z: self.hvp(theta, X, y, z), self.n_params, iters=iters, tol=tol, seed=seed)

    def feature_sparsity(self, theta, X, threshold: float = 0.99) -> dict:
        """Feature sparsity coefficient of every declared feature (:func:`dyntools.metrics.feature_sparsity`)."""
        from dyntools import metrics

        return {k: metrics.feature_sparsity(F, threshold) for k, F in self.features_named(theta, X).items()}


def _cross_entropy(H, labels):
    """Per-example ``log Σ_k e^{h_k} − h_y`` and ``∂/∂h = softmax − onehot`` (max-shifted)."""
    labels = np.asarray(labels, dtype=np.int64)
    mx = H.max(axis=1, keepdims=True)
    E = np.exp(H - mx)
    se = E.sum(axis=1, keepdims=True)
    loss = np.log(se[:, 0]) + mx[:, 0] - H[np.arange(H.shape[0]), labels]
    C = E / se
    C[np.arange(H.shape[0]), labels] -= 1.0
    return loss, C
