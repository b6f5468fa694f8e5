"""``NamedTuple`` and ``TYPE_CHECKING`` for the sbatch wrapper's submit path, without ``typing``.

``advisor sbatch`` runs on every job submission, and the interpreter's own start is ~20 ms:
importing ``typing`` costs ~2.5 ms, and ``typing.NamedTuple`` type-checks every field
annotation when a class is created (with postponed annotations it compiles each one into a
ForwardRef), ~0.1 ms a class for the ~40 record classes on that path.  Here a NamedTuple is
the same ``collections.namedtuple`` that typing builds, minus those checks; mypy sees
``typing.NamedTuple`` itself, so the types are checked where they should be, statically.

Modules on the submit path import these instead of typing's (tests/unit/wrapper/test_submit_path.py
lists what that path may load); everywhere else typing's own are as good.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING's value at run time; mypy treats the name as True

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    import collections

    #: What typing.NamedTuple refuses to let a class body redefine.
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
         "_make", "_replace", "_asdict", "_source"}
    )  # fmt: skip
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__", "__qualname__"})

    class _NamedTupleMeta(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, object]):
            if not bases:  # the NamedTuple base class itself
                return super().__new__(mcs, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError(f"{name}: a NamedTuple can only derive from NamedTuple")
            fields = list(namespace.get("__annotations__", {}))
            defaults = [namespace[field] for field in fields if field in namespace]
            if fields[len(fields) - len(defaults) :] != [f for f in fields if f in namespace]:
                raise TypeError(f"{name}: a field without a default follows one with a default")
            cls = collections.namedtuple(
                name, fields, defaults=defaults, module=namespace["__module__"]
            )
            cls.__qualname__ = str(namespace.get("__qualname__", name))
            cls.__annotations__ = dict(namespace.get("__annotations__", {}))
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"{name}: cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in fields:
                    setattr(cls, key, value)
            return cls

    class NamedTuple(metaclass=_NamedTupleMeta):
        """Base class of records: ``class Point(NamedTuple): x: int; y: int = 0``."""
