"""IK constants files (`python -m core train ik`): JSON {"constants": {field: value}, "record": {...}}; every failure to
read one is a ValueError naming the file."""
from __future__ import annotations

import json
import math
from pathlib import Path

from .atomic import write_text
from .json_value import JSONTooDeep, json_value

IK_CONSTANT_LIMIT = 1000.0
"""No arm IK constant (angles in degrees, lengths in metres, gains and weights between them) is this large; a file
with one this large or not finite was not made by `train ik`."""


def read_ik_constants(path, defaults) -> dict:
    """{field: value} of the constants in the file, each checked against the field of `defaults` (a dataclass) it
    replaces: its kind, its length, finite and at most IK_CONSTANT_LIMIT."""
    path = Path(path)
    try:
        data = json_value(path.read_text(encoding="utf-8-sig"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: is JSON {type(data).__name__}, expected an object with \"constants\"")
        constants = data["constants"]
    except FileNotFoundError:
        raise ValueError(f"{path}: no such IK constants file (make one with `python -m core train ik`)") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not an IK constants file") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read: {error.strerror or error}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, JSONTooDeep) as error:
        raise ValueError(f"{path}: not an IK constants file, which is JSON with a \"constants\" object "
                         f"({type(error).__name__}: {error})") from None
    if not isinstance(constants, dict):
        raise ValueError(f"{path}: \"constants\" is JSON {type(constants).__name__}, expected an object")
    values = {}
    for name, value in constants.items():
        if name not in defaults.__dataclass_fields__:
            raise ValueError(f"{path}: unknown IK constant {name!r}")
        default = getattr(defaults, name)
        if isinstance(default, tuple):
            ok = isinstance(value, list) and len(value) == len(default) and \
                all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            value = tuple(float(v) for v in value) if ok else value
        else:
            ok = isinstance(value, type(default)) or (isinstance(default, float) and isinstance(value, int)
                                                      and not isinstance(value, bool))
            value = type(default)(value) if ok else value
        if not ok:
            raise ValueError(f"{path}: IK constant {name!r} is {value!r}, expected one like {default!r}")
        numbers = value if isinstance(value, tuple) else (value,)
        if isinstance(default, float) or isinstance(default, tuple):
            if not all(math.isfinite(v) and abs(v) <= IK_CONSTANT_LIMIT for v in numbers):
                raise ValueError(f"{path}: IK constant {name!r} is {value!r}: each number must be finite and at "
                                 f"most {IK_CONSTANT_LIMIT:g} in size (degrees, metres and their ratios)")
        values[name] = value
    return values


def write_ik_constants(path, constants: dict, record: dict) -> None:
    """The constants and a record of how they were found, as `read_ik_constants` reads them (atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"constants": constants, "record": record}, indent=2) + "\n")
