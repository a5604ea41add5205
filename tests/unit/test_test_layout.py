"""The suite's own layout. Test modules are imported by basename (the test folders are not packages), so two
modules of one name anywhere under tests/ stop the collection of the whole suite, while `make unit` or
`make service` alone, collecting one folder, cannot see it."""

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename():
    modules: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        modules[path.name].append(str(path.relative_to(TESTS)))
    assert len(modules) > 100, "the walk found the suite's modules"
    shared = {name: paths for name, paths in modules.items() if len(paths) > 1}
    assert not shared, f"rename one of each: {shared}"
