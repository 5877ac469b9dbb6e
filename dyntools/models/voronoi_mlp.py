"""The MLP baseline of the Voronoi study: a plain ReLU network on the environment's points.

Seed 000 chose Voronoi partitions "because it's very hard for a deep neural network to learn"; its
ladder (:mod:`dyntools.models.voronoi`) builds the partition's structure into the model. The baseline
that tests the claim is the unstructured network of :mod:`dyntools.models.mlp` with its cross-entropy
head: widths ``(D, m_1, …, m_{L−1}, C)``, PyTorch's ``nn.Linear`` initialization
``W_l, b_l ~ U(−1/√m_{l−1}, 1/√m_{l−1})`` (stream ``voronoi.mlp-init``), trained on the same points with the
same minibatches as the ladder's rungs (the sampling stream ``voronoi.sampling`` of the ladder: with the same
seed, seed index, ``n`` and batch, every rung and this network visit the same examples in the same order).

**Inputs.** The network sees ``ξ = x / s`` (``inputs="scaled"``, the default): the box ``[−s, s]^D`` mapped to
``[−1, 1]^D``, the standardization anyone training a network on such data would apply (the box is part of
the environment's definition, and the ladder's learned centers are initialized at its scale). With
``inputs="raw"`` it sees ``ξ = x`` itself: at ``s = 100`` the first-layer hyperplanes ``{x: wᵀx + b = 0}``
start within ``|b|/‖w‖ ~ 1`` of the origin of a box of half-width 100, and an Adam step moves each entry
by about the learning rate — the network has to move its biases two orders of magnitude to place a
boundary near most cells.

**Hooks.** What the Voronoi study reads from a member of its ladder: :attr:`rung` (``"mlp"``), :attr:`slices`
(one block per tensor ``W1, b1, W2, …``), :meth:`group_of` (one group per tensor: the study's ``min`` decay
takes the minimum over each tensor), :meth:`decay_mask`, :meth:`predict` (the predicted **classes** of points
of the box), :meth:`evaluate_records` (cross-entropy and accuracy at recorded parameters, on points of the box)
and :meth:`current_centers` (none). The trainer is given :meth:`training_set` (the scaled points); the
network's own hooks inherited from :class:`~dyntools.models.mlp.MLP` (the compiled kernel and its twin,
:meth:`loss`, :meth:`evaluate`, :meth:`forward_np`) take network inputs ``ξ``, as the trainer sees them.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dyntools import validation
from dyntools.models.mlp import MLP
from dyntools.models.voronoi import GROUPS

INPUTS = ("scaled", "raw")
#: the hidden widths of the baseline: three hidden layers of 64 (8 642 parameters for D = C = 2, the size of
#: the top rung with 2048 learned centers: 2·2048 logits + 2·2048 centers + 4 scalars = 8 196)
HIDDEN = (64, 64, 64)


class VoronoiMLP(MLP):
    """The MLP baseline on the Voronoi environment (see the module docstring).

    Parameters
    ----------
    classes, dim : int
        C ≥ 2 and D (the network's output and input widths).
    hidden : tuple of int
        Hidden widths ``m_1, …, m_{L−1}`` (default :data:`HIDDEN`).
    box : float
        s, the half-width of the environment's box.
    inputs : {"scaled", "raw"}
        The network sees ``x / s`` or ``x``.
    dtype : {"float64", "float32"}
        The precision of the training (:class:`~dyntools.models.mlp.MLP`).
    """

    rung = "mlp"
    #: the ladder's "centers" attribute: this member has none
    centers = None

    def __init__(self, *, classes: int = 2, dim: int = 2, hidden=HIDDEN, box: float = 100.0,
                 inputs: str = "scaled", dtype: str = "float64"):
        self.classes = validation.count("classes (C)", classes, minimum=2)
        self.dim = validation.count("dim (D)", dim)
        hidden = tuple(hidden)
        if not hidden:
            raise ValueError("Invalid hidden: need at least one hidden width (the baseline is a deep network)")
        self.box = validation.positive("box (s)", box)
        self.inputs = validation.one_of("inputs", inputs, INPUTS)
        super().__init__((self.dim, *hidden, self.classes), head="cross-entropy", init="uniform",
                         init_stream="voronoi.mlp-init", sampling_stream="voronoi.sampling", dtype=dtype)
        self.hidden = hidden
        self.input_scale = 1.0 / self.box if self.inputs == "scaled" else 1.0
        self.name = "voronoi-mlp"
        self.slices: dict[str, slice] = {}
        for l in range(self.n_layers):
            W = self.widths[l + 1] * self.widths[l]
            self.slices[f"W{l + 1}"] = slice(int(self._w_off[l]), int(self._w_off[l]) + W)
            if self._b_off[l] >= 0:
                self.slices[f"b{l + 1}"] = slice(int(self._b_off[l]), int(self._b_off[l]) + self.widths[l + 1])

    @classmethod
    def from_config(cls, config: dict) -> VoronoiMLP:
        """The model that :meth:`config` describes (for figures drawn from a saved result)."""
        return cls(classes=config["classes"], dim=config["dim"], hidden=tuple(config["hidden"]), box=config["box"],
                   inputs=config["inputs"], dtype=config.get("dtype", "float64"))

    def config(self) -> dict:
        return {**super().config(), "name": self.name, "rung": self.rung, "classes": self.classes, "dim": self.dim,
                "hidden": list(self.hidden), "box": self.box, "inputs": self.inputs}

    # -------------------------------------------------------------- inputs
    def network_inputs(self, X) -> np.ndarray:
        """``ξ = x / s`` (scaled) or ``x`` (raw) for the rows of ``X`` (float64)."""
        return np.asarray(X, dtype=np.float64) * self.input_scale

    def training_set(self, data) -> SimpleNamespace:
        """The trainer's view of ``data`` (``X``, ``y``): the network inputs and the labels."""
        return SimpleNamespace(X=self.network_inputs(data.X), y=np.asarray(data.y))

    # -------------------------------------------------------------- the ladder's hooks
    def group_of(self) -> np.ndarray:
        """Group index of every parameter: one group per tensor, in layout order (W1, b1, W2, …)."""
        out = np.empty(self.n_params, dtype=np.int64)
        for g, sl in enumerate(self.slices.values()):
            out[sl] = g
        return out

    def decay_mask(self, exclude=()) -> np.ndarray:
        """All ones: the ladder's groups (``logits``, ``offset``, …) that ``exclude`` may name are not tensors
        of this network (each name is still checked)."""
        for g in exclude:
            validation.one_of("decay exclusion", g, GROUPS)
        return np.ones(self.n_params)

    def current_centers(self, theta) -> np.ndarray:
        """No centers: an empty (0, D) array."""
        return np.zeros((0, self.dim))

    def predict(self, theta, X) -> np.ndarray:
        """The predicted classes (argmax of the logits) of the rows of ``X``, points of the box."""
        logits, _ = self.forward_np(np.asarray(theta, dtype=np.float64), self.network_inputs(X))
        return np.argmax(logits, axis=-1)

    def accuracy(self, theta, X, y) -> float:
        return float(np.mean(self.predict(theta, X) == np.asarray(y)))

    def evaluate_records(self, theta_rec, X, y) -> tuple[np.ndarray, np.ndarray]:
        """(cross-entropy, accuracy) arrays of shape ``theta_rec.shape[:-1]`` on points ``X`` of the box and
        labels ``y`` (NaN where a recorded θ is not finite)."""
        theta_rec = np.asarray(theta_rec, dtype=np.float64)
        flat = theta_rec.reshape(-1, theta_rec.shape[-1])
        xi = self.network_inputs(X)
        loss, acc = np.full(len(flat), np.nan), np.full(len(flat), np.nan)
        for i, theta in enumerate(flat):
            if np.all(np.isfinite(theta)):
                loss[i], acc[i] = self.evaluate(theta, xi, y)
        return loss.reshape(theta_rec.shape[:-1]), acc.reshape(theta_rec.shape[:-1])
