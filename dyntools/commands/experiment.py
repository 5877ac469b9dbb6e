"""``dyntools simulate <name>`` / ``dyntools sweep <name>``: one generic command for every experiment spec.

From an :class:`dyntools.spec.Experiment` it makes the subparser — one ``--field-name`` option per
field of the parameter dataclass, ``--help`` with each field's type, range, default and preset values,
and the experiment's example — and runs it: preset ← options → checks (declared ranges, then the
experiment's cross-field ``check``) → ``--out`` checked → run → result saved atomically → table or
``--json``. Everything is checked before anything is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dyntools import spec, store, validation
from dyntools.commands import CommandOutput

_TYPES = {"int": int, "float": float}
DEST = "param:"          # namespace of the parameters in argparse's result (``simulate``'s own dest is "model")


def _show(value, kind: str = "") -> str:
    if isinstance(value, tuple):
        return (":" if kind == "grid" else ",").join(_show(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def help_text(f, p: spec.Param, presets: dict[str, dict]) -> str:
    """The option's help: its text, then (type and range; default; the presets that change it)."""
    kind = {"int": "integer", "float": "number", "ints": "integers", "floats": "numbers", "strs": "names",
            "file": "a readable file"}.get(p.kind, "")
    if p.choices and p.kind == "file":          # a file or a named built-in data set
        kind = "a readable file or " + " | ".join(p.choices)
    elif p.choices:                             # a str's metavar lists them
        kind = "names among " + " | ".join(p.choices) if p.kind == "strs" else ""
    elif p.range_text():
        joint = ", " if p.kind in ("ints", "floats", "strs") and p.max_len is not None else " "
        kind = f"{kind}{joint}{p.range_text()}".strip()
    bits = [kind] if kind else []
    if p.kind != "flag" and f.default is not None:
        bits.append(f"default {_show(f.default, p.kind)}")
    bits += [f"{name}: {_show(values[f.name], p.kind)}" for name, values in presets.items() if f.name in values]
    return p.help + (f" ({'; '.join(bits)})" if bits else "")


def add_parser(sub, exp: spec.Experiment, formatter) -> argparse.ArgumentParser:
    p = sub.add_parser(exp.name, help=exp.help, description=f"{exp.help}\n\nexample:\n  {exp.example}",
                       formatter_class=formatter)
    if exp.presets:
        names = list(exp.presets)
        p.add_argument("--preset", default=names[0], metavar="NAME",
                       help=f"parameter set: {' | '.join(names)} (default {names[0]}); every option below "
                            "overrides it")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f, prm in spec.params_of(exp.params):
        if prm.group and prm.group not in groups:
            groups[prm.group] = p.add_argument_group(prm.group)
        target = groups[prm.group] if prm.group else p
        kwargs = {"dest": DEST + f.name, "default": argparse.SUPPRESS, "help": help_text(f, prm, exp.presets)}
        if prm.kind == "flag":
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = _TYPES.get(prm.kind, str)
            kwargs["metavar"] = prm.metavar or ("{" + ",".join(prm.choices) + "}" if prm.choices else f.name.upper())
            if prm.kind == "file" and prm.choices and not prm.metavar:
                kwargs["metavar"] = "FILE|" + "|".join(prm.choices)
        target.add_argument(spec.flag_of(f, prm), **kwargs)
    p.add_argument("--seed", type=int, default=0, help="root seed (non-negative integer; default 0)")
    p.add_argument("--out", type=Path, default=Path(f"runs/{exp.name}"), metavar="DIR",
                   help=f"directory to write (default runs/{exp.name})")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    p.set_defaults(_module=sys.modules[__name__], _experiment=exp)
    return p


def params_from_args(exp: spec.Experiment, args):
    """The parameter dataclass of the options given on the command line (preset ← options), checked."""
    given = {}
    for f, prm in spec.params_of(exp.params):
        if hasattr(args, DEST + f.name):
            value = getattr(args, DEST + f.name)
            given[f.name] = value if prm.kind in ("int", "float", "flag") else \
                spec.coerce(f.name, prm, value, spec.flag_of(f, prm))
    return exp.make(getattr(args, "preset", None), **given)


def run(args, progress: bool) -> CommandOutput:
    from dyntools import sweep

    exp: spec.Experiment = args._experiment
    seed = validation.seed(args.seed)
    params = params_from_args(exp, args)                # everything checked before any writing
    out = store.check_writable(args.out) if exp.verb == "simulate" else sweep.check_out(args.out)
    ctx = spec.RunContext(seed=seed, progress=progress, out=out, preset=getattr(args, "preset", None))
    result = exp.run(params, ctx)
    if exp.verb == "simulate":
        store.save(result, args.out)
    summary = {"out": str(args.out), **exp.summary(params, result)}
    table = exp.table(params, result) + f"\n\nwrote {args.out}"
    if hasattr(params, "dtype"):                        # the precision, stated where a float32 run could be mistaken
        summary["dtype"] = params.dtype
        if params.dtype != "float64":
            table = f"precision: {params.dtype} (trained in {params.dtype}; the default is float64)\n\n" + table
    return CommandOutput(summary, table, written=[str(args.out)])
