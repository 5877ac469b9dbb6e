"""Modular arithmetic tables, the data of grokking (Power et al. 2022).

For a prime-sized modulus ``p`` and an operation ``∘`` ∈ {+, −, ×}, the data set is the whole table of
``p²`` equations ``a ∘ b ≡ c (mod p)`` with ``a, b ∈ {0, …, p − 1}``: the label of the pair ``(a, b)`` is
``c = (a ∘ b) mod p`` (one of ``p`` classes). A fraction ``train_fraction`` of the table, drawn without
replacement, is the training set and the rest the test set; the split is a permutation of the table drawn
from the stream ``data.modular`` of the seed (:mod:`dyntools.engine.streams`; seed index ``index`` > 0
draws another split of the same seed).

Two encodings of the pair:

* ``"one-hot"``: ``x = [e_a, e_b] ∈ {0, 1}^{2p}`` (the input of an MLP: its first layer's columns are the
  two operands' embeddings);
* ``"tokens"``: ``x = (a, b, p)`` as three floats, the token ids of the sequence ``a b =`` with ``=`` the
  extra token ``p`` (the input of :class:`dyntools.models.transformer.Transformer`, vocabulary ``p + 1``).
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.data.containers import ClassificationData
from dyntools.engine import streams

OPERATIONS = ("+", "-", "*")
ENCODINGS = ("one-hot", "tokens")
_KEY = streams.KEYS["data.modular"]


def table(p: int, op: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, c)``: the ``p²`` operand pairs in row-major order and their labels ``c = (a ∘ b) mod p``."""
    p = validation.count("p", p, minimum=2)
    op = validation.one_of("op", op, OPERATIONS)
    a, b = (g.ravel() for g in np.meshgrid(np.arange(p), np.arange(p), indexing="ij"))
    c = {"+": a + b, "-": a - b, "*": a * b}[op] % p
    return a.astype(np.int64), b.astype(np.int64), c.astype(np.int64)


def encode(a: np.ndarray, b: np.ndarray, p: int, encoding: str) -> np.ndarray:
    """The inputs of the pairs ``(a_i, b_i)`` in ``encoding`` (module docstring), float64 rows."""
    encoding = validation.one_of("encoding", encoding, ENCODINGS)
    if encoding == "tokens":
        return np.column_stack([a, b, np.full(a.shape, p)]).astype(np.float64)
    X = np.zeros((a.shape[0], 2 * p))
    rows = np.arange(a.shape[0])
    X[rows, a] = 1.0
    X[rows, p + b] = 1.0
    return X


def split(p: int, train_fraction: float, seed: int = 0, index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(train, test)`` into the table: the first ``round(train_fraction · p²)`` entries of a
    permutation drawn from ``SeedSequence(seed, (data.modular[, index]))``, each part sorted."""
    p = validation.count("p", p, minimum=2)
    frac = validation.in_interval("train_fraction", train_fraction, 0.0, 1.0)
    index = validation.count("index", index, minimum=0)
    n = p * p
    n_train = int(round(frac * n))
    if not 1 <= n_train < n:
        raise ValueError(f"Invalid train_fraction: {train_fraction} (leaves {n_train} of {n} pairs for training; "
                         "need at least one in each part)")
    key = (_KEY,) if index == 0 else (_KEY, index)
    perm = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, *key))).permutation(n)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def modular_arithmetic(p: int = 23, op: str = "+", train_fraction: float = 0.5, *, encoding: str = "one-hot",
                       seed: int = 0, index: int = 0) -> ClassificationData:
    """The table of ``a ∘ b mod p`` split into train and test sets (module docstring): a
    :class:`~dyntools.data.containers.ClassificationData` with ``n_classes = p`` (``X_val``/``y_val`` the
    held-out pairs).

    Parameters
    ----------
    p : int, default 23
        The modulus, p ≥ 2 (a prime makes every nonzero residue invertible under ``"*"``); classes 0…p−1.
    op : str, default "+"
        The operation ∘: ``"+"``, ``"-"`` or ``"*"``.
    train_fraction : float in (0, 1), default 0.5
        The share of the p² pairs in the training set (rounded; each part keeps at least one pair).
    encoding : {"one-hot", "tokens"}, default "one-hot"
        ``X`` as two one-hot blocks (2p columns, for an MLP) or as the token ids (a, b, p) — p standing for
        "=" — (for the transformer).
    seed : int, default 0
        Root seed of the ``data.modular`` stream the split is drawn from.
    index : int, default 0
        Sub-stream of the split (one per replicate).

    Examples
    --------
    >>> import dyntools as dt
    >>> d = dt.data.modular_arithmetic(7, "+", 0.5, seed=0)
    >>> d.X.shape, d.X_val.shape, d.n_classes
    ((24, 14), (25, 14), 7)
    """
    a, b, c = table(p, op)
    train, test = split(p, train_fraction, seed, index)
    X = encode(a, b, p, encoding)
    return ClassificationData(X[train], c[train], X[test], c[test], int(p))
