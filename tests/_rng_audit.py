"""Find random generators reachable from a released object (a test helper).

A released estimator that holds the generator which drew its privacy noise lets anyone
step that generator back (PCG64 can be rewound) or replay it from its seed, and subtract
the noise from the released values. :func:`find_generators` walks everything a user can
reach from a fitted estimator: its parameters (``get_params(deep=False)``), its instance
attributes (fitted ones included), nested estimators, containers and object arrays, and
lists where a generator, bit generator, ``RandomState``, ``SeedSequence`` or a saved bit
generator state sits.
"""

import types

import numpy as np

RNG_TYPES = (np.random.Generator, np.random.BitGenerator, np.random.RandomState,
             np.random.SeedSequence)

# Objects whose insides are not the estimator's (code, classes, modules): not walked.
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, str, bytes, int, float, complex, bool, type(None))


def _is_saved_state(obj):
    # ``Generator.bit_generator.state`` as a dict: restoring it replays the noise.
    return isinstance(obj, dict) and "bit_generator" in obj and "state" in obj


def _children(obj):
    if isinstance(obj, dict):
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        return [("{...}", v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype != object:
            return []
        return [(f"[{i}]", v) for i, v in enumerate(obj.ravel())]
    out = []
    if hasattr(obj, "get_params") and callable(obj.get_params):
        try:
            params = obj.get_params(deep=False)
        except TypeError:  # an unbound get_params, or one with required arguments
            params = {}
        out += [(f".get_params()[{k!r}]", v) for k, v in params.items()]
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        out += [(f".{k}", v) for k, v in attrs.items()]
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(obj, name):
                out.append((f".{name}", getattr(obj, name)))
    return out


def find_generators(obj, name="est"):
    """Paths (e.g. ``"est.hypothesis_.random_state"``) of every random generator, bit
    generator, ``RandomState``, ``SeedSequence`` or saved generator state reachable from
    ``obj``; ``[]`` when there is none."""
    found, seen = [], set()
    stack = [(name, obj)]
    while stack:
        path, o = stack.pop()
        if isinstance(o, _OPAQUE) or id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, RNG_TYPES) or _is_saved_state(o):
            found.append(path)
            continue
        stack.extend((path + step, child) for step, child in _children(o))
    return sorted(found)
