"""A cheaper compiled error for numba's slice assignment of mismatched shapes (a cold-start saving).

numba ≥ 0.60 compiles, into every function that assigns an array to a slice (``a[i, :] = b``), an error path
that formats both shapes into the message: ``str`` of integers, string joins and ``repr`` — numba's whole
unicode machinery, several seconds of compiling in each process with empty caches (measured with numba's
compile events: ``dyntools bench cold-start``, docs/performance.md), for a message that only appears on a
bug. :func:`install` points that path at a constant message plus the two shapes as exception arguments:
``ValueError("cannot assign slice from input of different size", src_shape, index_shape)``. Only the error
path changes: the machine code of a correct assignment, hence every result, is the same.

The hook replaces ``numba.np.arrayobj.raise_with_shape_context``, an internal name; when a numba lacks it
(older or newer), :func:`install` does nothing and numba's own message stays. ``DYNTOOLS_NUMBA_ERRORS=numba``
keeps numba's. Imported by every dyntools package that compiles (their ``__init__``), so it is in place before
the first compile of a dyntools function.
"""

from __future__ import annotations

import os

#: what :func:`install` did: ``"constant message"``, ``"numba's (DYNTOOLS_NUMBA_ERRORS=numba)"`` or
#: ``"numba's (no hook in this numba)"``
STATE = "not installed"


def raise_shape_mismatch(src_shapes, index_shape):
    """Stand-in for numba's ``raise_with_shape_context`` (its compiled form is the overload below)."""
    raise ValueError("cannot assign slice from input of different size", src_shapes, index_shape)


def install() -> str:
    """Point numba's slice-assignment error at :func:`raise_shape_mismatch` (once per process); returns
    :data:`STATE`."""
    global STATE
    if STATE != "not installed":
        return STATE
    if os.environ.get("DYNTOOLS_NUMBA_ERRORS", "") == "numba":
        STATE = "numba's (DYNTOOLS_NUMBA_ERRORS=numba)"
        return STATE
    from numba.core import types
    from numba.extending import overload
    from numba.np import arrayobj

    if not callable(getattr(arrayobj, "raise_with_shape_context", None)):
        STATE = "numba's (no hook in this numba)"
        return STATE

    @overload(raise_shape_mismatch)
    def _compiled(src_shapes, index_shape):
        if isinstance(src_shapes, types.UniTuple) and isinstance(index_shape, types.UniTuple):
            def impl(src_shapes, index_shape):
                raise ValueError("cannot assign slice from input of different size", src_shapes, index_shape)
            return impl
        return None

    arrayobj.raise_with_shape_context = raise_shape_mismatch
    STATE = "constant message"
    return STATE
