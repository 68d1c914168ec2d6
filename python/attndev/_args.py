"""Argument checks of the attndev package: each argument checked by type and range in Python,
before the compiled module sees it, so that a mistake gets a short attndev.Error naming the
keyword (not a TypeError listing the module's whole signature, and never a silent conversion:
block="64" is not (6, 4), 16.5 is not 16, causal="no" is not True). Pure Python; the error type
comes from the compiled module, loaded on first use."""

import math
import numbers

INT_MAX = 2**31 - 1  # the emulator's extents, tiles and thread counts are C ints
SEED_MAX = 2**64 - 1


def error(message):
    from . import _core
    return _core.Error(message)


def show(value, limit=60):
    """repr of a value for a message, cut to `limit` characters (a 100 KB string stays short)."""
    text = repr(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} characters)"
    return text


def is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def integer(name, value, lo=0, hi=INT_MAX):
    if not is_int(value):
        raise error(f"{name}: expected an integer, got {type(value).__name__} {show(value)}")
    value = int(value)
    if not lo <= value <= hi:
        raise error(f"{name}: {value} is out of range [{lo}, {hi}]")
    return value


def boolean(name, value):
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy's bool too
        return bool(value)
    raise error(f"{name}: expected True or False, got {type(value).__name__} {show(value)}")


def text(name, value):
    if not isinstance(value, str):
        raise error(f"{name}: expected a string, got {type(value).__name__} {show(value)}")
    return value


def real(name, value):
    """A real number (int or float, not bool); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise error(f"{name}: expected a number, got {type(value).__name__} {show(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise error(f"{name}: {value} is not finite")
    return value


def block(value, name="block"):
    """(Br, Bc): a tuple or list of two positive integers."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise error(f"{name}: expected (Br, Bc), a tuple of two integers, got "
                    f"{type(value).__name__} {show(value)}")
    return (integer(f"{name}[0] (Br)", value[0], lo=1), integer(f"{name}[1] (Bc)", value[1], lo=1))


def integers(name, values, lo=1):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise error(f"{name}: expected a sequence of integers, got {type(values).__name__} "
                    f"{show(values)}")
    return [integer(f"{name}[{i}]", v, lo=lo) for i, v in enumerate(values)]


def strings(name, values):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise error(f"{name}: expected a sequence of strings, got {type(values).__name__} "
                    f"{show(values)}")
    return [text(f"{name}[{i}]", v) for i, v in enumerate(values)]


def known_keys(what, given, valid):
    """Refuses a key of `given` (a dict) that is not in `valid`, naming the nearest valid one, as
    the CLI refuses an unknown config key."""
    if not isinstance(given, dict):
        raise error(f"{what}: expected a dict, got {type(given).__name__} {show(given)}")
    from . import _core
    for key in given:
        if key not in valid:
            hint = _core.did_you_mean(str(key), list(valid)) if isinstance(key, str) else ""
            raise error(f"{what}: unknown key {show(key)}{hint}; valid: {', '.join(valid)}")
    return given
