"""Light stand-ins for the sbatch wrapper's submit path: NamedTuple, TYPE_CHECKING, json_loads.

``advisor sbatch`` runs on every job submission, and the interpreter's own start is ~10-20 ms:
importing ``typing`` costs ~2.5 ms, and ``typing.NamedTuple`` type-checks every field
annotation when a class is created; ``collections.namedtuple`` itself compiles a ``__new__``
from source for every class (~40 µs, for the ~45 record classes on that path).  Here a
NamedTuple is built as ``collections.namedtuple`` builds it (the same methods, attributes and
errors; tests/unit/wrapper/test_submit_path.py compares the two), except that ``__new__`` is a
precompiled template of the right arity with its parameters renamed; mypy sees
``typing.NamedTuple`` itself, so the types are checked where they should be, statically.
``json_loads`` is ``json.loads`` for the text the cache stores, through the same C scanner,
without importing ``json`` (and ``re``, which ``json.decoder`` needs) on a valid document.

Modules on the submit path import these instead of typing's (tests/unit/wrapper/test_submit_path.py
counts what that path may load); everywhere else typing's own are as good.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING's value at run time; mypy treats the name as True

if TYPE_CHECKING:
    from json import loads as json_loads
    from typing import NamedTuple as NamedTuple

    __all__ = ["TYPE_CHECKING", "NamedTuple", "json_loads"]
else:
    import sys

    try:
        from _collections import _tuplegetter
    except ImportError:  # not CPython, or a CPython without it: what namedtuple falls back to
        from operator import itemgetter as _itemgetter

        def _tuplegetter(index, doc):
            return property(_itemgetter(index), doc=doc)

    def json_loads(text):
        """``json.loads(text)`` for str; json itself loads only to word an error.

        Anything the C scanner raises goes to json.loads, which raises what json would: the
        scanner words an error with ``json.decoder.JSONDecodeError``, which 3.11's ``_json``
        looks up in sys.modules only, so before json.decoder is imported it returns NULL
        without an exception (SystemError) instead.
        """
        if isinstance(text, str) and _scan is not None:
            try:
                found, end = _scan(text, 0)
            except Exception:  # noqa: S110 (json.loads below raises the real error)
                pass
            else:
                if end == len(text):
                    return found
        import json

        return json.loads(text)

    class _Context:
        """The attributes the C scanner reads (as json.decoder.JSONDecoder has them)."""

        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        memo = None

        @staticmethod
        def parse_constant(name):
            return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]

    try:
        from _json import make_scanner

        _scan = make_scanner(_Context)
    except ImportError:  # an interpreter without CPython's accelerator: json.loads does it all
        _scan = None

    _tuple_new = tuple.__new__
    # __new__ of 0 to 24 fields; the parameters get the field names (code.replace).
    _NEW = (
        lambda _cls: _tuple_new(_cls, ()),
        lambda _cls, a: _tuple_new(_cls, (a,)),
        lambda _cls, a, b: _tuple_new(_cls, (a, b)),
        lambda _cls, a, b, c: _tuple_new(_cls, (a, b, c)),
        lambda _cls, a, b, c, d: _tuple_new(_cls, (a, b, c, d)),
        lambda _cls, a, b, c, d, e: _tuple_new(_cls, (a, b, c, d, e)),
        lambda _cls, a, b, c, d, e, f: _tuple_new(_cls, (a, b, c, d, e, f)),
        lambda _cls, a, b, c, d, e, f, g: _tuple_new(_cls, (a, b, c, d, e, f, g)),
        lambda _cls, a, b, c, d, e, f, g, h: _tuple_new(_cls, (a, b, c, d, e, f, g, h)),
        lambda _cls, a, b, c, d, e, f, g, h, i: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i)),
        lambda _cls, a, b, c, d, e, f, g, h, i, j: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j)),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w: (
            _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w))
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x: (
            _tuple_new(
                _cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x)
            )
        ),
    )

    def _arg_list(fields):
        return ", ".join(fields) + ("," if len(fields) == 1 else "")

    def _new(typename, fields, defaults):
        """collections.namedtuple's ``__new__``, from a template when there is one."""
        if len(fields) < len(_NEW):
            try:
                code = _NEW[len(fields)].__code__.replace(
                    co_varnames=("_cls", *fields), co_name="__new__",
                    co_qualname=f"{typename}.__new__",
                )  # fmt: skip
            except (TypeError, ValueError):  # an interpreter whose code objects refuse it
                code = None
        else:
            code = None
        if code is None:
            import collections

            return collections.namedtuple(typename, fields, defaults=defaults).__new__
        new = type(_new)(code, {"_tuple_new": _tuple_new}, "__new__", tuple(defaults) or None)
        new.__doc__ = f"Create new instance of {typename}({_arg_list(fields)})"
        return new

    #: What namedtuple's _replace raises for an unknown field: ValueError until 3.12, TypeError since.
    _REPLACE_ERROR = TypeError if sys.version_info >= (3, 13) else ValueError

    def _record_class(typename, fields, defaults, module, body=None):
        """``collections.namedtuple(typename, fields, defaults=defaults, module=module)``.

        ``body``: a class body's own attributes, set as the class is created (one ``type()``
        call: setting them afterwards costs a type-cache invalidation each).
        """
        fields = tuple(map(sys.intern, fields))
        for name in fields:
            if name.startswith("_"):
                raise ValueError(f"Field names cannot start with an underscore: {name!r}")
        count = len(fields)
        repr_fmt = "(" + ", ".join(f"{name}=%r" for name in fields) + ")"

        def _make(cls, iterable):
            result = _tuple_new(cls, iterable)
            if len(result) != count:
                raise TypeError(f"Expected {count} arguments, got {len(result)}")
            return result

        _make.__doc__ = f"Make a new {typename} object from a sequence or iterable"

        def _replace(self, /, **kwds):
            result = self._make(map(kwds.pop, fields, self))
            if kwds:
                raise _REPLACE_ERROR(f"Got unexpected field names: {list(kwds)!r}")
            return result

        _replace.__doc__ = (
            f"Return a new {typename} object replacing specified fields with new values"
        )

        def __repr__(self):
            """Return a nicely formatted representation string."""
            return self.__class__.__name__ + repr_fmt % self

        def _asdict(self):
            """Return a new dict which maps field names to their values."""
            return dict(zip(self._fields, self, strict=True))

        def __getnewargs__(self):
            """Return self as a plain tuple.  Used by copy and pickle."""
            return tuple(self)

        for method in (_make, _replace, __repr__, _asdict, __getnewargs__):
            method.__qualname__ = f"{typename}.{method.__name__}"
        namespace = {
            "__doc__": f"{typename}({_arg_list(fields)})",
            "__slots__": (),
            "_fields": fields,
            "_field_defaults": dict(zip(fields[count - len(defaults) :], defaults, strict=True)),
            "__new__": _new(typename, fields, defaults),
            "_make": classmethod(_make),
            "_replace": _replace,
            "__repr__": __repr__,
            "_asdict": _asdict,
            "__getnewargs__": __getnewargs__,
            "__match_args__": fields,
        }
        if sys.version_info >= (3, 13):  # copy.replace(); namedtuple has it from 3.13 on
            namespace["__replace__"] = _replace
        for index, name in enumerate(fields):
            namespace[name] = _tuplegetter(index, sys.intern(f"Alias for field number {index}"))
        namespace["__module__"] = module
        if body:
            namespace.update(body)
        return type(typename, (tuple,), namespace)

    #: What typing.NamedTuple refuses to let a class body redefine.
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
         "_make", "_replace", "_asdict", "_source"}
    )  # fmt: skip
    _SPECIAL = frozenset(
        {"__module__", "__name__", "__annotations__", "__qualname__", "__annotate__",
         "__annotate_func__", "__annotations_cache__"}
    )  # fmt: skip

    def _annotations(namespace):
        """A class body's annotations, by name, in order.

        With ``from __future__ import annotations`` (every module of advisor that uses this:
        tests/unit/core/test_lite.py checks it) they are the body's ``__annotations__``.  Without
        it, Python 3.14 (PEP 649/749) leaves an ``__annotate__`` function instead; it is called
        as typing.NamedTuple calls it (forward references allowed), so a record never silently
        loses its fields.
        """
        if "__annotations__" in namespace:
            return namespace["__annotations__"]
        annotate = namespace.get("__annotate__") or namespace.get("__annotate_func__")
        if annotate is None:
            return {}
        try:
            import annotationlib
        except ImportError:  # before 3.14 only a hand-made body has one: call it plainly
            return annotate(1)
        return annotationlib.call_annotate_function(annotate, annotationlib.Format.FORWARDREF)

    class _NamedTupleMeta(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, object]):
            if not bases:  # the NamedTuple base class itself
                return super().__new__(mcs, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError(f"{name}: a NamedTuple can only derive from NamedTuple")
            annotations = _annotations(namespace)
            fields = list(annotations)
            defaults = [namespace[field] for field in fields if field in namespace]
            if fields[len(fields) - len(defaults) :] != [f for f in fields if f in namespace]:
                raise TypeError(f"{name}: a field without a default follows one with a default")
            body = {
                "__qualname__": str(namespace.get("__qualname__", name)),
                "__annotations__": dict(annotations),
            }
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"{name}: cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in fields:
                    body[key] = value
            return _record_class(name, fields, defaults, namespace["__module__"], body)

    class NamedTuple(metaclass=_NamedTupleMeta):
        """Base class of records: ``class Point(NamedTuple): x: int; y: int = 0``."""
