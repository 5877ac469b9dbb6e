"""Low-level compiled building blocks of the models' kernels, fenced off from the run engine.

fma_block.py         register-blocked panels of a matrix product: LLVM vector IR (``<w x double>``
                     loads and stores, ``llvm.fma.v*`` calls, phi nodes holding the accumulators
                     across the contraction) emitted through ``numba.extending.intrinsic``
vector_transpose.py  transposes of ``w × w`` blocks in vector registers (LLVM ``shufflevector``)
flat_views.py        matrix views of flat scratch arrays built directly from numba's array struct, and
                     "borrowed" arrays whose meminfo pointer is set to null (no reference counting)

What they rely on in numba / llvmlite, none of it a public, stable API: the ``@intrinsic`` code
generation interface (``context.make_array``, ``populate_array``, ``impl_ret_borrowed``, ``cgutils``),
the layout of numba's array struct (data, shape, strides, meminfo, parent), the fact that numba's
runtime accepts a null meminfo (no incref/decref), llvmlite's IR builder and LLVM's vector types and
``llvm.fma`` intrinsics, and the host CPU's feature list (``llvmlite.binding.get_host_cpu_features``)
to choose the vector width (512 bits with AVX-512, else 256).

Only models/ (``mlp_gemm.py`` and ``mlp.py``) import them; nothing above the models does.
"""
