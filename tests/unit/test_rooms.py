"""Routers hold no SQL and reach no database: their read-model questions are named methods of
lakeledger/projections/*_queries.py, and everything else goes through the container's services. Read from the
source's syntax tree, so a comment or a docstring that mentions SQL does not count, and a string that holds SQL does
wherever it is, as does a statement imported from elsewhere to be run here."""

import ast
import importlib
import re
from pathlib import Path

import pytest

ROUTERS = Path(__file__).resolve().parents[2] / "lakeledger" / "api" / "routers"

# a statement's verb with the clause that makes it one (an endpoint's "DELETE /v1/..." is not)
SQL = re.compile(r"\b(SELECT\b.*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
                 r"|WITH\s+RECURSIVE\s+\w+\s*(\(|AS))\b", re.IGNORECASE | re.DOTALL)
FORBIDDEN_ATTRIBUTES = {"pool", "log", "conninfo"}
FORBIDDEN_MODULES = ("psycopg", "psycopg_pool")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def breaches(source: str) -> list[str]:
    """What in ``source`` a router may not hold: SQL in a string, a pool, the event log, connection settings or
    the Postgres driver."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if SQL.search(node.value):
                found.append(f"line {node.lineno}: SQL {node.value[:60]!r}")
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if SQL.search(text):
                found.append(f"line {node.lineno}: SQL in an f-string {text[:60]!r}")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
            found.append(f"line {node.lineno}: from {node.module} import")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lakeledger."):
            # SQL kept elsewhere and run from here is SQL here
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                texts = value.values() if isinstance(value, dict) else [value]
                if any(isinstance(t, str) and SQL.search(t) for t in texts):
                    found.append(f"line {node.lineno}: imports the SQL {alias.name}")
    return found


@pytest.mark.parametrize("router", sorted(ROUTERS.glob("*.py")), ids=lambda p: p.name)
def test_a_router_holds_no_sql_and_reaches_no_database(router: Path):
    assert breaches(router.read_text()) == []


API = ROUTERS.parent
# where the API's pool is opened and handed to the read models: the one API module that holds it
OPENS_THE_POOL = {"app.py"}


def pool_uses(source: str) -> list[str]:
    """Where ``source`` reaches for a connection pool (``.pool``) rather than asking a read model's query object."""
    return [f"line {node.lineno}: .pool" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr == "pool"]


@pytest.mark.parametrize("module", sorted(p for p in API.glob("*.py") if p.name not in OPENS_THE_POOL),
                         ids=lambda p: p.name)
def test_an_api_module_reaches_no_pool(module: Path):
    assert pool_uses(module.read_text()) == []


def test_the_pool_check_sees_a_pool():
    assert pool_uses("def f(ll):\n    return Queries(ll.queries.pool, 1)") == ["line 2: .pool"]
    assert pool_uses("def f(ll):\n    return Queries.at(ll.queries, 1)") == []


def test_every_router_is_checked():
    assert {"permissions.py", "protection.py", "access_history.py", "history.py"} <= {
        p.name for p in ROUTERS.glob("*.py")}


@pytest.mark.parametrize("source", [
    'X = "SELECT 1 FROM ll_warehouses WHERE id = %(id)s"',
    'def f():\n    return q.all(\'SELECT relation, "user" FROM ll_access_ranges\'\n               " WHERE x")',
    'X = ("INSERT INTO ll_x (a)"\n     " VALUES (1)")',
    "X = 'update ll_tabulars set protected = true'",
    "X = 'DELETE FROM ll_users'",
    "X = 'WITH RECURSIVE tree AS (SELECT 1) SELECT * FROM tree'",
    'X = f"SELECT {cols} FROM ll_history"',
    "def f(container):\n    return container.pool.connection()",
    "def f(container):\n    return container.log.head()",
    "def f(container):\n    return container.queries.pool",
    "def f(container):\n    return container.conninfo",
    "import psycopg",
    "from psycopg.rows import dict_row",
    "from psycopg_pool import AsyncConnectionPool",
    "from lakeledger.projections.catalog_queries import TABULAR_PROTECTION",
    "from lakeledger.projections.catalog_queries import OBJECT_EXISTS",
])
def test_the_check_sees_each_breach(source: str):
    assert breaches(source), source


@pytest.mark.parametrize("source", [
    '"""Routers SELECT nothing FROM the database: a docstring may say so."""',
    'X = "DELETE /v1/{prefix}/namespaces/{namespace}"',  # an endpoint, not a statement
    'X = "Select one of table, view or namespace"',
    'X = "With recursive: delete the tables\' files when their deletion is final"',
    "def f(container):\n    return container.queries.protection(1, 'table', 2)",
    "def f(container):\n    return container.access_history.caught_up",
    "import logging\nlogger = logging.getLogger(__name__)",
    "from lakeledger.projections.catalog_queries import CATALOG_KINDS, name_prefix_range",
])
def test_the_check_passes_what_is_no_breach(source: str):
    assert breaches(source) == [], source
