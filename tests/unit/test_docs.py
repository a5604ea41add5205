"""The manual builds as a site with nothing broken, and the README stays a front page.

`make docs` (a prerequisite of `make test`) builds the same; this test holds even where the make target is skipped."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_strictly(tmp_path):
    # strict (mkdocs.yml): a link to a missing page or anchor, a page left out of the nav, or a README section the
    # pages include that is gone, fails the build
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert out.returncode == 0, out.stderr[-5000:]
    home = (tmp_path / "site/index.html").read_text()
    # the home page includes the README's snippets rather than keeping a copy of its own
    assert "RestCatalog" in home and "SparkSession" in home
    assert (tmp_path / "site/configuration/index.html").exists()


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 250, f"README.md has {len(lines)} lines: move the detail into docs/"
