"""The monitoring files match the service: every metric a dashboard panel or an alert rule
queries is exported by a running service's ``/metrics``, and ``ops/monitoring/metrics.md``
documents exactly the metrics the service exports (``promtool`` itself runs in ``make test``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.asyncio

MONITORING = Path(__file__).resolve().parents[2] / "ops" / "monitoring"
METRIC_NAME = re.compile(r"\b((?:raiz|process|python)_[a-z0-9_]+)\b")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def exported(metrics_text: str) -> dict[str, str]:
    """Metric family name -> type, from the ``# TYPE`` lines (present even before a labelled
    metric has its first sample)."""
    families = {}
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            families[name] = kind
    return families


def queryable(families: dict[str, str]) -> set[str]:
    """Every series name PromQL can select from these families."""
    names = set(families)
    for name, kind in families.items():
        if kind == "histogram":
            names.update(name + suffix for suffix in HISTOGRAM_SUFFIXES)
    return names


def dashboard_queries() -> list[tuple[str, str]]:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    queries = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel.get("targets"), f"panel {panel['title']!r} has no query"
        queries.extend((panel["title"], target["expr"]) for target in panel["targets"])
    return queries


def alert_expressions() -> list[str]:
    text = (MONITORING / "alerts.yml").read_text()
    blocks = re.findall(r"expr: (?:>-\n)?((?:.+\n)(?:\s{10,}.+\n)*)", text)
    assert len(blocks) == text.count("- alert: "), "every alert has one expression"
    return blocks


async def scrape(client) -> dict[str, str]:
    # The HTTP metrics exist from the first request the service serves (not /metrics).
    assert (await client.get("/health/live")).status_code == 200
    response = await client.get("/metrics")
    assert response.status_code == 200
    return exported(response.text)


async def test_every_dashboard_panel_queries_exported_metrics(client):
    names = queryable(await scrape(client))
    queries = dashboard_queries()
    assert len(queries) >= 20
    for title, expr in queries:
        used = METRIC_NAME.findall(expr)
        assert used, f"panel {title!r} queries no metric: {expr}"
        missing = sorted(set(used) - names)
        assert not missing, f"panel {title!r} queries metrics the service lacks: {missing}"


async def test_every_alert_rule_queries_exported_metrics(client):
    names = queryable(await scrape(client))
    for expr in alert_expressions():
        used = METRIC_NAME.findall(expr)
        assert used or "up{" in expr, expr
        missing = sorted(set(used) - names)
        assert not missing, f"alert expression uses metrics the service lacks: {missing}"


async def test_metrics_reference_documents_exactly_the_exported_metrics(client):
    families = await scrape(client)
    ours = {name for name in families if name.startswith("raiz_")}
    ours = {name for name in ours if not name.endswith("_created")}
    documented = set(
        re.findall(r"^\| `(raiz_[a-z0-9_]+)` \|", (MONITORING / "metrics.md").read_text(), re.M)
    )
    assert ours - documented == set(), "exported but not documented"
    assert documented - ours == set(), "documented but not exported"


SELECTOR = re.compile(r"\b((?:raiz|process|python)_[a-z0-9_]+)\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
SERIES_LABELS = frozenset({"le", "instance", "job"})
"""Labels every series or every histogram bucket has (Prometheus adds ``instance``, ``job``)."""


def label_names(name: str) -> set[str]:
    """The label names of the metric behind series ``name`` (from the registry, so labelled
    metrics without a sample yet are known too)."""
    from prometheus_client import REGISTRY

    collectors = REGISTRY._names_to_collectors  # private: prometheus-client lists no labels
    for candidate in (name, *(name.removesuffix(s) for s in (*HISTOGRAM_SUFFIXES, "_total"))):
        if candidate in collectors:
            return set(collectors[candidate]._labelnames)
    raise AssertionError(f"no collector for {name}")


def check_labels(expr: str) -> None:
    for name, matchers in SELECTOR.findall(expr):
        unknown = set(MATCHER.findall(matchers)) - label_names(name) - SERIES_LABELS
        assert not unknown, f"{expr}: {name} has no label {sorted(unknown)}"
    used = METRIC_NAME.findall(expr)
    known = set().union(*(label_names(name) for name in used)) if used else set()
    for grouping in GROUPING.findall(expr):
        labels = {label.strip() for label in grouping.split(",") if label.strip()}
        unknown = labels - known - SERIES_LABELS
        assert not unknown, f"{expr}: grouping by labels no metric has: {sorted(unknown)}"


async def test_every_label_a_panel_or_rule_uses_exists_on_its_metric(client):
    await scrape(client)  # the HTTP metrics exist from the first request
    expressions = [expr for _, expr in dashboard_queries()] + alert_expressions()
    for expr in expressions:
        check_labels(expr)
    # the check itself: a label the metric lacks is caught, in a selector and in a grouping
    for wrong in (
        'sum(raiz_tables{state="running"})',
        "sum by (kind) (rate(raiz_actions_total[5m]))",
    ):
        with pytest.raises(AssertionError):
            check_labels(wrong)


async def test_prometheus_scrapes_every_instance_nginx_serves():
    # /metrics is denied by nginx, so Prometheus must scrape each instance's own port; the
    # scrape config named a port (8000) no deployed instance listens on.
    deploy = MONITORING.parent / "deploy"
    nginx = (deploy / "nginx.conf").read_text()
    upstream = re.search(r"upstream raiz \{(.*?)\}", nginx, re.S)
    assert upstream is not None
    servers = re.findall(r"server\s+(\S+:\d+)", upstream.group(1))
    assert len(servers) >= 2
    config = (MONITORING / "prometheus.yml").read_text()
    job = config.split("job_name: raiz", 1)[1]
    targets = re.findall(r'"(\S+:\d+)"', re.search(r"targets: \[([^\]]*)\]", job).group(1))
    assert sorted(targets) == sorted(servers)
    unit = (deploy / "raiz@.service").read_text()
    assert "Environment=RAIZ_PORT=%i" in unit  # the instance name is its port
    metrics_location = re.search(r"location /metrics \{(.*?)\}", nginx, re.S)
    assert metrics_location is not None and "deny all;" in metrics_location.group(1)
