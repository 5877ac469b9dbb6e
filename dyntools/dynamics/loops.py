"""The generic training loop of :mod:`dyntools.dynamics.train`, compiled once per built-in model and
cached on disk.

numba cannot cache a function that receives a compiled function as an argument (the argument's type
names the object, which differs in every process), so the trainer's loop over paths, with the model's
kernel passed in, would be recompiled by every process (seconds per model: every sweep worker, every
``dyntools`` command). Here each built-in model's kernel is named in the body of its own loop, which
inlines :func:`dyntools.dynamics.path_loop.advance_path`; these loops cache like any other kernel. A model
without an entry (a user's own) gets the uncached loop; adding an entry is four lines.
"""

from __future__ import annotations

from numba import njit

from dyntools.dynamics.path_loop import advance_path
from dyntools.models import diag_net, least_squares, mlp, quadratic_toy, surfaces, voronoi


@njit(cache=True, nogil=True, error_model="numpy")
def diag_net_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(diag_net.loss_grad, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def toy_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(quadratic_toy.loss_grad, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def least_squares_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(least_squares.loss_grad, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def mlp_regression_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(mlp.loss_grad_regression, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def mlp_cross_entropy_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(mlp.loss_grad_cross_entropy, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def voronoi_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(voronoi.loss_grad, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def surface_paths(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path(surfaces.loss_grad, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                     record_final)


LOOPS = {diag_net.loss_grad: diag_net_paths, mlp.loss_grad_regression: mlp_regression_paths,
         mlp.loss_grad_cross_entropy: mlp_cross_entropy_paths, quadratic_toy.loss_grad: toy_paths,
         least_squares.loss_grad: least_squares_paths, voronoi.loss_grad: voronoi_paths,
         surfaces.loss_grad: surface_paths}


def for_kernel(kernel):
    """The cached loop of ``kernel``, or ``None`` (the trainer then passes the kernel to its generic loop)."""
    return LOOPS.get(kernel)
