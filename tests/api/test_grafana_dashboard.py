"""The Grafana dashboard (docs/grafana/lakeledger-dashboard.json) and the compose file's Prometheus and Grafana
(issue 15, point 3): every metric a panel queries is one the server exposes at /metrics, and every file the
compose services mount exists."""

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "lakeledger-dashboard.json"
SUFFIXES = ("", "_total", "_bucket", "_count", "_sum")


def test_every_panel_queries_metrics_the_server_exposes(client):
    client.get("/catalog/v1/config")  # a request, so the request metrics have samples too
    families = {f.name for f in text_string_to_metric_families(client.get("/metrics").text)}
    exposed = {name + suffix for name in families for suffix in SUFFIXES}
    dashboard = json.loads(DASHBOARD.read_text())
    queried = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = set(re.findall(r"\blakeledger_[a-z_]+", target["expr"]))
            assert names, target["expr"]
            queried |= names
    assert queried - exposed == set()
    # and the dashboard shows each family the issue names
    for needed in ("lakeledger_http_request_duration_seconds_bucket", "lakeledger_events_appended_total",
                   "lakeledger_consumer_lag_seconds", "lakeledger_expiry_timers", "lakeledger_purge_retries",
                   "lakeledger_pg_pool_waiting", "lakeledger_cloudevents_published_total",
                   "lakeledger_cloudevents_failures_total"):
        assert needed in queried, needed


def test_compose_runs_prometheus_and_grafana_on_the_dashboard():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("prometheus", "grafana"):
        for volume in services[name]["volumes"]:
            source = volume.split(":")[0]
            assert (ROOT / source).exists(), volume
    assert "./docs/grafana/lakeledger-dashboard.json:/var/lib/grafana/dashboards/lakeledger.json:ro" \
        in services["grafana"]["volumes"]
    scrape = yaml.safe_load((ROOT / "compose" / "prometheus" / "prometheus.yml").read_text())["scrape_configs"][0]
    assert scrape["metrics_path"] == "/metrics" and scrape["static_configs"][0]["targets"] == ["lakeledger:8181"]
    assert "/health/ready" in " ".join(services["lakeledger"]["healthcheck"]["test"])
