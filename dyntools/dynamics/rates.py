r"""The learning rates :math:`\eta_{g,t} = \mathrm{lr}_g\, m_{g,t}` of a training loop, a window of steps at a time.

A run of ``T`` steps never holds the ``G × T`` rates at once: the loop asks :meth:`LearningRates.window` for
the rates of the steps ``t0 … t1 − 1`` it is about to take (``G × (t1 − t0)`` float64, or ``G × 1`` when every
run's rate is constant), so its memory does not grow with ``T``. Each window is bitwise equal to the
same columns of the whole array (:meth:`dyntools.optim.schedules.Schedule.window`). A reactive schedule
(:class:`~dyntools.optim.schedules.ReduceLROnPlateau`) holds ``lr · (1 · factor)`` over each piece; its
factor is set by :meth:`react` between pieces. :meth:`at` gives the rates at the recorded steps (the rate
of step ``min(s, T − 1)`` for a recorded step ``s``), gathered while the windows pass.
"""

from __future__ import annotations

import numpy as np

#: The most steps whose rates are materialized at once: G × 2¹⁶ float64 (2 MiB for 4 runs).
WINDOW = 2**16


class LearningRates:
    """The rates of ``G`` runs (``opts[g].lr`` times ``scheds[g]``'s multiplier) over ``steps`` steps."""

    def __init__(self, opts, scheds, steps: int, reactive, record_steps, keep: bool = False):
        self.lr = [float(o.lr) for o in opts]
        self.scheds, self.steps, self.reactive = scheds, int(steps), set(reactive)
        self.factor = [1.0] * len(opts)
        self.constant = not self.reactive and all(s.window(self.steps, 0, min(2, self.steps)).size == 1
                                                  for s in scheds)
        self.record_steps = np.asarray(record_steps, dtype=np.int64)
        self.recorded = np.full((len(opts), self.record_steps.size), np.nan)
        self.keep = keep
        self.pieces: list[tuple[int, int, np.ndarray]] = []

    def react(self, g: int, factor: float) -> None:
        """Run ``g`` (reactive) holds ``lr · (1 · factor)`` from the next window on."""
        self.factor[g] = float(factor)

    def window(self, t0: int, t1: int) -> np.ndarray:
        """The rates of steps ``t0 ≤ t < t1``: C-contiguous (G, t1 − t0), or (G, 1) when all are constant."""
        if self.constant:
            rates = np.ascontiguousarray(np.stack([lr * s.window(self.steps, 0, 1) for lr, s in
                                                   zip(self.lr, self.scheds)]))
        else:
            rows = []
            for g, (lr, s) in enumerate(zip(self.lr, self.scheds)):
                m = np.ones(1) * self.factor[g] if g in self.reactive else s.window(self.steps, t0, t1)
                rows.append(lr * np.broadcast_to(m, (t1 - t0,)))
            rates = np.ascontiguousarray(np.stack(rows))
        self._note(t0, t1, rates)
        return rates

    def _note(self, t0: int, t1: int, rates: np.ndarray) -> None:
        """Keep the rates at the recorded steps of ``[t0, t1)`` (and at ``T`` from the last step)."""
        steps = np.minimum(self.record_steps, self.steps - 1)
        hit = (steps >= t0) & (steps < t1)
        self.recorded[:, hit] = rates[:, 0:1] if rates.shape[1] == 1 else rates[:, steps[hit] - t0]
        if self.keep:
            self.pieces.append((t0, t1, rates))

    def at(self) -> np.ndarray:
        """(G, K): the rate at each recorded step ``s`` (that of step ``min(s, T − 1)``)."""
        return self.recorded

    def whole(self) -> np.ndarray:
        """(G, 1 or T): every step's rate, from the windows taken (``keep=True``)."""
        if self.constant:
            return self.pieces[0][2] if self.pieces else self.window(0, 1)
        out = np.empty((len(self.lr), self.steps))
        for t0, t1, rates in self.pieces:
            out[:, t0:t1] = rates
        return out
