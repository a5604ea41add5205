"""What Lakeledger relies on of its pinned libraries beyond their public API, checked against the installed versions:
every entry of the compatibility modules' ``RELIED_ON`` and ``SUBCLASSES`` (lakeledger/domain/private_api.py) still
exists, takes the same parameters, is overridden with the same parameters, still calls the hooks we override, and
leaves our subclasses' own names alone. A failure names the library, its installed version and what changed.
And nothing outside those modules reaches into a library's private names."""

import ast
import importlib
import importlib.metadata
import inspect
import platform
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lakeledger.domain.private_api import PrivateApi, Subclass

PACKAGE = Path(__file__).resolve().parents[2] / "lakeledger"
COMPAT_MODULES = ("lakeledger.domain.pyiceberg_compat", "lakeledger.eventstore.compat", "lakeledger.compat")
# names of libraries that look private but are their documented API: os._exit; librdkafka's internal error codes,
# which confluent_kafka documents with their leading underscore
DOCUMENTED = {("os", "_exit"), ("confluent_kafka", "_PARTITION_EOF")}
# names Python itself gives every subclass (abc.ABCMeta's registry)
CLASS_MACHINERY = {"_abc_impl"}


def installed(library: str) -> str:
    if library == "python":
        return f"CPython {platform.python_version()}"
    try:
        return f"{library} {importlib.metadata.version(library)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{library} (not installed)"


def resolve(path: str) -> Any:
    """``module:qualified.name``; AttributeError or ImportError when it is gone."""
    module_name, _, qualname = path.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def parameters(function: Any, *, anonymous_varargs: bool = False) -> str:
    """The parameters as ``inspect.signature`` renders them, without annotations; ``anonymous_varargs``: ``*args``
    and ``**kwargs`` whatever their names (an override may name them otherwise, callers cannot tell)."""
    signature = inspect.signature(function)
    kept = []
    for p in signature.parameters.values():
        p = p.replace(annotation=inspect.Parameter.empty)
        if anonymous_varargs and p.kind is inspect.Parameter.VAR_POSITIONAL:
            p = p.replace(name="args")
        if anonymous_varargs and p.kind is inspect.Parameter.VAR_KEYWORD:
            p = p.replace(name="kwargs")
        kept.append(p)
    return str(signature.replace(parameters=kept, return_annotation=inspect.Signature.empty))


def problems_of(entry: PrivateApi) -> list[str]:
    where = f"{installed(entry.library)}: {entry.path} (relied on: {entry.why})"
    try:
        found = resolve(entry.path)
    except (ImportError, AttributeError) as e:
        return [f"{where} is gone ({type(e).__name__}: {e})"]
    problems = []
    if entry.parameters is not None:
        actual = parameters(found)
        if actual != entry.parameters:
            problems.append(f"{where} now takes {actual}, not {entry.parameters}")
    if entry.overridden_by is not None:
        name = entry.path.rpartition(":")[2].split(".")[-1]
        ours = resolve(entry.overridden_by)
        if name not in vars(ours):
            problems.append(f"{entry.overridden_by} no longer overrides {name}: the entry for {where} is stale")
        elif parameters(vars(ours)[name], anonymous_varargs=True) != parameters(found, anonymous_varargs=True):
            problems.append(f"{where} takes {parameters(found)}, but {entry.overridden_by}.{name} takes "
                            f"{parameters(vars(ours)[name])}")
    if entry.calls:
        missing = [name for name in entry.calls if name not in inspect.unwrap(found).__code__.co_names]
        if missing:
            problems.append(f"{where} no longer calls {', '.join(missing)}")
    return problems


def problems_of_subclass(entry: Subclass, declared_overrides: set[str]) -> list[str]:
    where = f"{installed(entry.library)}: {entry.base}"
    try:
        base = resolve(entry.base)
    except (ImportError, AttributeError) as e:
        return [f"{where} is gone ({type(e).__name__}: {e}), and {entry.ours} derives from it"]
    ours = resolve(entry.ours)
    if not issubclass(ours, base):
        return [f"{entry.ours} no longer derives from {entry.base}: the entry is stale"]
    problems = []
    library_classes = [cls for cls in base.__mro__ if cls is not object]
    for name in entry.adds:
        for cls in library_classes:
            if name in vars(cls) or re.search(rf"\bself\.{re.escape(name)}\b", _source(cls)):
                problems.append(f"{where}: {cls.__qualname__} has {name} now, which {entry.ours} adds "
                                f"({entry.why})")
    # a private name of the library's that our class defines, and that no RELIED_ON entry names, is an override
    # nobody declared
    for name in vars(ours):
        if name.startswith("_") and not name.startswith("__") and name not in {*entry.adds, *CLASS_MACHINERY} \
                and name not in declared_overrides and any(hasattr(cls, name) for cls in library_classes):
            problems.append(f"{entry.ours}.{name} overrides {where}'s private {name} without an entry in RELIED_ON")
    return problems


def _source(cls: type) -> str:
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):  # compiled: its instance attributes are declared in its body
        return ""


def _compat_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        library = (e.name or "?").split(".")[0]
        pytest.fail(f"{installed(library)}: {name} cannot import what it relies on: {e}")


def _loaded() -> Iterator[ModuleType]:
    for name in COMPAT_MODULES:
        try:
            yield importlib.import_module(name)
        except ImportError:
            continue  # test_compat_module_imports names the library and what it lost


ENTRIES = [entry for module in _loaded() for entry in module.RELIED_ON]
SUBCLASSES = [entry for module in _loaded() for entry in getattr(module, "SUBCLASSES", ())]


@pytest.mark.parametrize("name", COMPAT_MODULES)
def test_compat_module_imports(name: str) -> None:
    assert _compat_module(name).RELIED_ON


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.path for entry in ENTRIES])
def test_relied_on_is_still_there(entry: PrivateApi) -> None:
    assert problems_of(entry) == []


@pytest.mark.parametrize("entry", SUBCLASSES, ids=[entry.ours for entry in SUBCLASSES])
def test_subclass_names_are_ours(entry: Subclass) -> None:
    declared = {e.path.rpartition(":")[2].split(".")[-1] for e in ENTRIES if e.overridden_by == entry.ours}
    assert problems_of_subclass(entry, declared) == []


def test_every_override_of_a_library_class_is_declared() -> None:
    """The classes whose private methods we override are all listed: each override entry's class has a SUBCLASSES
    entry, so that its added names are checked too."""
    subclassed = {entry.ours for entry in SUBCLASSES}
    assert {entry.overridden_by for entry in ENTRIES if entry.overridden_by} <= subclassed


def test_a_change_is_reported_with_library_version_and_name() -> None:
    """The checks above fail when a library changes: shown on entries that do not match the installed pyiceberg."""
    gone = PrivateApi("pyiceberg", "pyiceberg.catalog:MetastoreCatalog._no_longer_there", "()", "a test")
    [problem] = problems_of(gone)
    assert problem.startswith(f"pyiceberg {importlib.metadata.version('pyiceberg')}: ")
    assert "MetastoreCatalog._no_longer_there" in problem and "is gone" in problem

    changed = PrivateApi("pyiceberg", "pyiceberg.catalog:MetastoreCatalog._parse_metadata_version", "(location)",
                         "a test")
    [problem] = problems_of(changed)
    assert "now takes (metadata_location), not (location)" in problem

    not_called = PrivateApi("eventsourcing", "eventsourcing.postgres:PostgresApplicationRecorder.insert_events",
                            None, "a test", calls=("_a_hook_it_never_had",))
    [problem] = problems_of(not_called)
    assert problem.endswith("no longer calls _a_hook_it_never_had")

    clash = Subclass("eventsourcing", "eventsourcing.postgres:PostgresApplicationRecorder",
                     "lakeledger.eventstore.recorder:EventLogRecorder", ("channel_name",), "a test")
    assert any("has channel_name now" in p for p in problems_of_subclass(clash, set()))
    undeclared = Subclass("eventsourcing", "eventsourcing.postgres:PostgresApplicationRecorder",
                          "lakeledger.eventstore.recorder:EventLogRecorder", (), "a test")
    assert any("_insert_stored_events without an entry" in p for p in problems_of_subclass(undeclared, set()))


def _private_uses(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Private names of other packages imported or reached through an imported name."""
    imported: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            for alias in node.names:
                imported[alias.asname or alias.name] = top
                if top != "lakeledger" and (alias.name.startswith("_")
                                            or any(p.startswith("_") for p in node.module.split("."))):
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imported[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
                if any(p.startswith("_") and not p.startswith("__") for p in alias.name.split(".")):
                    yield node.lineno, f"import {alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root: ast.expr = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and imported.get(root.id, "lakeledger") != "lakeledger" \
                    and (imported[root.id], node.attr) not in DOCUMENTED:
                yield node.lineno, f"{ast.unparse(node)}"


def test_private_names_of_libraries_are_used_in_compat_modules_only() -> None:
    compat_files = {PACKAGE.parent / (name.replace(".", "/") + ".py") for name in COMPAT_MODULES}
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {use}"
             for path in sorted(PACKAGE.rglob("*.py")) if path not in compat_files
             for line, use in _private_uses(ast.parse(path.read_text()))]
    assert found == []


def test_what_pyiceberg_compat_narrows_holds() -> None:
    """pyiceberg declares any table metadata as the result of these two; the compatibility module narrows it on what
    they do (lakeledger/domain/pyiceberg_compat.py), checked here."""
    from pyiceberg.table.metadata import TableMetadataV1

    from lakeledger.domain import metadata_v3
    from lakeledger.domain.pyiceberg_compat import empty_table_metadata, with_metadata_log_entry

    version = installed("pyiceberg")
    empty = empty_table_metadata()
    assert type(empty) is TableMetadataV1, f"{version}: MetastoreCatalog._empty_table_metadata() is a {type(empty)}"
    v3 = metadata_v3.upgraded(empty)
    logged = with_metadata_log_entry(v3, "s3://b/t/metadata/00000-x.metadata.json", 1)
    assert type(logged) is metadata_v3.TableMetadataV3, \
        f"{version}: _update_table_metadata_log no longer keeps the metadata's class"
    assert [e.metadata_file for e in logged.metadata_log] == ["s3://b/t/metadata/00000-x.metadata.json"]
