"""The run engine: what every model's training or simulation shares.

result.py   the one result type and its status vocabulary
record.py   which steps a run records (grids, a compiled "is this step recorded" test and its twin)
guard.py    the one divergence rule
samplers.py which samples a step uses (full batch, with / without replacement, replay)
streams.py  random streams: the table of named keys, SeedSequence → one generator state per path
rng.py, ziggurat.py   the per-path generator (xoshiro256**) and its uniform / normal draws
progress.py progress bars on a terminal
drive.py    validate → allocate → chunked loop with progress → classify → result

The compiled building blocks of the models' kernels (fma panels, vector transposes, flat views) live in
:mod:`dyntools.lowlevel`, not here.
"""
