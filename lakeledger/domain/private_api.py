"""How a compatibility module names what it relies on of a pinned library that the library does not promise: its
private functions, classes and attributes, and the private methods our subclasses override. Each compatibility module
(lakeledger/domain/pyiceberg_compat.py, lakeledger/eventstore/compat.py, lakeledger/compat.py) lists its entries in
``RELIED_ON``; tests/unit/test_compat.py checks every entry against the installed library, so that an upgrade which
moves, removes or changes one fails there, naming the library, its version and the entry."""

from typing import NamedTuple


class PrivateApi(NamedTuple):
    """Something of ``library`` (its distribution's name) found at ``path``: ``module:qualified.name``."""

    library: str
    path: str
    # the parameters it takes, as ``inspect.signature`` renders them without annotations ("(self, curs, **kwargs)");
    # None for what is not called (a class attribute, an exception class)
    parameters: str | None
    why: str
    # ``module:Class`` of ours that overrides this method: it must take the same parameters
    overridden_by: str | None = None
    # names the function's own code refers to: the hooks it calls that our overrides rely on being called
    calls: tuple[str, ...] = ()


class Subclass(NamedTuple):
    """A class of ours (``ours``, ``module:Class``) derived from a class of ``library`` (``base``): the attributes it
    adds, set on its instances or defined in its body, must not be names the library's classes use already — an
    accidental override would change the library's behaviour without saying so."""

    library: str
    base: str
    ours: str
    adds: tuple[str, ...]
    why: str
