"""Caches keyed on a function's arguments however they are passed (the model, its compiled forms, its
decisions are built once per variant).

The building is serialized: sympy's rebuilding switches (``sympy.evaluate(False)``, the sign query that
:func:`mlsysim_sym.compile.numeric_form` answers for itself) are process-wide, so two threads building at once
could see each other's; one re-entrant lock makes a thread that needs a model or its code built wait for the one
building it (every thread then reads the same objects, so the results do not depend on the threads).
"""
from __future__ import annotations

import inspect
import threading
from functools import lru_cache, update_wrapper
from typing import Callable, Optional


#: Held while a cached model, compiled form or decision is looked up or built (module docstring).
BUILDING = threading.RLock()


def cached_per_arguments(normalize: Optional[Callable[..., tuple]] = None):
    """Cache a function once per set of arguments, however they are passed (``lru_cache`` alone keys on
    the call: ``f(v)``, ``f(variant=v)`` and ``f()`` would be three entries).

    The arguments are bound with their defaults applied, then ``normalize(*arguments)`` (if given)
    returns the tuple of arguments to key on and call with. A positional call skips the binding.
    """
    def decorate(fn):
        sig = inspect.signature(fn)
        if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values()):
            raise TypeError(f"{fn.__name__}: only plain parameters (no *args, **kwargs or keyword-only)")
        defaults = tuple(p.default for p in sig.parameters.values())
        required = sum(p.default is p.empty for p in sig.parameters.values())
        cached = lru_cache(maxsize=None)(fn)

        def wrapper(*args, **kwargs):
            with BUILDING:
                return _call(args, kwargs)

        def _call(args, kwargs):
            if kwargs or not required <= len(args) <= len(defaults):
                try:
                    bound = sig.bind(*args, **kwargs)
                except TypeError:
                    return fn(*args, **kwargs)      # raises Python's own error for the call
                bound.apply_defaults()
                args = bound.args
            elif len(args) < len(defaults):
                args += defaults[len(args):]
            return cached(*normalize(*args)) if normalize else cached(*args)

        return update_wrapper(wrapper, fn)

    return decorate
