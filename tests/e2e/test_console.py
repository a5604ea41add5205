"""The web console at /ui (issue 15, points 1 and 2), driven as a person would: Debian's Chromium, headless, through
its chromedriver (selenium). A warehouse is created in the console after its storage was tested (an S3 one on the
session's MinIO too, with a right and a wrong secret); a dropped table is undropped with one click; the catalog is
looked at as it was at a history entry's moment; a table's timeline grows after a Spark commit; a governance tag is
defined, put on a table and taken off again from the console; a maintenance policy set on a namespace, seen
inherited on a table's page, overridden there and removed (and refused with the API's 403 to a reader signed in
to a server deciding with OpenFGA); and every page the
console links to, followed from its first page, renders without an error box, without an error in the browser's
console and without a broken link. Each page is saved as a screenshot under test-screenshots/ (gitignored)."""

import json
import re
import shutil
import uuid
from collections import Counter

import httpx
import pytest
from gcs_tokens import TokenEndpoints, service_account_key
from support import ROOT, SCHEMA, Server, create_database, openfga_server, signed_in, wait_until

SCREENSHOTS = ROOT / "test-screenshots"
SPARK_CATALOG = "lakeledger"
ENCRYPTION_KEY = "lakeledger-console-tests-key"  # the console server keeps storage credentials encrypted


@pytest.fixture(scope="module")
def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.fail("Chromium and its chromedriver are missing: run `make chromium-deps`")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1100",
                     "--disable-gpu"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)  # this run's pictures only
    SCREENSHOTS.mkdir()
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()


@pytest.fixture(scope="module")
def console_server(pg_url, tmp_path_factory):
    """A server on a database of its own, so the crawl below sees only what these tests made."""
    database = create_database(pg_url, f"console_{uuid.uuid4().hex[:12]}")
    s = Server(database, tmp_path_factory.mktemp("console-serve"), LAKELEDGER__PG_POOL_SIZE="3",
               LAKELEDGER__WORKER_POLL_SECONDS="0.2", LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY)
    yield s
    s.stop()


def _open(browser, base: str, fragment: str, shot: str | None = None):
    """Loads a console page and waits until it has rendered (the router marks <main> busy while it works). The
    browser's log is emptied first: what it holds afterwards is this page's."""
    browser.get("about:blank")  # a fresh load even when only the fragment differs (or nothing does)
    browser.get_log("browser")
    browser.get(f"{base}/ui{fragment}")
    return _rendered(browser, shot)


def _rendered(browser, shot: str | None = None):
    from selenium.webdriver.common.by import By

    wait_until(lambda: browser.find_element(By.ID, "main").get_attribute("aria-busy") == "false", 20,
               f"the console page {browser.current_url} to render")
    if shot:
        _screenshot(browser, shot)
    return browser.find_element(By.ID, "main")


def _screenshot(browser, name: str) -> None:
    """The whole page, not only the window: the window is made as tall as the page for the picture."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(max(height, 1100), 8000))
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    browser.set_window_size(1280, 1100)


def _errors_on_page(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    boxes = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".error")]
    logged = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    return boxes + logged


def _click(browser, css: str):
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, css).click()


def test_create_a_warehouse_after_testing_its_storage(browser, console_server, minio, bucket, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    _open(browser, base, "#/new-warehouse", "new-warehouse")
    form = browser.find_element(By.ID, "warehouse-form")
    # S3 first: the connection test runs the create's own probe on the real MinIO, and creates nothing
    Select(form.find_element(By.NAME, "type")).select_by_value("s3")
    for name, value in (("bucket", bucket), ("key-prefix", "console-test"), ("endpoint", minio.endpoint),
                        ("aws-access-key-id", minio.user), ("aws-secret-access-key", minio.password)):
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    _click(browser, "#test-storage")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#result .ok, #result .error"), 30, "the S3 test")
    assert browser.find_element(By.ID, "test-result").text.startswith("Connection works"), _errors_on_page(browser)
    _screenshot(browser, "new-warehouse-s3-tested")
    secret = form.find_element(By.NAME, "aws-secret-access-key")
    secret.clear()
    secret.send_keys("not-the-secret")
    _click(browser, "#test-storage")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#result .error"), 30, "the refused S3 test")
    assert "BadRequestException" in browser.find_element(By.CSS_SELECTOR, "#result .error").text
    assert [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"] == [
        f"{base}/management/v1/warehouse/test-storage - Failed to load resource: the server responded with a status "
        "of 400 (Bad Request)"]  # the refusal, and nothing else went wrong
    assert httpx.get(f"{base}/management/v1/warehouse").json()["warehouses"] == []  # tests create nothing

    Select(form.find_element(By.NAME, "type")).select_by_value("file")
    form.find_element(By.NAME, "warehouse-name").send_keys("made-in-the-console")
    form.find_element(By.NAME, "location").send_keys(f"file://{tmp_path}/console-wh")
    form.find_element(By.NAME, "expiration-seconds").send_keys("3600")
    _click(browser, "#test-storage")
    wait_until(lambda: browser.find_elements(By.ID, "test-result"), 20, "the file storage test")
    _click(browser, "#create")
    wait_until(lambda: "#/wh/" in browser.current_url, 20, "the new warehouse's page")
    main = _rendered(browser, "warehouse")
    assert "Warehouse made-in-the-console" in main.text
    [made] = httpx.get(f"{base}/management/v1/warehouse").json()["warehouses"]
    assert made["name"] == "made-in-the-console"
    assert made["delete-profile"] == {"type": "soft", "expiration-seconds": 3600}
    assert browser.current_url.endswith(f"#/wh/{made['id']}")


def _fill(form, values: dict) -> None:
    from selenium.webdriver.common.by import By

    for name, value in values.items():
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)


def _tested(browser) -> str:
    """Clicks Test connection and answers the outcome's text (the success, or the error box)."""
    from selenium.webdriver.common.by import By

    _click(browser, "#test-storage")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#result .ok, #result .error"), 30, "the storage test")
    return browser.find_element(By.CSS_SELECTOR, "#result .ok, #result .error").text


def _created(browser, base: str, name: str) -> dict:
    """Clicks Create, waits for the new warehouse's page and answers the warehouse as the API shows it."""
    from selenium.webdriver.common.by import By

    _click(browser, "#create")
    wait_until(lambda: "#/wh/" in browser.current_url or browser.find_elements(By.CSS_SELECTOR, "#result .error"),
               30, "the new warehouse's page")
    assert "#/wh/" in browser.current_url, _errors_on_page(browser)
    _rendered(browser)
    [made] = [w for w in httpx.get(f"{base}/management/v1/warehouse").json()["warehouses"] if w["name"] == name]
    assert browser.current_url.endswith(f"#/wh/{made['id']}")
    return made


def test_create_an_adls_warehouse_through_the_form(browser, console_server, azurite):
    """Every field of the ADLS profile, a shared-key credential tested right and wrong on the real Azurite; the key
    is never shown back."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    filesystem = azurite.make_filesystem(f"console-{uuid.uuid4().hex[:12]}")
    _open(browser, base, "#/new-warehouse")
    form = browser.find_element(By.ID, "warehouse-form")
    Select(form.find_element(By.NAME, "type")).select_by_value("adls")
    assert form.find_element(By.ID, "adls-fields").is_displayed()
    assert not form.find_element(By.ID, "file-fields").is_displayed()
    _fill(form, {"warehouse-name": "adls-from-the-console", "account-name": azurite.account,
                 "filesystem": filesystem, "adls-key-prefix": "lake/wh", "adls-endpoint": azurite.endpoint,
                 "sas-token-validity-seconds": "900", "adls-key": "bm90LXRoZS1rZXk="})
    form.find_element(By.NAME, "adls-allow-alternative-protocols").click()
    Select(form.find_element(By.NAME, "name-matching")).select_by_value("exact")
    refused = _tested(browser)  # a well-formed key that is not the account's
    assert "BadRequestException" in refused and "bm90LXRoZS1rZXk=" not in refused, refused
    assert [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"] == [
        f"{base}/management/v1/warehouse/test-storage - Failed to load resource: the server responded with a status "
        "of 400 (Bad Request)"]  # the refusal, and nothing else went wrong
    # client credentials have fields of their own, shown only for them
    Select(form.find_element(By.NAME, "adls-credential-type")).select_by_value("client-credentials")
    assert form.find_element(By.NAME, "tenant-id").is_displayed()
    assert not form.find_element(By.NAME, "adls-key").is_displayed()
    Select(form.find_element(By.NAME, "adls-credential-type")).select_by_value("shared-access-key")
    _fill(form, {"adls-key": azurite.key})
    assert _tested(browser).startswith("Connection works"), _errors_on_page(browser)
    _screenshot(browser, "new-warehouse-adls-tested")
    assert "adls-from-the-console" not in [w["name"] for w in httpx.get(f"{base}/management/v1/warehouse").json()[
        "warehouses"]]  # tests create nothing

    made = _created(browser, base, "adls-from-the-console")
    expected = {"type": "adls", "account-name": azurite.account, "filesystem": filesystem, "key-prefix": "lake/wh",
                "endpoint": azurite.endpoint, "sas-token-validity-seconds": 900, "sas-enabled": True,
                "allow-alternative-protocols": True}
    assert {k: made["storage-profile"].get(k) for k in expected} == expected, made["storage-profile"]
    assert made["name-matching"] == "exact"
    main = _rendered(browser, "warehouse-adls-made-in-the-console")
    assert f"abfss://{filesystem}@{azurite.account}.dfs.core.windows.net/lake/wh" in main.text
    assert "exact" in main.text
    assert azurite.key not in browser.page_source  # the secret is never shown back
    # the stored credential still works: the warehouse page's check runs the creation's checks again
    _click(browser, "#check-storage")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#storage-check table"), 30, "the storage check")
    assert "The storage works." in browser.find_element(By.ID, "storage-check").text
    assert _errors_on_page(browser) == []


def test_create_an_s3_warehouse_with_lakekeepers_settings(browser, console_server, minio, bucket):
    """Lakekeeper's further S3 settings through the form, created on the real MinIO with STS."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    _open(browser, base, "#/new-warehouse")
    form = browser.find_element(By.ID, "warehouse-form")
    Select(form.find_element(By.NAME, "type")).select_by_value("s3")
    _fill(form, {"warehouse-name": "s3-from-the-console", "bucket": bucket, "key-prefix": "console-s3",
                 "endpoint": minio.endpoint, "sts-token-validity-seconds": "900",
                 "sts-session-tags": "team=web, env=test", "aws-access-key-id": minio.user,
                 "aws-secret-access-key": minio.password})
    form.find_element(By.NAME, "sts-enabled").click()
    for name, value in (("flavor", "minio"), ("remote-signing-enabled", "false"),
                        ("remote-signing-url-style", "path"), ("push-s3-delete-disabled", "false")):
        Select(form.find_element(By.NAME, name)).select_by_value(value)
    assert _tested(browser).startswith("Connection works"), _errors_on_page(browser)
    made = _created(browser, base, "s3-from-the-console")
    expected = {"bucket": bucket, "key-prefix": "console-s3", "flavor": "minio", "sts-enabled": True,
                "sts-token-validity-seconds": 900, "sts-session-tags": {"env": "test", "team": "web"},
                "remote-signing-enabled": False, "remote-signing-url-style": "path", "push-s3-delete-disabled": False}
    assert {k: made["storage-profile"].get(k) for k in expected} == expected, made["storage-profile"]
    assert "legacy-md5-behavior" not in made["storage-profile"]  # left at the default: not sent
    assert minio.password not in browser.page_source
    assert _errors_on_page(browser) == []

@pytest.fixture(scope="module")
def gcs_private_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def gcs_tokens(gcs_private_key):
    endpoints = TokenEndpoints(gcs_private_key.public_key(), "console@lakeledger-tests.iam.gserviceaccount.com")
    yield endpoints
    endpoints.stop()


def test_create_a_gcs_warehouse_through_the_form(browser, console_server, fake_gcs, gcs_private_key, gcs_tokens,
                                                 tmp_path):
    """The GCS profile's fields and a service account's key file, tested and created on the real fake-gcs-server
    (Google's token endpoints stood in for by `gcs_tokens`); the key is never shown back."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    bucket = fake_gcs.make_bucket(f"console-{uuid.uuid4().hex[:12]}")
    key = service_account_key(gcs_private_key, gcs_tokens)
    key_file = tmp_path / "service-account.json"
    key_file.write_text(json.dumps(key))
    _open(browser, base, "#/new-warehouse")
    form = browser.find_element(By.ID, "warehouse-form")
    Select(form.find_element(By.NAME, "type")).select_by_value("gcs")
    _fill(form, {"warehouse-name": "gcs-from-the-console", "gcs-bucket": bucket, "gcs-key-prefix": "lake",
                 "gcs-endpoint": fake_gcs.endpoint, "gcs-sts-endpoint": f"{gcs_tokens.url}/v1/token",
                 "gcs-key": "{not json"})
    refused = _tested(browser)
    assert "not JSON" in refused and "{not json" not in refused, refused
    form.find_element(By.NAME, "gcs-key").clear()
    form.find_element(By.NAME, "gcs-key-file").send_keys(str(key_file))  # the file Google's console downloads
    assert _tested(browser).startswith("Connection works"), _errors_on_page(browser)
    assert gcs_tokens.exchanges, "the test asked for no downscoped token"  # sts-enabled, on by default
    _screenshot(browser, "new-warehouse-gcs-tested")

    made = _created(browser, base, "gcs-from-the-console")
    expected = {"type": "gcs", "bucket": bucket, "key-prefix": "lake", "endpoint": fake_gcs.endpoint,
                "sts-endpoint": f"{gcs_tokens.url}/v1/token", "sts-enabled": True}
    assert {k: made["storage-profile"].get(k) for k in expected} == expected, made["storage-profile"]
    assert made["name-matching"] == "case-insensitive"  # the form's default
    main = _rendered(browser, "warehouse-gcs-made-in-the-console")
    assert f"gs://{bucket}/lake ({fake_gcs.endpoint})" in main.text, main.text
    body = key["private_key"].splitlines()[1]
    assert body not in browser.page_source and key["private_key_id"] not in browser.page_source
    assert _errors_on_page(browser) == []

    # a generic table's format, shown without minting it a downscoped token (the console uses no storage access)
    assert httpx.post(f"{base}/catalog/v1/{made['id']}/namespaces", json={"namespace": ["raw"]}).status_code == 200
    assert httpx.post(f"{base}/lakekeeper/v1/{made['id']}/namespaces/raw/generic-tables",
                      json={"name": "events", "format": "delta"}).status_code == 200
    exchanges = len(gcs_tokens.exchanges)
    _open(browser, base, f"#/wh/{made['id']}/ns/raw")
    wait_until(lambda: "delta" in browser.find_element(By.ID, "generic-tables").text, 20, "the generic table's format")
    browser.find_element(By.LINK_TEXT, "events").click()
    assert "delta" in _rendered(browser).text and f"gs://{bucket}/lake/" in browser.find_element(By.ID, "main").text
    assert len(gcs_tokens.exchanges) == exchanges
    assert _errors_on_page(browser) == []


def test_an_adls_warehouse_is_shown_by_its_abfss_location(browser, server, client, azurite):
    filesystem = azurite.make_filesystem(f"console-{uuid.uuid4().hex[:12]}")
    created = client.post("/management/v1/warehouse", json={
        "warehouse-name": filesystem, "storage-profile": azurite.profile(filesystem, "wh"),
        "storage-credential": azurite.credential()})
    assert created.status_code == 201, created.text
    main = _open(browser, server.url, f"#/wh/{created.json()['warehouse-id']}", "warehouse-adls")
    shown = f"abfss://{filesystem}@{azurite.account}.dfs.core.windows.net/wh ({azurite.endpoint})"
    assert shown in main.text, main.text
    assert _errors_on_page(browser) == []


def _warehouse(base: str) -> dict:
    [found] = [w for w in httpx.get(f"{base}/management/v1/warehouse").json()["warehouses"]
               if w["name"] == "made-in-the-console"]
    return found


def test_undrop_a_dropped_table_with_one_click(browser, console_server):
    from selenium.webdriver.common.by import By

    base = console_server.url
    wh = _warehouse(base)
    prefix = f"{base}/catalog/v1/{wh['id']}"
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["shop"]}).status_code == 200
    assert httpx.post(f"{prefix}/namespaces/shop/tables", json={"name": "orders", "schema": SCHEMA}).status_code == 200
    assert httpx.delete(f"{prefix}/namespaces/shop/tables/orders").status_code == 204
    assert httpx.get(f"{prefix}/namespaces/shop/tables/orders").status_code == 404

    # and a namespace tree dropped recursively, which comes back as a whole
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["old"]}).status_code == 200
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["old", "deep"]}).status_code == 200
    assert httpx.post(f"{prefix}/namespaces/old%1Fdeep/tables", json={"name": "kept", "schema": SCHEMA}
                      ).status_code == 200
    assert httpx.delete(f"{prefix}/namespaces/old", params={"recursive": "true"}).status_code == 204

    main = _open(browser, base, f"#/wh/{wh['id']}/bin", "recycle-bin")
    assert "shop.orders" in main.text and "old.deep.kept" in main.text and "table, with its namespace" in main.text
    orders = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/deleted-tabulars").json()["tabulars"]
    orders_id = next(t["id"] for t in orders if t["name"] == "orders")
    _click(browser, f"button.undrop[data-id='{orders_id}']")
    _click(browser, "button.undrop[data-target='namespace']")
    wait_until(lambda: browser.find_element(By.ID, "bin").text.count("undropped") == 2, 20, "the undrops")
    _screenshot(browser, "recycle-bin-undropped")
    assert httpx.get(f"{prefix}/namespaces/shop/tables/orders").status_code == 200
    assert httpx.get(f"{prefix}/namespaces/old%1Fdeep/tables/kept").status_code == 200
    history = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/history", params={"pageSize": 1000}).json()
    undrops = [(e["type"], ".".join(e["entity"]["name"])) for e in history["events"] if e["type"].endswith("undropped")]
    assert ("table.undropped", "shop.orders") in undrops and ("namespace.undropped", "old") in undrops, undrops
    assert _errors_on_page(browser) == []


def test_time_travel_from_a_history_entry(browser, console_server):
    from selenium.webdriver.common.by import By

    base = console_server.url
    wh = _warehouse(base)
    prefix = f"{base}/catalog/v1/{wh['id']}"
    assert httpx.post(f"{prefix}/namespaces/shop/tables", json={"name": "later", "schema": SCHEMA}).status_code == 200
    events = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/history", params={"pageSize": 1000}).json()["events"]
    # orders' own undrop: the namespace tree's, clicked at the same time, may have come first
    undropped = next(e for e in events if e["type"] == "table.undropped" and e["entity"]["name"] == ["shop", "orders"])

    _open(browser, base, f"#/wh/{wh['id']}/history", "warehouse-history")
    links = browser.find_elements(By.CSS_SELECTOR, ".event a.at-this-moment")
    assert len(links) == len(events)
    [link] = [a for a in links if a.get_attribute("href").endswith(f"@seq:{undropped['sequence']}")]
    link.click()
    _rendered(browser)
    banner = browser.find_element(By.ID, "banner")
    assert banner.is_displayed() and "read-only" in banner.text and str(undropped["sequence"]) in banner.text
    browser.find_element(By.LINK_TEXT, "shop").click()
    _rendered(browser, "time-travel-namespace")
    tables = browser.find_element(By.ID, "tables").text
    assert "orders" in tables and "later" not in tables  # as it was then: "later" came after
    assert "Time travel" in browser.find_element(By.ID, "banner").text

    # the same through the form, by log position, and back to the present
    _open(browser, base, f"#/wh/{wh['id']}")
    form = browser.find_element(By.ID, "time-travel")
    form.find_element(By.NAME, "at").send_keys(str(undropped["sequence"]))
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait_until(lambda: f"@seq:{undropped['sequence']}" in browser.current_url, 20, "the time-travel page")
    _rendered(browser, "time-travel-warehouse")
    browser.find_element(By.LINK_TEXT, "Back to the present").click()
    _rendered(browser)
    assert not browser.find_element(By.ID, "banner").is_displayed()
    assert _errors_on_page(browser) == []


def test_a_tables_timeline_grows_after_a_spark_commit(browser, server, spark, spark_warehouse):
    from selenium.webdriver.common.by import By

    table = f"console_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {SPARK_CATALOG}.console")
    spark.sql(f"CREATE TABLE {SPARK_CATALOG}.console.{table} (id bigint, data string) USING iceberg")
    spark.sql(f"INSERT INTO {SPARK_CATALOG}.console.{table} VALUES (1, 'a'), (2, 'b')")
    page = f"#/wh/{spark_warehouse['id']}/ns/console/table/{table}"
    main = _open(browser, server.url, page)
    before = browser.find_elements(By.CSS_SELECTOR, "#table-history .event")
    assert [e.get_attribute("data-type") for e in before][:1] == ["table.created"]
    assert "long" in main.text and "string" in main.text  # the schema, in Iceberg's type names
    spark.sql(f"INSERT INTO {SPARK_CATALOG}.console.{table} VALUES (3, 'c')")
    main = _open(browser, server.url, page, "table")
    after = browser.find_elements(By.CSS_SELECTOR, "#table-history .event")
    assert len(after) == len(before) + 1
    newest = after[-1]
    # Spark's commit reports (Iceberg's Java RESTCatalog sends one per commit), listed as the table's page shows them
    assert "commit append" in browser.find_element(By.ID, "table-reports").text
    assert newest.get_attribute("data-type") == "table.committed"
    assert re.search(r"\+ snapshot \d+ \(append\): 1 records", newest.text), newest.text
    # the plot: one point per snapshot, the last at 3 records
    assert len(browser.find_elements(By.CSS_SELECTOR, "#charts .chart:first-child circle")) == 2
    assert "3" in browser.find_element(By.ID, "charts").text
    # a schema change reads as the columns it adds
    spark.sql(f"ALTER TABLE {SPARK_CATALOG}.console.{table} ADD COLUMN note string")
    _open(browser, server.url, page, "table-schema-change")
    newest = browser.find_elements(By.CSS_SELECTOR, "#table-history .event")[-1]
    assert "+ column note (string)" in newest.text, newest.text
    main = browser.find_element(By.ID, "main")
    # 64-bit snapshot ids shown exactly (a JavaScript number would round them)
    snapshots = httpx.get(f"{server.url}/catalog/v1/{spark_warehouse['id']}/namespaces/console/tables/{table}").json()
    for snapshot in snapshots["metadata"]["snapshots"]:
        assert str(snapshot["snapshot-id"]) in main.text
    assert _errors_on_page(browser) == []


def test_a_tables_scan_and_commit_reports_are_shown(browser, console_server, tmp_path):
    """The reports an engine sent about a table (docs/metrics-reports.md), newest first, with their figures; a 64-bit
    snapshot id exactly."""
    from selenium.webdriver.common.by import By

    base = console_server.url
    made = httpx.post(f"{base}/management/v1/warehouse", json={
        "warehouse-name": "reported", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
    assert made.status_code == 201, made.text
    wh = {"id": made.json()["warehouse-id"]}
    prefix = f"{base}/catalog/v1/{wh['id']}"
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["shop"]}).status_code == 200
    assert httpx.post(f"{prefix}/namespaces/shop/tables", json={"name": "sales", "schema": SCHEMA}).status_code == 200
    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/sales")
    assert "No scan or commit reports yet" in browser.find_element(By.ID, "table-reports").text
    scan = {"report-type": "scan-report", "table-name": "lakeledger.shop.sales", "snapshot-id": 3497810964824022504,
            "filter": {"type": "gt", "term": "id", "value": 5}, "schema-id": 0, "projected-field-ids": [1],
            "projected-field-names": ["id"], "metrics": {
                "total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 12_500_000},
                "result-data-files": {"unit": "count", "value": 7},
                "total-file-size-bytes": {"unit": "bytes", "value": 90210}}}
    commit = {"report-type": "commit-report", "table-name": "lakeledger.shop.sales", "snapshot-id": 11,
              "sequence-number": 1, "operation": "append", "metrics": {
                  "added-data-files": {"unit": "count", "value": 2}, "added-records": {"unit": "count", "value": 4242},
                  "added-files-size-bytes": {"unit": "bytes", "value": 3333}}}
    for report in (commit, scan):
        assert httpx.post(f"{prefix}/namespaces/shop/tables/sales/metrics", json=report).status_code == 204
    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/sales", "table-reports")
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#table-reports tbody tr")]
    assert len(rows) == 2, rows
    newest, older = rows
    assert "scan" in newest and '"term":"id"' in newest and "3497810964824022504" in newest, newest
    assert "7" in newest and "90210" in newest and "12.5" in newest, newest
    assert "commit append" in older and "4242" in older and "3333" in older, older
    assert _errors_on_page(browser) == []


def test_find_a_table_by_the_start_of_its_name(browser, console_server):
    from selenium.webdriver.common.by import By

    base = console_server.url
    wh = _warehouse(base)
    _open(browser, base, f"#/wh/{wh['id']}")
    search = browser.find_element(By.ID, "search")
    search.find_element(By.NAME, "prefix").send_keys("ORD")
    search.find_element(By.CSS_SELECTOR, "button").click()
    wait_until(lambda: "shop.orders" in browser.find_element(By.ID, "search-results").text, 20, "the search")
    _screenshot(browser, "search")
    browser.find_element(By.LINK_TEXT, "shop.orders").click()
    main = _rendered(browser)
    assert "Table shop.orders" in main.text
    assert _errors_on_page(browser) == []


def test_grant_revoke_and_who_held_what_when(browser, console_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    wh = _warehouse(base)
    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/orders")
    wait_until(lambda: "Nobody holds" in browser.find_element(By.ID, "access").text, 20, "the access section")
    grant = browser.find_element(By.ID, "grant")
    Select(grant.find_element(By.NAME, "relation")).select_by_value("select")
    grant.find_element(By.NAME, "principal").send_keys("oidc~bob")
    grant.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: "user oidc~bob" in browser.find_element(By.ID, "access").text, 20, "the grant")
    assert "describe, select" in browser.find_element(By.ID, "access").text
    _screenshot(browser, "table-access")
    browser.find_element(By.CSS_SELECTOR, "#access button.revoke").click()
    wait_until(lambda: "oidc~bob" not in browser.find_element(By.ID, "access").text, 20, "the revoke")

    granted = httpx.get(f"{base}/management/v1/history", params={"type": "grant.added"}).json()["events"]
    assert [e["summary"] for e in granted][-1].startswith("granted select on table")
    at = browser.find_element(By.ID, "access-at")
    at.find_element(By.NAME, "at").send_keys(granted[-1]["time"])
    at.find_element(By.CSS_SELECTOR, "button").click()
    wait_until(lambda: "At " in browser.find_element(By.ID, "access").text, 20, "the access history")
    assert "user oidc~bob" in browser.find_element(By.ID, "access").text  # then, not now
    assert _errors_on_page(browser) == []


def test_a_generic_table_listed_shown_dropped_undropped_and_renamed(browser, console_server):
    """A generic table made over Lakekeeper's API: listed in its namespace with its format, its page, dropped there,
    undropped from the recycle bin, and renamed there."""
    from selenium.webdriver.common.by import By

    base = console_server.url
    wh = _warehouse(base)
    generic = f"{base}/lakekeeper/v1/{wh['id']}/namespaces/shop/generic-tables"
    made = httpx.post(generic, json={"name": "clicks", "format": "lance", "doc": "Clicks, one row each",
                                     "properties": {"owner": "web-team"}})
    assert made.status_code == 200, made.text
    location = made.json()["table"]["base-location"]

    _open(browser, base, f"#/wh/{wh['id']}/ns/shop")
    listed = browser.find_element(By.ID, "generic-tables")
    wait_until(lambda: "lance" in listed.text, 20, "the generic table's format in the list")
    assert "clicks" in listed.text
    _screenshot(browser, "namespace-generic-tables")
    browser.find_element(By.LINK_TEXT, "clicks").click()
    main = _rendered(browser, "generic-table")
    assert "Generic table shop.clicks" in main.text
    for shown in ("lance", location, "Clicks, one row each", "owner", "web-team"):
        assert shown in main.text, shown

    _click(browser, "#drop")
    browser.switch_to.alert.accept()
    wait_until(lambda: browser.find_elements(By.ID, "dropped"), 20, "the drop")
    assert httpx.get(f"{generic}/clicks").status_code == 404
    browser.find_element(By.LINK_TEXT, "The recycle bin").click()
    main = _rendered(browser)
    assert "shop.clicks" in main.text and "generic-table" in main.text
    dropped = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/deleted-tabulars").json()["tabulars"]
    clicks_id = next(t["id"] for t in dropped if t["name"] == "clicks")
    _click(browser, f"button.undrop[data-id='{clicks_id}']")
    wait_until(lambda: "undropped" in browser.find_element(By.ID, "bin").text, 20, "the undrop")
    assert httpx.get(f"{generic}/clicks").json()["table"]["format"] == "lance"

    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/generic-table/clicks")
    rename = browser.find_element(By.ID, "rename")
    _fill(rename, {"name": "page_clicks"})
    rename.find_element(By.CSS_SELECTOR, "button").click()
    wait_until(lambda: browser.current_url.endswith("/generic-table/page_clicks"), 20, "the renamed table's page")
    assert "Generic table shop.page_clicks" in _rendered(browser).text
    assert httpx.get(f"{generic}/clicks").status_code == 404
    assert httpx.get(f"{generic}/page_clicks").json()["table"]["doc"] == "Clicks, one row each"
    assert _errors_on_page(browser) == []


def test_rename_and_drop_a_table(browser, console_server):
    """The same two actions on an Iceberg table's page, through the catalog API."""
    from selenium.webdriver.common.by import By

    base = console_server.url
    wh = _warehouse(base)
    prefix = f"{base}/catalog/v1/{wh['id']}"
    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/later")
    rename = browser.find_element(By.ID, "rename")
    _fill(rename, {"name": "later_renamed"})
    rename.find_element(By.CSS_SELECTOR, "button").click()
    wait_until(lambda: browser.current_url.endswith("/table/later_renamed"), 20, "the renamed table's page")
    assert "Table shop.later_renamed" in _rendered(browser).text
    _click(browser, "#drop")
    browser.switch_to.alert.accept()
    wait_until(lambda: browser.find_elements(By.ID, "dropped"), 20, "the drop")
    assert httpx.get(f"{prefix}/namespaces/shop/tables/later_renamed").status_code == 404
    dropped = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/deleted-tabulars").json()["tabulars"]
    assert "later_renamed" in [t["name"] for t in dropped]  # soft: in the recycle bin
    assert _errors_on_page(browser) == []


def test_move_and_rename_a_namespace(browser, console_server):
    from selenium.webdriver.common.by import By

    base = console_server.url
    wh = _warehouse(base)
    prefix = f"{base}/catalog/v1/{wh['id']}"
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["drafts"]}).status_code == 200
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["drafts", "q1"], "properties": {"team": "web"}}
                      ).status_code == 200
    _open(browser, base, f"#/wh/{wh['id']}/ns/drafts%1Fq1")
    form = browser.find_element(By.ID, "move-namespace")
    assert form.find_element(By.NAME, "parent").get_attribute("value") == "drafts"
    _fill(form, {"parent": "", "name": "q1_final"})  # out of "drafts", to the top level, under a new name
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: browser.current_url.endswith("/ns/q1_final"), 20, "the moved namespace's page")
    main = _rendered(browser, "namespace-moved")
    assert "Namespace q1_final" in main.text and "web" in main.text
    assert httpx.get(f"{prefix}/namespaces/q1_final").json()["properties"]["team"] == "web"
    assert httpx.get(f"{prefix}/namespaces/drafts%1Fq1").status_code == 404
    assert _errors_on_page(browser) == []


def test_tag_a_table_from_its_page(browser, console_server):
    """A tag definition made on the Tags page, put on a table on the table's page (listed there and among the
    definition's attachments), found by the warehouse's search by tag, taken off again, and the definition deleted."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    wh = _warehouse(base)
    definitions = f"{base}/management/v1/tag-definition"
    _open(browser, base, "#/tags")
    form = browser.find_element(By.ID, "tag-definition-form")
    _fill(form, {"name": "pii.level", "description": "How personal the data is"})
    assert not form.find_element(By.NAME, "allowed").is_displayed()  # only for an enumerated definition
    Select(form.find_element(By.NAME, "value-kind")).select_by_value("enumerated")
    _fill(form, {"allowed": "low, high"})
    form.find_element(By.NAME, "scope-warehouse").click()  # not on warehouses
    _click(browser, "#create-tag")
    wait_until(lambda: "pii.level" in " ".join(t.text for t in browser.find_elements(By.CSS_SELECTOR, "main table")),
               20, "the new definition in the list")
    assert _errors_on_page(browser) == []
    _screenshot(browser, "tags")
    [made] = httpx.get(definitions).json()["tag-definitions"]
    assert (made["name"], made["value-kind"], made["description"]) == ("pii.level", "enumerated",
                                                                       "How personal the data is")
    assert made["scope"] == ["namespace", "table", "view", "generic-table", "column"]
    assert httpx.get(f"{definitions}/{made['id']}").json()["allowed-values"] == ["low", "high"]

    table_id = httpx.get(f"{base}/catalog/v1/{wh['id']}/namespaces/shop/tables/orders").json()["metadata"][
        "table-uuid"]
    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/orders")
    wait_until(lambda: browser.find_elements(By.ID, "tag-add"), 20, "the table's tags")
    add = browser.find_element(By.ID, "tag-add")
    Select(add.find_element(By.NAME, "tag")).select_by_value("pii.level")
    _fill(add, {"value": "high"})
    add.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: "pii.level" in " ".join(t.text for t in browser.find_elements(By.CSS_SELECTOR, "#tags table")),
               20, "the tag on the table")
    assert "high" in browser.find_element(By.CSS_SELECTOR, "#tags table").text
    _screenshot(browser, "table-tagged")
    tags = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/table/{table_id}/tags").json()["tags"]
    assert [(t["name"], t["value"]) for t in tags] == [("pii.level", "high")]
    [attached] = httpx.get(f"{definitions}/{made['id']}/attachments").json()["attachments"]
    assert attached["target"] == {"type": "table", "warehouse-id": wh["id"], "table-id": table_id}
    assert attached["value"] == "high"

    _open(browser, base, f"#/wh/{wh['id']}")
    search = browser.find_element(By.ID, "search")
    search.find_element(By.NAME, "tag").send_keys("PII.Level")  # any case, no name prefix
    search.find_element(By.CSS_SELECTOR, "button").click()
    wait_until(lambda: "shop.orders" in browser.find_element(By.ID, "search-results").text, 20, "the search by tag")
    assert browser.find_element(By.ID, "search-results").text.count("shop.") == 1  # only the tagged table

    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/orders")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#tags button.untag"), 20, "the table's tags")
    _click(browser, "#tags button.untag[data-tag='pii.level']")
    wait_until(lambda: "No tags on this table." in browser.find_element(By.ID, "tags").text, 20, "the removal")
    assert httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/table/{table_id}/tags").json()["tags"] == []
    assert httpx.get(f"{definitions}/{made['id']}/attachments").json()["attachments"] == []

    _open(browser, base, "#/tags")
    _click(browser, f"button.delete-tag[data-id='{made['id']}']")
    browser.switch_to.alert.accept()
    wait_until(lambda: "No tag definitions yet." in browser.find_element(By.ID, "main").text, 20, "the deletion")
    assert httpx.get(definitions).json()["tag-definitions"] == []
    assert _errors_on_page(browser) == []
    # A marker on a generic table, whose page finds its id by a search. It stays, so that the crawl below sees the
    # tags and the control for adding one.
    assert httpx.post(definitions, json={"name": "reviewed", "scope": ["warehouse", "namespace", "table", "view",
                                                                        "generic-table"], "value-kind": "marker"}
                      ).status_code == 201
    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/generic-table/page_clicks")
    wait_until(lambda: browser.find_elements(By.ID, "tag-add"), 20, "the generic table's tags")
    browser.find_element(By.CSS_SELECTOR, "#tag-add button[type=submit]").click()
    wait_until(lambda: "reviewed" in " ".join(t.text for t in browser.find_elements(By.CSS_SELECTOR, "#tags table")),
               20, "the tag on the generic table")
    [tagged] = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/search-tabulars",
                         params={"tag": "reviewed"}).json()["tabulars"]
    assert (tagged["type"], tagged["namespace"], tagged["name"]) == ("generic-table", ["shop"], "page_clicks")
    assert _errors_on_page(browser) == []


def _policy(browser, policy_type: str) -> dict[str, tuple[str, str]] | None:
    """The maintenance section's rows for one policy type: setting -> (effective value, where it comes from); None
    while the section is (re)rendering."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        rows = browser.find_elements(By.CSS_SELECTOR, f"#maintenance form.policy[data-type='{policy_type}'] tbody tr")
        cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    except StaleElementReferenceException:
        return None
    return {c[0]: (c[1], c[2]) for c in cells} or None


def _policy_form(browser, policy_type: str):
    from selenium.webdriver.common.by import By

    wait_until(lambda: _policy(browser, policy_type), 20, "the maintenance section")
    return browser.find_element(By.CSS_SELECTOR, f"#maintenance form.policy[data-type='{policy_type}']")


def test_set_a_maintenance_policy_on_a_namespace_override_it_on_a_table_and_remove_it(browser, console_server):
    """Set on the namespace's page (a bad duration first: the API's refusal shown, nothing recorded), seen on the
    table's page as inherited from the namespace, overridden there for one setting, and the override removed."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base = console_server.url
    wh = _warehouse(base)
    expiry = "system.snapshot-expiry"
    catalog = f"{base}/catalog/v1/{wh['id']}/namespaces/shop"
    namespace_id = httpx.get(catalog).json()["namespace-uuid"]
    table_id = httpx.get(f"{catalog}/tables/orders").json()["metadata"]["table-uuid"]
    namespace_api = f"{base}/management/v1/warehouse/{wh['id']}/namespace/{namespace_id}"
    table_api = f"{base}/management/v1/warehouse/{wh['id']}/table/{table_id}"

    _open(browser, base, f"#/wh/{wh['id']}/ns/shop")
    form = _policy_form(browser, expiry)
    assert _policy(browser, expiry)["max-snapshot-age"] == ("P5D", "default")
    Select(form.find_element(By.NAME, "enabled")).select_by_value("true")
    _fill(form, {"max-snapshot-age": "7 days"})
    form.find_element(By.CSS_SELECTOR, "button.policy-save").click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#maintenance .error"), 20, "the refusal")
    assert "InvalidMaintenancePolicy" in form.find_element(By.CSS_SELECTOR, ".error").text  # the same form, kept
    assert httpx.get(f"{namespace_api}/maintenance-policies").json()["policies"] == []
    browser.get_log("browser")  # the refused request's 400, logged by the browser
    _fill(form, {"max-snapshot-age": "P7D"})
    form.find_element(By.CSS_SELECTOR, "button.policy-save").click()
    wait_until(lambda: (_policy(browser, expiry) or {}).get("max-snapshot-age") == ("P7D", "this namespace"), 20,
               "the namespace's own setting")
    assert _policy(browser, expiry)["enabled"] == ("true", "this namespace")
    [own] = httpx.get(f"{namespace_api}/maintenance-policies").json()["policies"]
    assert own["settings"] == {"enabled": True, "max-snapshot-age": "P7D"}
    assert _errors_on_page(browser) == []

    _open(browser, base, f"#/wh/{wh['id']}/ns/shop/table/orders")
    form = _policy_form(browser, expiry)
    shown = _policy(browser, expiry)
    assert shown["max-snapshot-age"] == ("P7D", "namespace shop") and shown["enabled"] == ("true", "namespace shop")
    assert shown["min-snapshots-to-keep"] == ("1", "default")
    assert form.find_element(By.NAME, "max-snapshot-age").get_attribute("value") == ""  # the table sets nothing
    _fill(form, {"min-snapshots-to-keep": "10"})
    form.find_element(By.CSS_SELECTOR, "button.policy-save").click()
    wait_until(lambda: (_policy(browser, expiry) or {}).get("min-snapshots-to-keep") == ("10", "this table"), 20,
               "the table's override")
    assert _policy(browser, expiry)["max-snapshot-age"] == ("P7D", "namespace shop")
    _screenshot(browser, "table-maintenance")
    [effective] = [p for p in httpx.get(f"{table_api}/effective-maintenance-policies").json()["policies"]
                   if p["policy-type"] == expiry]
    assert effective["settings"]["min-snapshots-to-keep"] == {"value": 10, "source": {
        "type": "table", "id": table_id, "name": ["shop", "orders"]}}
    assert effective["settings"]["max-snapshot-age"]["source"]["type"] == "namespace"

    _policy_form(browser, expiry).find_element(By.CSS_SELECTOR, "button.policy-remove").click()
    wait_until(lambda: (_policy(browser, expiry) or {}).get("min-snapshots-to-keep") == ("1", "default"), 20,
               "the removal")
    assert _policy(browser, expiry)["max-snapshot-age"] == ("P7D", "namespace shop")  # still inherited
    assert httpx.get(f"{table_api}/maintenance-policies").json()["policies"] == []
    history = httpx.get(f"{base}/management/v1/warehouse/{wh['id']}/history", params={"pageSize": 1000}).json()
    assert [e["type"] for e in history["events"] if e["type"].startswith("maintenance-policy.")] == [
        "maintenance-policy.set", "maintenance-policy.set", "maintenance-policy.removed"]
    assert _errors_on_page(browser) == []


def test_every_linked_page_renders_without_errors_or_broken_links(browser, console_server):
    """A crawl from the first page over every link the console shows (each object's page in the past at two of the
    moments its history links to)."""
    from selenium.webdriver.common.by import By

    base = console_server.url
    seen, queue, pages, in_the_past = set(), ["#/"], 0, Counter()
    while queue and pages < 300:
        fragment = queue.pop(0)
        if fragment in seen:
            continue
        seen.add(fragment)
        # every history entry links to its moment: each object's page in the past is rendered at its first two
        # moments met, not at all of them (they were most of the crawl, the same page over and over)
        past = re.sub(r"@seq:\d+", "@seq", fragment)
        if past != fragment:
            in_the_past[past] += 1
            if in_the_past[past] > 2:
                continue
        pages += 1
        slug = re.sub(r"[^a-zA-Z0-9]+", "-", fragment).strip("-")[:80] or "home"
        _open(browser, base, fragment, f"crawl-{pages:03d}-{slug}")
        assert _errors_on_page(browser) == [], fragment
        for a in browser.find_elements(By.CSS_SELECTOR, "a[href]"):
            href = a.get_attribute("href")
            assert href.startswith(f"{base}/ui#"), f"{fragment} links outside the console: {href}"
            target = "#" + href.split("#", 1)[1]
            if target not in seen:
                queue.append(target)
    assert not queue, f"more than {pages} pages: raise the crawl's bound"
    assert pages >= 10


@pytest.fixture(scope="module")
def signed_in_server(pg_url, oidc, tmp_path_factory):
    database = create_database(pg_url, f"console_oidc_{uuid.uuid4().hex[:12]}")
    s = Server(database, tmp_path_factory.mktemp("console-oidc"), LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer,
               LAKELEDGER__OPENID_AUDIENCE="lakeledger", LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID="true",
               LAKELEDGER__UI__OPENID_SCOPE="openid catalog", LAKELEDGER__UI__OPENID_RESOURCE="urn:lakeledger:catalog",
               LAKELEDGER__PG_POOL_SIZE="3")
    yield s
    s.stop()


def test_sign_in_with_the_provider_and_act_as_yourself(browser, signed_in_server, oidc, tmp_path):
    """Authorization code with PKCE against the real provider's own login and consent pages; the warehouse created
    afterwards is recorded as created by the person who signed in."""
    from selenium.webdriver.common.by import By

    base = signed_in_server.url
    _open(browser, base, "#/new-warehouse", "sign-in")
    _click(browser, "#sign-in")
    wait_until(lambda: browser.current_url.startswith(oidc.issuer), 20, "the provider's login page")
    browser.find_element(By.NAME, "login").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys("any password")
    _screenshot(browser, "provider-login")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: browser.current_url.startswith(base) or browser.find_elements(
        By.CSS_SELECTOR, "button[type=submit]"), 20, "the consent page")
    if not browser.current_url.startswith(base):
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()  # consent: Continue
    wait_until(lambda: browser.current_url.startswith(f"{base}/ui"), 20, "the way back to the console")
    wait_until(lambda: browser.find_elements(By.ID, "user"), 20, "the signed-in user")
    assert browser.find_element(By.ID, "user").text == "oidc~alice"
    assert "code=" not in browser.current_url and browser.current_url.endswith("#/new-warehouse")
    _rendered(browser, "signed-in-new-warehouse")
    # the provider's own pages asked for web fonts this machine cannot reach; what the console logged is checked
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and base in e["message"]] == []

    form = browser.find_element(By.ID, "warehouse-form")
    form.find_element(By.NAME, "warehouse-name").send_keys("alices")
    form.find_element(By.NAME, "location").send_keys(f"file://{tmp_path}/alices")
    _click(browser, "#create")
    wait_until(lambda: "#/wh/" in browser.current_url, 20, "the new warehouse's page")
    _rendered(browser)
    warehouse_id = browser.current_url.rsplit("/", 1)[1]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {oidc.token('spark')}"}) as api:
        events = api.get(f"/management/v1/warehouse/{warehouse_id}/history").json()["events"]
    assert [(e["type"], e["actor"]) for e in events] == [("warehouse.created", "oidc~alice")]
    assert _errors_on_page(browser) == []

    _click(browser, "#sign-out")
    wait_until(lambda: browser.find_elements(By.ID, "sign-in"), 20, "the sign-in page after signing out")
    assert httpx.get(f"{base}/management/v1/warehouse").status_code == 401  # the API itself still wants a token


@pytest.fixture(scope="module")
def fga_console(pg_url, oidc, openfga, tmp_path_factory):
    """A server whose decisions OpenFGA makes: bob, signed in to the console, may read a table but not maintain it."""
    database = create_database(pg_url, f"console_fga_{uuid.uuid4().hex[:12]}")
    s = openfga_server(database, tmp_path_factory.mktemp("console-fga"), oidc, openfga, "console",
                       LAKELEDGER__UI__OPENID_SCOPE="openid catalog",
                       LAKELEDGER__UI__OPENID_RESOURCE="urn:lakeledger:catalog")
    yield s
    s.stop()


def test_a_maintenance_policy_refused_for_want_of_the_right_shows_the_apis_403(browser, fga_console, oidc, tmp_path):
    from selenium.webdriver.common.by import By

    base = fga_console.url
    with signed_in(fga_console, oidc, "spark") as spark:
        assert spark.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True}
                          ).status_code == 204
        project = spark.post("/management/v1/project", json={"project-name": "upkeep"}).json()["project-id"]
        w = spark.post("/management/v1/warehouse", json={
            "warehouse-name": "wh", "project-id": project,
            "storage-profile": {"type": "file", "location": f"file://{tmp_path}"}}).json()["warehouse-id"]
        assert spark.post(f"/catalog/v1/{w}/namespaces", json={"namespace": ["ns"]}).status_code == 200
        made = spark.post(f"/catalog/v1/{w}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
        table_id = made.json()["metadata"]["table-uuid"]
        table_api = f"/management/v1/warehouse/{w}/table/{table_id}"
        assert spark.post(f"{table_api}/grants", json={"writes": [
            {"privilege": "select", "principal": {"user": "oidc~bob"}}]}).status_code == 204

    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})  # the provider's session of an earlier sign-in
    _open(browser, base, f"#/wh/{w}/ns/ns/table/t")
    _click(browser, "#sign-in")
    wait_until(lambda: browser.current_url.startswith(oidc.issuer), 20, "the provider's login page")
    browser.find_element(By.NAME, "login").send_keys("bob")
    browser.find_element(By.NAME, "password").send_keys("any password")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: browser.current_url.startswith(base) or browser.find_elements(
        By.CSS_SELECTOR, "button[type=submit]"), 20, "the consent page")
    if not browser.current_url.startswith(base):
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: browser.find_elements(By.ID, "user"), 20, "the signed-in user")
    assert browser.find_element(By.ID, "user").text == "oidc~bob"
    _rendered(browser)
    expiry = "system.snapshot-expiry"
    form = _policy_form(browser, expiry)  # he reads the effective policy: seeing the table is enough
    _fill(form, {"min-snapshots-to-keep": "3"})
    form.find_element(By.CSS_SELECTOR, "button.policy-save").click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#maintenance .error"), 20, "the refusal")
    refusal = form.find_element(By.CSS_SELECTOR, ".error").text
    assert refusal.startswith("ForbiddenException") and "can_set_maintenance_policy" in refusal, refusal
    _screenshot(browser, "table-maintenance-refused")
    with signed_in(fga_console, oidc, "spark", project) as spark:
        assert spark.get(f"{table_api}/maintenance-policies").json()["policies"] == []
