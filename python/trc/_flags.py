"""Keyword arguments to trc-run arguments, by trc-run's own flag table
(runtime/train/RunFlags.h, bound as trc._trc.flags()): `batch_size=8` is
`--batch-size=8`. A keyword trc-run has no training flag for is a TypeError
naming it; trc-run's parser then checks the values as it checks its own
command line (same errors, naming the flag)."""
import json
import os

# Keys Trainer and trc.compile set themselves (the model, its data, where
# results go): not keyword arguments.
RESERVED = {"--save-artifact": "trc.compile", "--help": None}


def to_args(options, table):
    """`options` (a dict of keyword arguments) as trc-run arguments."""
    flags = {row["name"]: row for row in table}
    args = []
    for key, value in options.items():
        name = "--" + key.replace("_", "-")
        flag = flags.get(name)
        if flag is None or flag["mode"] not in ("training", "shared") or name in RESERVED:
            raise TypeError(f"unexpected keyword argument {key!r}: trc-run has no training flag "
                            f"{name} (see trc-run --help)")
        if value is None or value is False:
            continue
        if flag["arity"] == "switch":
            if value is not True:
                raise TypeError(f"{key}: a switch ({name}) takes True or False, got {value!r}")
            args.append(name)
        elif flag["arity"] == "switch_or_auto":
            if value is True:
                args.append(name)
            else:
                args.append(f"{name}={value}")
        else:
            values = value if flag["repeatable"] and isinstance(value, (list, tuple)) else [value]
            args.extend(f"{name}={_text(key, v)}" for v in values)
    return args


def _text(key, value):
    if isinstance(value, bool):
        raise TypeError(f"{key}: expects a value, got {value!r}")
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)
