"""One directory where every API process of a ``serve`` writes its metrics (prometheus-client's multiprocess
mode), so that a scrape answered by any of them sums all. The library picks where values live when it is first
imported, so this module does not import it: ``serve`` calls ``share_between_processes`` before anything does."""

import os
import shutil
import sys
import tempfile

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"


def share_between_processes() -> str:
    """Makes this process and the processes it starts write their metrics to one new directory; returns it."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client was imported before its values could be shared between processes")
    directory = tempfile.mkdtemp(prefix="lakeledger-metrics-")
    os.environ[MULTIPROC_DIR] = directory
    return directory


def stop_sharing(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)
