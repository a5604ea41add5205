// Lakeledger's console: hash routes, each page built from the catalog's own APIs (Iceberg REST under /catalog/v1,
// management and history under /management/v1), called from the browser. Nothing here is trusted by the server:
// every read and every action is an ordinary API call, checked and recorded like any other.

import { finishSignIn, signIn, signOut, token } from "./signin.js";

const main = document.getElementById("main");
const banner = document.getElementById("banner");
const SEP = "%1F"; // namespace levels in a path (the server's default separator)
const PAGE = 100;

// ---- calling the API ----

class ApiError extends Error {}

// Snapshot ids are 64-bit: a JavaScript number would round them. Integers past 2^53 are kept as their source text
// (JSON.parse hands a reviver the source of each value where the browser supports it).
function exactIntegers(key, value, context) {
  if (typeof value === "number" && !Number.isSafeInteger(value) && Number.isInteger(value) && context) {
    return context.source;
  }
  return value;
}

let config = { authentication: false };

async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  const bearer = config.authentication ? token() : null;
  if (bearer) init.headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  const data = text ? JSON.parse(text, exactIntegers) : null;
  if (!r.ok) {
    if (r.status === 401 && config.authentication) signOut(); // expired or refused: the next page asks again
    const err = data && data.error ? `${data.error.type}: ${data.error.message}` : `${r.status} ${r.statusText}`;
    throw new ApiError(err);
  }
  return data;
}

const get = (path, headers) => api("GET", path, undefined, headers);
const post = (path, body, headers) => api("POST", path, body, headers);

// ---- building pages ----

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function page(...children) {
  main.replaceChildren(...children.flat(2).filter((c) => c !== null && c !== undefined && c !== false));
}

function fail(e) {
  return h("div", { class: "error", role: "alert" }, e instanceof ApiError ? e.message : `Error: ${e.message}`);
}

function table(headers, rows, empty = "Nothing here.") {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))));
}

const when = (ms) => (ms === undefined || ms === null ? "" : new Date(ms).toISOString().replace(".000Z", "Z"));
const json = (v) => h("pre", {}, JSON.stringify(v, null, 2));

// An instant as the API takes it: RFC 3339 with an offset is passed on as typed (microseconds and all, as the
// history shows them); anything else the browser can read becomes UTC.
function instant(text) {
  if (/^\d{4}-\d\d-\d\dT[\d:.]+([zZ]|[+-]\d\d:\d\d)$/.test(text)) return text;
  const parsed = new Date(text);
  if (Number.isNaN(parsed.getTime())) throw new Error(`${text} is not an instant (e.g. 2026-11-24T09:00:00Z)`);
  return parsed.toISOString();
}

// ---- addresses ----

const nsPath = (levels) => levels.map(encodeURIComponent).join(SEP);
const nsName = (levels) => levels.join(".");
const warehouseId = (prefix) => prefix.split("@")[0];
const pastPosition = (prefix) => (prefix.includes("@seq:") ? prefix.split("@seq:")[1] : null);
const hrefWarehouse = (prefix) => `#/wh/${prefix}`;
const hrefNamespace = (prefix, levels) => `#/wh/${prefix}/ns/${nsPath(levels)}`;
const hrefTable = (prefix, levels, name) => `${hrefNamespace(prefix, levels)}/table/${encodeURIComponent(name)}`;
const hrefView = (prefix, levels, name) => `${hrefNamespace(prefix, levels)}/view/${encodeURIComponent(name)}`;
const hrefGeneric = (prefix, levels, name) =>
  `${hrefNamespace(prefix, levels)}/generic-table/${encodeURIComponent(name)}`;
const hrefTabular = { table: hrefTable, view: hrefView, "generic-table": hrefGeneric };
const catalog = (prefix, rest) => `/catalog/v1/${prefix}${rest}`;

function showPast(prefix) {
  const position = pastPosition(prefix);
  if (!position) {
    banner.hidden = true;
    return false;
  }
  banner.replaceChildren(`Time travel: the catalog as it was at log position ${position}, read-only. `,
    h("a", { href: hrefWarehouse(warehouseId(prefix)) }, "Back to the present"));
  banner.hidden = false;
  return true;
}

const warehouseNames = new Map();

// the warehouse's name, filled in once known (asked of the API once per warehouse)
function warehouseName(id) {
  const label = h("span", { class: "warehouse-name" }, warehouseNames.get(id) || "warehouse");
  if (!warehouseNames.has(id)) {
    get(`/management/v1/warehouse/${id}`).then((w) => {
      warehouseNames.set(id, w.name);
      label.textContent = w.name;
    }).catch(() => {});
  }
  return label;
}

function crumbs(prefix, levels = [], last) {
  const parts = [h("a", { href: "#/" }, "Warehouses"), " / ",
    h("a", { href: hrefWarehouse(prefix) }, warehouseName(warehouseId(prefix)))];
  levels.forEach((_, i) => parts.push(" / ", h("a", { href: hrefNamespace(prefix, levels.slice(0, i + 1)) },
    levels[i])));
  if (last) parts.push(" / ", last);
  return h("div", { class: "crumbs" }, parts);
}

// ---- pages ----

async function warehousesPage() {
  showPast("");
  const projects = (await get("/management/v1/project-list")).projects;
  const sections = [];
  for (const p of projects) {
    const list = (await get("/management/v1/warehouse", { "x-project-id": p["project-id"] })).warehouses;
    sections.push(h("h2", {}, `Project ${p["project-name"]}`), table(
      ["Warehouse", "Storage", "Delete profile", "Status", "Protected", ""],
      list.map((w) => [
        h("a", { href: hrefWarehouse(w.id) }, w.name),
        storageText(w["storage-profile"]),
        w["delete-profile"].type === "soft" ? `soft, ${w["delete-profile"]["expiration-seconds"]} s` : "hard",
        w.status, w.protected ? "yes" : "no",
        h("button", { class: "danger", onclick: () => deleteWarehouse(w) }, "Delete"),
      ]), "No warehouses yet."));
  }
  page(h("h1", {}, "Warehouses"), h("p", {}, h("a", { href: "#/new-warehouse", id: "new-warehouse" },
    "Create a warehouse")), sections);
}

function storageText(profile) {
  if (profile.type === "file") return profile.location;
  if (profile.type === "adls") {
    const host = `${profile["account-name"]}.${profile.host || "dfs.core.windows.net"}`;
    return `abfss://${profile.filesystem}@${host}/${profile["key-prefix"] || ""}` +
      (profile.endpoint ? ` (${profile.endpoint})` : "");
  }
  if (profile.type === "gcs") {
    return `gs://${profile.bucket}/${profile["key-prefix"] || ""}` + (profile.endpoint ? ` (${profile.endpoint})` : "");
  }
  return `s3://${profile.bucket}/${profile["key-prefix"] || ""} (${profile.endpoint || profile.region || "AWS"})`;
}

async function deleteWarehouse(w) {
  if (!confirm(`Delete warehouse ${w.name}? It must be empty.`)) return;
  try {
    await api("DELETE", `/management/v1/warehouse/${w.id}`);
    await warehousesPage();
  } catch (e) {
    main.prepend(fail(e));
  }
}

// The storage kinds of the create form: each its fieldset (named inputs, unique across the form), the storage
// profile and the credential read from it. Secret inputs are password fields the browser neither fills nor keeps;
// nothing read back from the API carries a secret (warehouse responses have none).
const field = (label, name, attrs = {}) => h("label", {}, `${label} `, h("input", { name, ...attrs }));
const checkbox = (label, name, checked = false) => h("label", {},
  h("input", { type: "checkbox", name, checked }), ` ${label}`);
const secret = (label, name) => field(label, name, { type: "password", autocomplete: "new-password" });
// a setting left out unless chosen: the catalog's default (Lakekeeper's) applies
const yesNo = (label, name) => h("label", {}, `${label} `, h("select", { name }, h("option", { value: "" }, "default"),
  h("option", { value: "true" }, "yes"), h("option", { value: "false" }, "no")));

function tags(text) {
  if (!text) return undefined;
  return Object.fromEntries(text.split(",").map((pair) => {
    const at = pair.indexOf("=");
    if (at < 1) throw new Error(`STS session tag ${pair.trim()} is not key=value`);
    return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
  }));
}

const STORAGE_KINDS = {
  file: {
    fields: () => [field("Location", "location", { placeholder: "file:///var/lib/lakeledger/warehouses/sales" })],
    profile: (v) => ({ type: "file", location: v.text("location") }),
    credential: () => undefined,
  },
  s3: {
    fields: () => [
      field("Bucket", "bucket"), field("Key prefix", "key-prefix"),
      field("Endpoint", "endpoint", { placeholder: "http://minio:9000" }),
      field("Region", "region", { value: "us-east-1" }),
      h("label", {}, "Flavor ", h("select", { name: "flavor" }, h("option", { value: "" },
        "by the endpoint (s3-compat with one, aws without)"), ["aws", "s3-compat", "minio"].map((f) =>
        h("option", { value: f }, f)))),
      checkbox("path-style access", "path-style-access", true), checkbox("STS (vended credentials)", "sts-enabled"),
      field("STS endpoint", "sts-endpoint"), field("STS role ARN", "sts-role-arn"),
      field("Assume role ARN", "assume-role-arn"),
      field("STS token validity (seconds, empty: 3600)", "sts-token-validity-seconds",
        { type: "number", min: 900, max: 43200 }),
      field("STS session tags (key=value, comma-separated)", "sts-session-tags"),
      field("KMS key ARN", "aws-kms-key-arn"),
      yesNo("Remote signing", "remote-signing-enabled"),
      h("label", {}, "Remote signing URL style ", h("select", { name: "remote-signing-url-style" },
        ["auto", "path", "virtual-host"].map((f) => h("option", { value: f }, f)))),
      yesNo("Tell engines not to delete files (s3.delete-enabled=false) when soft-deleting", "push-s3-delete-disabled"),
      yesNo("Legacy MD5 behaviour", "legacy-md5-behavior"),
      checkbox("allow alternative protocols (s3a://, s3n://)", "s3-allow-alternative-protocols"),
      field("Access key id", "aws-access-key-id"), secret("Secret access key", "aws-secret-access-key")],
    profile: (v) => ({
      type: "s3", bucket: v.text("bucket"), "key-prefix": v.optional("key-prefix"), endpoint: v.optional("endpoint"),
      region: v.text("region"), "path-style-access": v.checked("path-style-access"),
      "sts-enabled": v.checked("sts-enabled"),
      flavor: v.optional("flavor") || (v.text("endpoint") ? "s3-compat" : undefined),
      "sts-endpoint": v.optional("sts-endpoint"), "sts-role-arn": v.optional("sts-role-arn"),
      "assume-role-arn": v.optional("assume-role-arn"),
      "sts-token-validity-seconds": v.number("sts-token-validity-seconds"),
      "sts-session-tags": tags(v.text("sts-session-tags")), "aws-kms-key-arn": v.optional("aws-kms-key-arn"),
      "remote-signing-enabled": v.yesNo("remote-signing-enabled"),
      "remote-signing-url-style": v.text("remote-signing-url-style"),
      "push-s3-delete-disabled": v.yesNo("push-s3-delete-disabled"),
      "legacy-md5-behavior": v.yesNo("legacy-md5-behavior"),
      "allow-alternative-protocols": v.checked("s3-allow-alternative-protocols"),
    }),
    credential: (v) => ({ type: "s3", "credential-type": "access-key",
      "aws-access-key-id": v.text("aws-access-key-id"), "aws-secret-access-key": v.raw("aws-secret-access-key") }),
  },
  adls: {
    fields: () => {
      const shared = h("div", { id: "adls-shared-key" }, secret("Account key", "adls-key"));
      const client = h("div", { id: "adls-client-credentials", hidden: true }, field("Tenant id", "tenant-id"),
        field("Client id", "client-id"), secret("Client secret", "client-secret"));
      const kind = h("select", { name: "adls-credential-type", onchange: () => {
        shared.hidden = kind.value !== "shared-access-key";
        client.hidden = kind.value !== "client-credentials";
      } }, h("option", { value: "shared-access-key" }, "shared access key"),
      h("option", { value: "client-credentials" }, "client credentials (Entra ID service principal)"));
      return [field("Account name", "account-name", { placeholder: "mystorageaccount" }),
        field("Filesystem (container)", "filesystem"), field("Key prefix", "adls-key-prefix"),
        field("Host", "host", { placeholder: "dfs.core.windows.net" }),
        field("Authority host", "authority-host", { placeholder: "https://login.microsoftonline.com" }),
        field("Blob endpoint (emulators)", "adls-endpoint", { placeholder: "http://127.0.0.1:10000/devstoreaccount1" }),
        field("SAS token validity (seconds, empty: 3600)", "sas-token-validity-seconds",
          { type: "number", min: 1, max: 604800 }),
        checkbox("SAS tokens for engines (vended credentials)", "sas-enabled", true),
        checkbox("allow alternative protocols (wasbs://)", "adls-allow-alternative-protocols"),
        h("label", {}, "Credential ", kind), shared, client];
    },
    profile: (v) => ({
      type: "adls", "account-name": v.text("account-name"), filesystem: v.text("filesystem"),
      "key-prefix": v.optional("adls-key-prefix"), host: v.optional("host"),
      "authority-host": v.optional("authority-host"), endpoint: v.optional("adls-endpoint"),
      "sas-token-validity-seconds": v.number("sas-token-validity-seconds"), "sas-enabled": v.checked("sas-enabled"),
      "allow-alternative-protocols": v.checked("adls-allow-alternative-protocols"),
    }),
    credential: (v) => (v.text("adls-credential-type") === "client-credentials"
      ? { type: "az", "credential-type": "client-credentials", "tenant-id": v.text("tenant-id"),
        "client-id": v.text("client-id"), "client-secret": v.raw("client-secret") }
      : { type: "az", "credential-type": "shared-access-key", key: v.raw("adls-key") }),
  },
  gcs: {
    fields: () => [field("Bucket", "gcs-bucket"), field("Key prefix", "gcs-key-prefix"),
      field("Storage endpoint (emulators)", "gcs-endpoint", { placeholder: "https://storage.googleapis.com" }),
      field("STS endpoint", "gcs-sts-endpoint", { placeholder: "https://sts.googleapis.com/v1/token" }),
      checkbox("STS (downscoped tokens for engines)", "gcs-sts-enabled", true),
      h("label", {}, "Service account key (the JSON file) ",
        h("input", { type: "file", name: "gcs-key-file", accept: ".json,application/json" })),
      h("label", {}, "or paste it ", h("textarea", { name: "gcs-key", rows: 3, autocomplete: "off",
        spellcheck: "false", placeholder: "{\"type\": \"service_account\", ...}" }))],
    profile: (v) => ({
      type: "gcs", bucket: v.text("gcs-bucket"), "key-prefix": v.optional("gcs-key-prefix"),
      endpoint: v.optional("gcs-endpoint"), "sts-endpoint": v.optional("gcs-sts-endpoint"),
      "sts-enabled": v.checked("gcs-sts-enabled"),
    }),
    credential: async (v) => {
      const file = v.file("gcs-key-file");
      const text = file ? await file.text() : v.raw("gcs-key");
      let key;
      try {
        key = JSON.parse(text);
      } catch {
        // the key's text is not repeated: it holds the private key
        throw new Error("The service account key is not JSON (the file Google's console downloads)");
      }
      return { type: "gcs", "credential-type": "service-account-key", key };
    },
  },
};

// Where tables go inside the warehouse (Lakekeeper's storage-layout); empty: Lakeledger's <namespace-id>/<table-id>
function layoutFields() {
  const templates = h("div", { id: "layout-templates", hidden: true },
    field("Namespace folder", "layout-namespace", { placeholder: "{uuid} or {name}" }),
    field("Table folder", "layout-tabular", { placeholder: "{name}-{uuid}" }));
  const kind = h("select", { name: "storage-layout", onchange: () => {
    templates.hidden = !["tabular-only", "full-hierarchy"].includes(kind.value);
    templates.querySelector("[name=layout-namespace]").closest("label").hidden = kind.value !== "full-hierarchy";
  } }, h("option", { value: "" }, "namespace id / table id (Lakeledger's)"),
  h("option", { value: "default" }, "table id (Lakekeeper's default)"),
  h("option", { value: "tabular-only" }, "one folder per table, named by a template"),
  h("option", { value: "full-hierarchy" }, "a folder per namespace level and per table, named by templates"));
  return [h("label", {}, "Table locations ", kind), templates];
}

function layoutOf(v) {
  const type = v.text("storage-layout");
  if (!type) return undefined;
  if (type === "default") return { type };
  if (type === "tabular-only") return { type, tabular: v.text("layout-tabular") };
  return { type, namespace: v.text("layout-namespace"), tabular: v.text("layout-tabular") };
}

function newWarehousePage() {
  showPast("");
  const result = h("div", { id: "result" });
  const sets = Object.fromEntries(Object.entries(STORAGE_KINDS).map(([name, k]) => [name,
    h("fieldset", { id: `${name}-fields`, hidden: name !== "file" }, h("legend", {}, name.toUpperCase()),
      k.fields())]));
  const kind = h("select", { name: "type", onchange: () => {
    for (const [name, set] of Object.entries(sets)) set.hidden = kind.value !== name;
  } }, Object.keys(STORAGE_KINDS).map((name) => h("option", { value: name }, name)));
  const form = h("form", { class: "stack", id: "warehouse-form", onsubmit: (ev) => ev.preventDefault() },
    field("Name", "warehouse-name", { required: true }),
    h("label", {}, "Storage ", kind), Object.values(sets), layoutFields(),
    h("label", {}, "Names of namespaces, tables and views ", h("select", { name: "name-matching" },
      h("option", { value: "case-insensitive" }, "case-insensitive (Sales and SALES are one name)"),
      h("option", { value: "exact" }, "exact (Sales and SALES are two names)"))),
    h("p", { class: "muted" }, "Name matching cannot be changed once the warehouse exists."),
    field("Soft delete: keep dropped objects for (seconds, empty for hard deletes)", "expiration-seconds",
      { type: "number", min: 1 }),
    h("p", {}, h("button", { type: "button", id: "test-storage", onclick: () => submit(true) }, "Test connection"),
      " ", h("button", { type: "button", class: "primary", id: "create", onclick: () => submit(false) }, "Create")),
    result);

  // the values of the form's inputs, by name
  const values = {
    raw: (n) => form.elements[n].value,
    text: (n) => form.elements[n].value.trim(),
    optional: (n) => form.elements[n].value.trim() || undefined,
    number: (n) => (form.elements[n].value.trim() ? Number(form.elements[n].value) : undefined),
    checked: (n) => form.elements[n].checked,
    yesNo: (n) => (form.elements[n].value ? form.elements[n].value === "true" : undefined),
    file: (n) => form.elements[n].files[0],
  };

  async function storage() {
    const chosen = STORAGE_KINDS[kind.value];
    const profile = { ...chosen.profile(values), "storage-layout": layoutOf(values) };
    return { "storage-profile": profile, "storage-credential": await chosen.credential(values) };
  }

  async function body() {
    const seconds = values.text("expiration-seconds");
    return { "warehouse-name": values.text("warehouse-name"), ...await storage(),
      "name-matching": values.text("name-matching"),
      "delete-profile": seconds ? { type: "soft", "expiration-seconds": Number(seconds) } : { type: "hard" } };
  }

  async function submit(testOnly) {
    result.replaceChildren(h("p", { class: "muted" }, testOnly ? "Testing…" : "Creating…"));
    try {
      if (testOnly) {
        const r = await post("/management/v1/warehouse/test-storage", await storage());
        result.replaceChildren(h("div", { class: "ok", id: "test-result" }, `Connection works: ${r.message}`));
      } else {
        const w = await post("/management/v1/warehouse", await body());
        location.hash = hrefWarehouse(w.id);
      }
    } catch (e) {
      result.replaceChildren(fail(e));
    }
  }

  page(h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Warehouses"), " / new"),
    h("h1", {}, "Create a warehouse"), form);
}

async function warehousePage(prefix) {
  const past = showPast(prefix);
  const w = await get(`/management/v1/warehouse/${warehouseId(prefix)}`);
  const namespaces = (await get(catalog(prefix, `/namespaces?pageSize=${PAGE}`))).namespaces;
  const travel = h("form", { id: "time-travel", class: "stack", onsubmit: async (ev) => {
    ev.preventDefault();
    const at = travel.elements.at.value.trim();
    const out = travel.querySelector(".out");
    try {
      const bound = /^\d+$/.test(at) ? `seq:${at}` : instant(at);
      const config = await get(`/catalog/v1/config?warehouse=${encodeURIComponent(`${w.name}@${bound}`)}`);
      location.hash = hrefWarehouse(config.overrides.prefix);
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  } }, h("label", {}, "See the whole warehouse as it was at ",
    h("input", { name: "at", placeholder: "2026-11-24T09:00:00Z or a log position", required: true }),
    " ", h("button", { type: "submit" }, "Go")), h("div", { class: "out" }));
  const results = h("div", { id: "search-results" });
  const search = h("form", { id: "search", onsubmit: (ev) => {
    ev.preventDefault();
    // by a prefix, a tag or both (the API refuses a search by neither, with a message shown here)
    const q = new URLSearchParams();
    for (const key of ["prefix", "tag"]) {
      const text = search.elements[key].value.trim();
      if (text) q.set(key, text);
    }
    results.replaceChildren();
    pagedList(`/management/v1/warehouse/${w.id}/search-tabulars?${q}`, "tabulars",
      (found) => table(["Name", "Type"], found.map((t) => [h("a", {
        href: (hrefTabular[t.type] || hrefTable)(prefix, t.namespace, t.name) }, [...t.namespace, t.name].join(".")),
      t.type]), "Nothing found."), results).catch((e) => results.replaceChildren(fail(e)));
  } }, h("label", {}, "Find tables, views and generic tables whose name starts with ",
    h("input", { name: "prefix" })), " ", h("label", {}, "carrying the tag ",
    h("input", { name: "tag", placeholder: "a tag's name (optional)" })),
  " ", h("button", { type: "submit" }, "Find"));
  page(crumbs(prefix), h("h1", {}, `Warehouse ${w.name}`),
    h("p", { class: "tabs" }, h("a", { href: `#/wh/${warehouseId(prefix)}/history` }, "History"),
      h("a", { href: `#/wh/${warehouseId(prefix)}/bin` }, "Recycle bin")),
    table(["Storage", "Names", "Delete profile", "Status", "Protected"], [[storageText(w["storage-profile"]),
      w["name-matching"] || "", w["delete-profile"].type, w.status, past ? (w.protected ? "yes" : "no")
        : protectionToggle(`/management/v1/warehouse/${w.id}/protection`, w.protected)]]),
    past ? null : [storageCheck(w.id), search, results],
    h("h2", {}, "Namespaces"),
    table(["Namespace"], namespaces.map((levels) => [h("a", { href: hrefNamespace(prefix, levels) },
      nsName(levels))]), "No namespaces."),
    past ? null : [tagsSection("warehouse", w.id, w.id), maintenanceSection("warehouse", w.id, w.id),
      h("h2", {}, "Time travel"), travel,
      accessSection(w.id, { kind: "warehouse", id: w.id }, `warehouse/${w.id}`)]);
}

// Whether the stored storage profile and credential still work (the checks a warehouse's creation made), each
// check with its outcome; the API's messages never repeat a secret.
function storageCheck(wid) {
  const out = h("div", { id: "storage-check" });
  const button = h("button", { id: "check-storage", onclick: async () => {
    out.replaceChildren(h("p", { class: "muted" }, "Checking…"));
    try {
      const r = await post(`/management/v1/warehouse/${wid}/storage/validate-access`);
      out.replaceChildren(h("div", { class: r.valid ? "ok" : "error" }, r.valid ? "The storage works." :
        "The storage does not work:"), table(["Check", "Outcome", "Why"], r.checks.map((c) => [c.name, c.status,
        c.error ? c.error.message : c.reason || ""])));
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  } }, "Check storage access");
  return h("div", {}, h("p", {}, button), out);
}

function protectionToggle(path, isProtected) {
  const button = h("button", { class: "protection", onclick: async () => {
    try {
      const r = await post(path, { protected: !isProtected });
      isProtected = r.protected;
      button.textContent = isProtected ? "protected (unprotect)" : "not protected (protect)";
    } catch (e) {
      button.after(fail(e));
    }
  } }, isProtected ? "protected (unprotect)" : "not protected (protect)");
  return button;
}

async function pagedList(path, key, render, container) {
  let token = null;
  const body = h("div");
  const pager = h("div", { class: "pager" });
  async function load() {
    const q = `pageSize=${PAGE}${token ? `&pageToken=${encodeURIComponent(token)}` : ""}`;
    const data = await get(`${path}${path.includes("?") ? "&" : "?"}${q}`);
    body.replaceChildren(render(data[key]));
    token = data["next-page-token"] || null;
    pager.replaceChildren(token ? h("button", { class: "next", onclick: () => load().catch((e) => pager.after(fail(e))) },
      "Next page") : "");
  }
  await load();
  container.append(body, pager);
}

async function namespacePage(prefix, levels) {
  const past = showPast(prefix);
  const ns = await get(catalog(prefix, `/namespaces/${nsPath(levels)}`));
  const children = (await get(catalog(prefix, `/namespaces?parent=${nsPath(levels)}&pageSize=${PAGE}`))).namespaces;
  const tables = h("div", { id: "tables" });
  const views = h("div", { id: "views" });
  const generics = h("div", { id: "generic-tables" });
  const find = h("form", { onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = hrefTable(prefix, levels, find.elements.name.value.trim());
  } }, h("label", {}, "Open a table by name ", h("input", { name: "name", required: true })), " ",
  h("button", { type: "submit" }, "Open"));
  page(crumbs(prefix, levels), h("h1", {}, `Namespace ${nsName(levels)}`),
    h("h2", {}, "Properties"), table(["Key", "Value"], Object.entries(ns.properties || {})),
    children.length ? [h("h2", {}, "Namespaces"), table(["Namespace"], children.map((c) =>
      [h("a", { href: hrefNamespace(prefix, c) }, nsName(c))]))] : null,
    h("h2", {}, "Tables"), find, tables, h("h2", {}, "Views"), views, h("h2", {}, "Generic tables"), generics,
    past || !ns["namespace-uuid"] ? null : [tagsSection("namespace", warehouseId(prefix), ns["namespace-uuid"]),
      maintenanceSection("namespace", warehouseId(prefix), ns["namespace-uuid"]),
      moveForm(prefix, levels, ns["namespace-uuid"])]);
  await pagedList(catalog(prefix, `/namespaces/${nsPath(levels)}/tables`), "identifiers", (ids) => table(["Table"],
    ids.map((id) => [h("a", { href: hrefTable(prefix, id.namespace, id.name) }, id.name)]), "No tables."), tables);
  await pagedList(catalog(prefix, `/namespaces/${nsPath(levels)}/views`), "identifiers", (ids) => table(["View"],
    ids.map((id) => [h("a", { href: hrefView(prefix, id.namespace, id.name) }, id.name)]), "No views."), views);
  // the list names them only: each one's format is filled in from its own load, after the page has rendered
  await pagedList(generic(prefix, `/namespaces/${nsPath(levels)}/generic-tables`), "identifiers", (ids) => table(
    ["Generic table", "Format"], ids.map((id) => [h("a", { href: hrefGeneric(prefix, id.namespace, id.name) }, id.name),
      genericFormat(prefix, id.namespace, id.name)]), "No generic tables."), generics);
}

const generic = (prefix, rest) => `/lakekeeper/v1/${prefix}${rest}`;

// A generic table's description. The console uses none of the access a load hands out: asking for remote signing
// keeps the catalog from minting vended credentials (STS, SAS, downscoped tokens) for each table a page shows.
const loadGeneric = (prefix, levels, name) => get(generic(prefix,
  `/namespaces/${nsPath(levels)}/generic-tables/${encodeURIComponent(name)}`),
{ "x-iceberg-access-delegation": "remote-signing" });

function genericFormat(prefix, levels, name) {
  const cell = h("span", { class: "format" }, "…");
  loadGeneric(prefix, levels, name)
    .then((g) => { cell.textContent = g.table.format; })
    .catch(() => { cell.textContent = "?"; });
  return cell;
}

// Move or rename a namespace with everything in it (Lakekeeper's POST .../namespace/{id}/move takes the full new
// path). The new parent is written dotted, so a level whose own name has a dot cannot be a new parent here.
function moveForm(prefix, levels, namespaceId) {
  const out = h("div", { class: "out" });
  const form = h("form", { id: "move-namespace", class: "stack", onsubmit: async (ev) => {
    ev.preventDefault();
    const parent = form.elements.parent.value.trim();
    const destination = [...(parent ? parent.split(".") : []), form.elements.name.value.trim()];
    try {
      const moved = await post(`/management/v1/warehouse/${warehouseId(prefix)}/namespace/${namespaceId}/move`,
        { destination, force: form.elements.force.checked });
      location.hash = hrefNamespace(prefix, moved.namespace);
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  } }, h("label", {}, "New parent (levels separated by dots, empty for the top level) ",
    h("input", { name: "parent", value: levels.slice(0, -1).join(".") })),
  h("label", {}, "New name ", h("input", { name: "name", value: levels[levels.length - 1], required: true })),
  checkbox("even if it is protected", "force"),
  h("p", {}, h("button", { type: "submit" }, "Move or rename")), out);
  return [h("h2", {}, "Move or rename"), form];
}

// Drop and rename of a table, a view or a generic table: the same two calls under each kind's own API.
const TABULAR_APIS = {
  table: { base: catalog, items: "tables", rename: "/tables/rename" },
  view: { base: catalog, items: "views", rename: "/views/rename" },
  "generic-table": { base: generic, items: "generic-tables", rename: "/generic-tables/rename" },
};

function tabularActions(kind, prefix, levels, name) {
  const apis = TABULAR_APIS[kind];
  const out = h("div", { class: "out" });
  const drop = h("button", { class: "danger", id: "drop", onclick: async () => {
    if (!confirm(`Drop ${kind} ${nsName([...levels, name])}?`)) return;
    try {
      await api("DELETE", apis.base(prefix, `/namespaces/${nsPath(levels)}/${apis.items}/${encodeURIComponent(name)}`));
      out.replaceChildren(h("div", { class: "ok", id: "dropped" }, `Dropped. `, h("a", { href: `#/wh/${
        warehouseId(prefix)}/bin` }, "The recycle bin"), " has it while the warehouse keeps dropped objects."));
      drop.disabled = true;
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  } }, "Drop");
  const rename = h("form", { id: "rename", onsubmit: async (ev) => {
    ev.preventDefault();
    const parent = rename.elements.namespace.value.trim();
    const destination = { namespace: parent ? parent.split(".") : [], name: rename.elements.name.value.trim() };
    try {
      await post(apis.base(prefix, apis.rename), { source: { namespace: levels, name }, destination });
      location.hash = hrefTabular[kind](prefix, destination.namespace, destination.name);
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  } }, "Rename to ", h("input", { name: "namespace", value: nsName(levels), "aria-label": "namespace" }), " . ",
  h("input", { name: "name", value: name, required: true, "aria-label": "name" }), " ",
  h("button", { type: "submit" }, "Rename"));
  return h("div", { class: "actions" }, h("p", {}, drop), rename, out);
}

async function genericTablePage(prefix, levels, name) {
  const past = showPast(prefix);
  const g = (await loadGeneric(prefix, levels, name)).table;
  page(crumbs(prefix, levels, name), h("h1", {}, `Generic table ${nsName(levels)}.${g.name}`),
    table(["Format", "Location", "Protected"], [[g.format, g["base-location"], g.protected ? "yes" : "no"]]),
    g.doc ? [h("h2", {}, "Doc"), h("p", { id: "doc" }, g.doc)] : null,
    h("h2", {}, "Properties"), table(["Key", "Value"], Object.entries(g.properties || {})),
    g.schema !== undefined ? [h("h2", {}, "Schema (as its creator gave it)"), json(g.schema)] : null,
    g.statistics !== undefined ? [h("h2", {}, "Statistics (as its creator gave them)"), json(g.statistics)] : null,
    past ? null : [tagsSection("generic-table", warehouseId(prefix), genericTableId(prefix, levels, g.name)),
      h("h2", {}, "Drop or rename"), tabularActions("generic-table", prefix, levels, g.name)]);
}

function typeText(t) {
  if (typeof t === "string") return t;
  if (t.type === "list") return `list<${typeText(t.element)}>`;
  if (t.type === "map") return `map<${typeText(t.key)}, ${typeText(t.value)}>`;
  if (t.type === "struct") return `struct<${t.fields.map((f) => `${f.name}: ${typeText(f.type)}`).join(", ")}>`;
  return JSON.stringify(t);
}

function schemaTable(schema) {
  return table(["Id", "Name", "Type", "Required", "Doc", "Defaults"], schema.fields.map((f) => [
    String(f.id), f.name, typeText(f.type), f.required ? "yes" : "no", f.doc || "",
    [f["initial-default"] !== undefined ? `initial ${JSON.stringify(f["initial-default"])}` : "",
      f["write-default"] !== undefined ? `write ${JSON.stringify(f["write-default"])}` : ""].filter(Boolean).join(", "),
  ]));
}

function chart(title, points) {
  const W = 360, H = 160, L = 48, B = 22;
  const svg = (tag, attrs) => {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    return el;
  };
  const root = svg("svg", { width: W, height: H, role: "img", "aria-label": title });
  const label = svg("text", { x: L, y: 12 });
  label.textContent = title;
  root.append(label);
  if (points.length) {
    const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
    const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.max(...ys, 1);
    const x = (v) => L + (x1 === x0 ? (W - L - 8) / 2 : ((v - x0) / (x1 - x0)) * (W - L - 8));
    const y = (v) => H - B - (v / y1) * (H - B - 20);
    root.append(svg("polyline", { points: points.map((p) => `${x(p[0])},${y(p[1])}`).join(" "), fill: "none",
      stroke: "#2454c5", "stroke-width": 2 }));
    for (const p of points) root.append(svg("circle", { cx: x(p[0]), cy: y(p[1]), r: 2.5, fill: "#2454c5" }));
    const top = svg("text", { x: 2, y: 24 });
    top.textContent = y1.toLocaleString();
    const first = svg("text", { x: L, y: H - 6 });
    first.textContent = new Date(x0).toISOString().slice(0, 16).replace("T", " ");
    root.append(top, first);
  }
  return h("div", { class: "chart" }, root);
}

async function tablePage(prefix, levels, name) {
  const past = showPast(prefix);
  const t = await get(catalog(prefix, `/namespaces/${nsPath(levels)}/tables/${encodeURIComponent(name)}`));
  const m = t.metadata;
  const schema = (m.schemas || []).find((s) => s["schema-id"] === m["current-schema-id"]) || m.schemas[0];
  const spec = (m["partition-specs"] || []).find((s) => s["spec-id"] === m["default-spec-id"]);
  const order = (m["sort-orders"] || []).find((s) => s["order-id"] === m["default-sort-order-id"]);
  const snapshots = [...(m.snapshots || [])].sort((a, b) => a["timestamp-ms"] - b["timestamp-ms"]);
  const series = (key) => snapshots.filter((s) => s.summary && s.summary[key] !== undefined)
    .map((s) => [s["timestamp-ms"], Number(s.summary[key])]);
  const history = h("div", { id: "table-history" });
  const reports = h("div", { id: "table-reports" });
  const wid = warehouseId(prefix);
  page(crumbs(prefix, levels, name), h("h1", {}, `Table ${nsName(levels)}.${name}`),
    table(["Format", "Location", "Table uuid", "Protection"], [[`v${m["format-version"]}`, m.location,
      m["table-uuid"], past ? "" : protectionToggleLoaded(`/management/v1/warehouse/${wid}/table/${m["table-uuid"]}/protection`)]]),
    h("h2", {}, "Schema"), schemaTable(schema),
    h("h2", {}, "Partition spec"), spec && spec.fields.length ? table(["Source id", "Transform", "Name", "Field id"],
      spec.fields.map((f) => [String(f["source-id"]), f.transform, f.name, String(f["field-id"] ?? "")]))
      : h("p", { class: "muted" }, "Unpartitioned."),
    h("h2", {}, "Sort order"), order && order.fields.length ? table(["Source id", "Transform", "Direction", "Nulls"],
      order.fields.map((f) => [String(f["source-id"]), f.transform, f.direction, f["null-order"]]))
      : h("p", { class: "muted" }, "Unsorted."),
    h("h2", {}, "Properties"), table(["Key", "Value"], Object.entries(m.properties || {})),
    h("h2", {}, "Snapshots over time"), h("div", { class: "charts", id: "charts" },
      chart("records", series("total-records")), chart("data files", series("total-data-files")),
      chart("size (bytes)", series("total-files-size"))),
    h("h2", {}, "Snapshots"), table(["Id", "Time", "Operation", "Records", "Files", "Parent"],
      snapshots.slice().reverse().map((s) => [String(s["snapshot-id"]), when(s["timestamp-ms"]),
        (s.summary || {}).operation || "", (s.summary || {})["total-records"] || "",
        (s.summary || {})["total-data-files"] || "", String(s["parent-snapshot-id"] ?? "")]), "No snapshots."),
    h("h2", {}, "Refs"), table(["Name", "Type", "Snapshot"], Object.entries(m.refs || {}).map(([k, r]) =>
      [k, r.type, String(r["snapshot-id"])])),
    h("h2", {}, "History"), history,
    past ? null : [h("h2", {}, "Scans and commits reported"), reports, tagsSection("table", wid, m["table-uuid"]),
      maintenanceSection("table", wid, m["table-uuid"]),
      h("h2", {}, "Drop or rename"), tabularActions("table", prefix, levels, name),
      accessSection(wid, { kind: "table", id: m["table-uuid"] }, `warehouse/${wid}/table/${m["table-uuid"]}`)]);
  if (!past) {
    await pagedList(`/management/v1/warehouse/${wid}/table/${m["table-uuid"]}/metrics-reports`, "reports", reportRows,
      reports).catch((e) => reports.replaceChildren(fail(e)));
  }
  await timeline(`/management/v1/warehouse/${wid}/history?tabular-id=${m["table-uuid"]}`, history, wid);
}

// The scan and commit reports engines sent (docs/metrics-reports.md): who read or wrote what, and how much.
function reportRows(reports) {
  const figure = (v) => (v === null || v === undefined ? "" : String(v));
  const what = (r) => (r["report-type"] === "scan-report"
    ? `scan ${r.filter === true ? "(no filter)" : JSON.stringify(r.filter)}` : `commit ${r.operation || ""}`);
  return table(["Time", "Who", "What", "Snapshot", "Files", "Bytes", "Records", "Duration (ms)"],
    reports.map((r) => [r["reported-at"], r.actor, what(r), figure(r["snapshot-id"]), figure(r.figures.files),
      figure(r.figures.bytes), figure(r.figures.records),
      r.figures["duration-ms"] === null ? "" : r.figures["duration-ms"].toFixed(1)]),
    "No scan or commit reports yet (Spark and other Java engines send them; pyiceberg does not).");
}

function protectionToggleLoaded(path) {
  const holder = h("span", {}, "…");
  get(path).then((r) => holder.replaceChildren(protectionToggle(path, r.protected)))
    .catch((e) => holder.replaceChildren(fail(e)));
  return holder;
}

async function viewPage(prefix, levels, name) {
  const past = showPast(prefix);
  const v = await get(catalog(prefix, `/namespaces/${nsPath(levels)}/views/${encodeURIComponent(name)}`));
  const m = v.metadata;
  const history = h("div", { id: "view-history" });
  page(crumbs(prefix, levels, name), h("h1", {}, `View ${nsName(levels)}.${name}`),
    table(["Format", "Location", "View uuid", "Current version"], [[`v${m["format-version"]}`, m.location,
      m["view-uuid"], String(m["current-version-id"])]]),
    h("h2", {}, "Versions"), m.versions.slice().reverse().map((ver) => h("div", { class: "event" },
      h("div", { class: "head" }, h("span", { class: "type" }, `version ${ver["version-id"]}`),
        h("span", {}, when(ver["timestamp-ms"])), h("span", { class: "muted" },
          `schema ${ver["schema-id"]}, default namespace ${(ver["default-namespace"] || []).join(".")}`)),
      ver.representations.map((r) => [h("div", { class: "muted" }, `${r.dialect}:`), h("pre", {}, r.sql)]))),
    h("h2", {}, "History"), history,
    past ? null : [tagsSection("view", warehouseId(prefix), m["view-uuid"]),
      h("h2", {}, "Drop or rename"), tabularActions("view", prefix, levels, name)]);
  await timeline(`/management/v1/warehouse/${warehouseId(prefix)}/history?tabular-id=${m["view-uuid"]}`, history,
    warehouseId(prefix));
}

// ---- history ----

// `schemas`: entity id → the fields of its schema last seen in this timeline, to show a new schema as columns added
// and removed
function changeView(event, schemas) {
  const c = event.change || {};
  const out = [];
  const entity = event.entity && event.entity.id;
  if (event.type === "table.created" && c.request && c.request.schema) {
    schemas.set(entity, c.request.schema.fields);
    out.push(h("div", { class: "added" }, "+ columns " +
      c.request.schema.fields.map((f) => `${f.name} (${typeText(f.type)})`).join(", ")));
  }
  for (const u of c.updates || []) {
    switch (u.action) {
      case "set-properties":
        for (const [k, v] of Object.entries(u.updates)) out.push(h("div", { class: "added" }, `+ property ${k} = ${v}`));
        break;
      case "remove-properties":
        for (const k of u.removals) out.push(h("div", { class: "removed" }, `− property ${k}`));
        break;
      case "add-snapshot": {
        const s = u.snapshot.summary || {};
        out.push(h("div", { class: "added" }, `+ snapshot ${u.snapshot["snapshot-id"]} (${s.operation || "?"}):` +
          ` ${s["added-records"] || 0} records, ${s["added-data-files"] || 0} files added;` +
          ` ${s["deleted-records"] || 0} records, ${s["deleted-data-files"] || 0} files removed`));
        break;
      }
      case "add-schema": {
        const before = schemas.get(entity);
        const fields = u.schema.fields;
        if (before) {
          const had = new Map(before.map((f) => [f.id, f]));
          const has = new Set(fields.map((f) => f.id));
          for (const f of fields) {
            const old = had.get(f.id);
            if (!old) out.push(h("div", { class: "added" }, `+ column ${f.name} (${typeText(f.type)})`));
            else if (old.name !== f.name) out.push(h("div", {}, `column ${old.name} renamed to ${f.name}`));
            else if (typeText(old.type) !== typeText(f.type)) {
              out.push(h("div", {}, `column ${f.name}: ${typeText(old.type)} → ${typeText(f.type)}`));
            }
          }
          for (const f of before) if (!has.has(f.id)) out.push(h("div", { class: "removed" }, `− column ${f.name}`));
        } else {
          out.push(h("div", {}, `schema ${u.schema["schema-id"] ?? ""}: ` +
            fields.map((f) => `${f.name} (${typeText(f.type)})`).join(", ")));
        }
        schemas.set(entity, fields);
        break;
      }
      case "set-snapshot-ref":
        out.push(h("div", {}, `ref ${u["ref-name"]} → snapshot ${u["snapshot-id"]}`));
        break;
      default:
        out.push(h("div", { class: "muted" }, u.action));
    }
  }
  if (!out.length && Object.keys(c).length) out.push(h("details", {}, h("summary", {}, "recorded data"), json(c)));
  return out;
}

function eventView(e, wid, schemas) {
  const name = e.entity && e.entity.name ? (Array.isArray(e.entity.name) ? e.entity.name.join(".") : e.entity.name) : "";
  return h("div", { class: "event", "data-type": e.type },
    h("div", { class: "head" }, h("span", { class: "type" }, e.type), h("span", {}, name),
      h("span", { class: "muted" }, e.time), h("span", {}, `by ${e.actor}`),
      h("span", { class: "muted" }, `request ${e["request-id"]}`),
      wid ? h("a", { href: hrefWarehouse(`${wid}@seq:${e.sequence}`), class: "at-this-moment" },
        "the catalog at this moment") : null),
    h("div", {}, e.summary || ""), changeView(e, schemas));
}

async function timeline(path, container, wid) {
  const schemas = new Map();
  await pagedList(path, "events", (events) => h("div", {}, events.length
    ? events.map((e) => eventView(e, wid, schemas)) : h("p", { class: "muted" }, "No events.")), container);
}

async function warehouseHistoryPage(wid) {
  showPast("");
  const w = await get(`/management/v1/warehouse/${wid}`);
  const list = h("div", { id: "history" });
  page(crumbs(wid, [], "history"), h("h1", {}, `History of warehouse ${w.name}`),
    h("p", { class: "muted" }, "Oldest first; every change with who made it, when, and the request."), list);
  await timeline(`/management/v1/warehouse/${wid}/history`, list, wid);
}

async function serverHistoryPage() {
  showPast("");
  const list = h("div", { id: "history" });
  page(h("h1", {}, "Server history"), h("p", { class: "muted" }, "Bootstrap, projects, warehouses, users, roles."),
    list);
  await timeline("/management/v1/history", list, null);
}

// ---- who may do what ----

const RELATIONS = ["describe", "select", "modify", "ownership", "manage_grants", "pass_grants", "create",
  "manage_maintenance"];

// `object`: {kind: "table"|"view"|"namespace"|"warehouse", id}; `permissions`: its path under
// /management/v1/permissions/ (Lakekeeper's), `wid`: its warehouse.
function accessSection(wid, object, permissions) {
  const holder = h("div", { id: "access" });
  const asOf = h("form", { id: "access-at", onsubmit: (ev) => {
    ev.preventDefault();
    const at = asOf.elements.at.value.trim();
    show(at ? instant(at) : null).catch((e) => holder.replaceChildren(fail(e)));
  } }, h("label", {}, "Who held which right at ", h("input", { name: "at", placeholder: "an instant (empty: now)" })),
  " ", h("button", { type: "submit" }, "Show"));
  const grant = h("form", { id: "grant", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = grant.elements;
    const write = { type: f.relation.value, [f.kind.value]: f.principal.value.trim() };
    try {
      await post(`/management/v1/permissions/${permissions}/assignments`, { writes: [write] });
      grant.reset();
      await show(null);
    } catch (e) {
      holder.prepend(fail(e));
    }
  } }, "Grant ", h("select", { name: "relation" }, RELATIONS.map((r) => h("option", { value: r }, r))), " to ",
  h("select", { name: "kind" }, h("option", { value: "user" }, "user"), h("option", { value: "role" }, "role")), " ",
  h("input", { name: "principal", placeholder: "oidc~bob or a role id", required: true }), " ",
  h("button", { type: "submit" }, "Grant"));

  async function revoke(write) {
    try {
      await post(`/management/v1/permissions/${permissions}/assignments`, { deletes: [write] });
      await show(null);
    } catch (e) {
      holder.prepend(fail(e));
    }
  }

  async function show(at) {
    const q = new URLSearchParams(object.kind === "warehouse" ? {} : { [object.kind]: object.id });
    if (at) q.set("at", at);
    const found = await get(`/management/v1/warehouse/${wid}/access-history?${q}`);
    holder.replaceChildren(h("p", { class: "muted" }, at ? `At ${at} (log position ${found.position}):`
      : `Now (log position ${found.position}):`), table(["Who", "Rights", "Through"], found.holders.map((x) => [
      x.user ? `user ${x.user}` : `role ${x.role}`, x.rights.join(", "),
      h("div", {}, x.through.map((t) => {
        const direct = t.source === "grant" && t.on.id === object.id && !t.roles.length;
        return h("div", {}, `${t.relation} on ${t.on.type} ${t.on.id === object.id ? "(this)" : t.on.id}`,
          h("span", { class: "muted" }, ` — ${t.source}${t["granted-by"] ? ` by ${t["granted-by"]}` : ""}` +
            `${t["granted-at"] ? ` at ${t["granted-at"]}` : ""}${t.roles.length ? ` via roles ${t.roles.join(" → ")}` : ""}`),
          direct && !at ? [" ", h("button", { class: "revoke", onclick: () => revoke(
            { type: t.relation, ...(x.user ? { user: x.user } : { role: x.role }) }) }, "Revoke")] : null);
      })),
    ]), "Nobody holds a right here (or everyone does: authorization is allowall)."));
  }

  show(null).catch((e) => holder.replaceChildren(fail(e)));
  return [h("h2", {}, "Who may do what"), grant, asOf, holder];
}

// ---- governance tags ----

const TAG_SCOPES = ["warehouse", "namespace", "table", "view", "generic-table", "column"];
const VALUE_KINDS = { marker: "marker (no value)", "free-text": "free text", enumerated: "one of the allowed values" };

// every page of a project's tag definitions
async function tagDefinitions(projectId) {
  const all = [];
  let next = null;
  do {
    const q = `pageSize=${PAGE}${next ? `&pageToken=${encodeURIComponent(next)}` : ""}`;
    const found = await get(`/management/v1/tag-definition?${q}`, { "x-project-id": projectId });
    all.push(...found["tag-definitions"]);
    next = found["next-page-token"] || null;
  } while (next);
  return all;
}

// A tag on an object is named in its warehouse's project: the project is asked of the API once per warehouse.
const warehouseProjects = new Map();
function projectOf(wid) {
  if (!warehouseProjects.has(wid)) {
    warehouseProjects.set(wid, get(`/management/v1/warehouse/${wid}`).then((w) => w["project-id"]));
  }
  return warehouseProjects.get(wid);
}

// A generic table's load carries no id; the tags API names it by one, found by searching its name.
async function genericTableId(prefix, levels, name) {
  const found = (await get(`/management/v1/warehouse/${warehouseId(prefix)}/search-tabulars?` +
    new URLSearchParams({ prefix: name, pageSize: PAGE }))).tabulars
    .filter((t) => t.type === "generic-table" && t.name.toLowerCase() === name.toLowerCase() &&
      nsName(t.namespace).toLowerCase() === nsName(levels).toLowerCase());
  const exact = found.find((t) => t.name === name && nsName(t.namespace) === nsName(levels)) || found[0];
  if (!exact) throw new Error(`generic table ${nsName([...levels, name])} was not found by search`);
  return exact.id;
}

// The tags of one object, shown with a control to put on a tag of the project's vocabulary and one to take each
// off. `kind`: the object's kind as the tags API names it (warehouse, namespace, table, view, generic-table);
// `id`: its id, or a promise of it.
function tagsSection(kind, wid, id) {
  const holder = h("div", { id: "tags" }, h("p", { class: "muted" }, "…"));
  const out = h("div", { class: "out" });
  let base = null;

  async function show() {
    const objectId = await id;
    base = kind === "warehouse" ? `/management/v1/warehouse/${wid}`
      : `/management/v1/warehouse/${wid}/${kind}/${objectId}`;
    const [own, definitions] = await Promise.all([get(`${base}/tags`), tagDefinitions(await projectOf(wid))]);
    const usable = definitions.filter((d) => d.scope.includes(kind) &&
      !own.tags.some((t) => t["tag-definition-id"] === d.id));
    holder.replaceChildren(table(["Tag", "Value", "Since", ""], own.tags.map((t) => [t.name, t.value ?? "",
      t["updated-at"] || t["created-at"], h("button", { class: "untag", "data-tag": t.name, onclick: () => act(
        () => api("DELETE", `${base}/tags/${encodeURIComponent(t.name)}`)) }, "Remove")]), `No tags on this ${kind}.`),
    usable.length ? addForm(usable) : h("p", { class: "muted" }, `No other tag definition may be put on a ${kind}: `,
      h("a", { href: "#/tags" }, "the project's tags"), " lists them and makes new ones."));
  }

  function addForm(usable) {
    const values = h("datalist", { id: "tag-values" });
    const form = h("form", { id: "tag-add", onsubmit: (ev) => {
      ev.preventDefault();
      const value = form.elements.value.value.trim();
      act(() => api("PUT", `${base}/tags/${encodeURIComponent(form.elements.tag.value)}`,
        value ? { value } : {}));
    } }, "Add the tag ", h("select", { name: "tag", onchange: () => offer(form, values, usable) },
      usable.map((d) => h("option", { value: d.name }, d.name))), " with the value ",
    h("input", { name: "value", list: "tag-values", "aria-label": "value" }), " ",
    h("button", { type: "submit" }, "Add"), values);
    offer(form, values, usable);
    return form;
  }

  // the value input as the chosen definition takes it: none for a marker, a choice of the allowed values
  async function offer(form, values, usable) {
    const chosen = usable.find((d) => d.name === form.elements.tag.value);
    form.elements.value.disabled = chosen["value-kind"] === "marker";
    form.elements.value.placeholder = chosen["value-kind"] === "marker" ? "(a marker has none)" : chosen["value-kind"];
    values.replaceChildren();
    if (chosen["value-kind"] === "enumerated") {
      const full = await get(`/management/v1/tag-definition/${chosen.id}`,
        { "x-project-id": await projectOf(wid) }).catch(() => ({ "allowed-values": [] }));
      values.replaceChildren(...(full["allowed-values"] || []).map((v) => h("option", { value: v })));
    }
  }

  async function act(call) {
    try {
      await call();
      out.replaceChildren();
      await show();
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  }

  show().catch((e) => holder.replaceChildren(fail(e)));
  return [h("h2", {}, "Tags"), holder, out];
}

// ---- maintenance policies ----

// The effective maintenance policy of a warehouse, namespace or table (docs/maintenance-policies.md): per type every
// setting with its value and where it comes from, and a form for what the object sets itself. The form's inputs
// follow each setting's JSON type in the effective answer (a yes/no choice, a number, an ISO-8601 duration); an
// empty input inherits. Saving PUTs the filled ones (the type's settings whole), Remove DELETEs them: the user's
// own API calls, so a right they lack (manage_maintenance) shows as the API's message.
function maintenanceSection(kind, wid, id) {
  const holder = h("div", { id: "maintenance" }, h("p", { class: "muted" }, "…"));
  const base = kind === "warehouse" ? `/management/v1/warehouse/${wid}`
    : `/management/v1/warehouse/${wid}/${kind}/${id}`;

  const from = (source) => {
    if (source.type === "default") return h("span", { class: "muted" }, "default");
    if (source.id === id) return `this ${kind}`;
    return `${source.type} ${(source.name || [source.id]).join(".")}`;
  };

  function input(name, value, own) {
    const has = own !== undefined;
    if (typeof value === "boolean") {
      return h("select", { name, "aria-label": name }, h("option", { value: "" }, "inherit"),
        h("option", { value: "true", selected: has && own === true }, "yes"),
        h("option", { value: "false", selected: has && own === false }, "no"));
    }
    if (typeof value === "number") {
      return h("input", { name, type: "number", min: 0, placeholder: "inherit", value: has ? String(own) : "",
        "aria-label": name });
    }
    return h("input", { name, placeholder: "inherit (e.g. P7D)", value: has ? own : "", "aria-label": name });
  }

  function typeForm(policy, own, out) {
    const names = Object.keys(policy.settings);
    const form = h("form", { class: "policy", "data-type": policy["policy-type"], onsubmit: (ev) => {
      ev.preventDefault();
      const body = {};
      for (const name of names) {
        const el = form.elements[name];
        const text = el.value.trim();
        if (!text) continue;
        const kindOf = typeof policy.settings[name].value;
        body[name] = kindOf === "boolean" ? text === "true" : kindOf === "number" ? Number(text) : text;
      }
      act(out, () => api("PUT", `${base}/maintenance-policies/${policy["policy-type"]}`, body));
    } }, table(["Setting", "Effective value", "From", `This ${kind}'s own`], names.map((name) => {
      const s = policy.settings[name];
      return [name, h("span", { class: "value" }, String(s.value)), h("span", { class: "source" }, from(s.source)),
        input(name, s.value, own ? own.settings[name] : undefined)];
    })), h("p", {}, h("button", { type: "submit", class: "primary policy-save" }, "Save"), " ",
      own ? h("button", { type: "button", class: "danger policy-remove", onclick: () => act(out,
        () => api("DELETE", `${base}/maintenance-policies/${policy["policy-type"]}`)) },
      `Remove this ${kind}'s own settings`) : h("span", { class: "muted" }, `This ${kind} sets none: all inherited.`)),
    out);
    return form;
  }

  async function act(out, call) {
    try {
      await call();
      await show();
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  }

  async function show() {
    const [effective, own] = await Promise.all([get(`${base}/effective-maintenance-policies`),
      get(`${base}/maintenance-policies`)]);
    const owned = new Map(own.policies.map((p) => [p["policy-type"], p]));
    holder.replaceChildren(...effective.policies.map((policy) => h("div", { class: "policy-type" },
      h("h3", {}, policy["policy-type"]), typeForm(policy, owned.get(policy["policy-type"]),
        h("div", { class: "out" })))));
  }

  show().catch((e) => holder.replaceChildren(fail(e)));
  return [h("h2", {}, "Maintenance"), h("p", { class: "muted" }, "What the catalog is to do to keep tables healthy, " +
    "set here or inherited from above; an empty field inherits."), holder];
}

async function tagsPage() {
  showPast("");
  const projects = (await get("/management/v1/project-list")).projects;
  const sections = [];
  for (const p of projects) {
    const project = p["project-id"];
    const definitions = await tagDefinitions(project);
    sections.push(h("h2", {}, `Project ${p["project-name"]}`), table(
      ["Name", "Value", "May be put on", "Description", "Made", ""], definitions.map((d) => [d.name,
        VALUE_KINDS[d["value-kind"]] || d["value-kind"], d.scope.join(", "), d.description || "", d["created-at"],
        h("button", { class: "danger delete-tag", "data-id": d.id, onclick: () => deleteDefinition(project, d) },
          "Delete")]), "No tag definitions yet."));
  }
  const out = h("div", { id: "tag-result" });
  const allowed = h("label", { hidden: true }, "Allowed values (comma-separated) ", h("input", { name: "allowed" }));
  const form = h("form", { class: "stack", id: "tag-definition-form", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = form.elements;
    const kind = f["value-kind"].value;
    const body = { name: f.name.value.trim(), description: f.description.value.trim() || undefined,
      scope: TAG_SCOPES.filter((s) => f[`scope-${s}`].checked), "value-kind": kind,
      "allowed-values": kind === "enumerated" ? f.allowed.value.split(",").map((v) => v.trim()).filter(Boolean)
        : undefined };
    try {
      await post("/management/v1/tag-definition", body, { "x-project-id": f.project.value });
      await tagsPage();
    } catch (e) {
      out.replaceChildren(fail(e));
    }
  } }, h("label", {}, "Project ", h("select", { name: "project" }, projects.map((p) =>
    h("option", { value: p["project-id"] }, p["project-name"])))),
  field("Name (dots make a hierarchy: pii.classification)", "name", { required: true }),
  field("Description", "description"),
  h("label", {}, "Value ", h("select", { name: "value-kind", onchange: (ev) => {
    allowed.hidden = ev.target.value !== "enumerated";
  } }, Object.entries(VALUE_KINDS).map(([k, text]) => h("option", { value: k }, text)))), allowed,
  h("fieldset", {}, h("legend", {}, "May be put on"), TAG_SCOPES.map((s) => checkbox(s, `scope-${s}`, true))),
  h("p", {}, h("button", { type: "submit", class: "primary", id: "create-tag" }, "Create")), out);
  page(h("h1", {}, "Tags"), h("p", { class: "muted" }, "Each project's governance vocabulary: what may be put on " +
    "warehouses, namespaces, tables, views and generic tables, from their pages."), sections,
  h("h2", {}, "Create a tag definition"), form);
}

async function deleteDefinition(project, d) {
  if (!confirm(`Delete the tag definition ${d.name}? It must not be on anything.`)) return;
  try {
    await api("DELETE", `/management/v1/tag-definition/${d.id}`, undefined, { "x-project-id": project });
    await tagsPage();
  } catch (e) {
    main.prepend(fail(e));
  }
}

// ---- people ----

async function peoplePage() {
  showPast("");
  const users = h("div", { id: "users" });
  const roles = h("div", { id: "roles" });
  page(h("h1", {}, "Users and roles"), h("h2", {}, "Users"), users, h("h2", {}, "Roles"), roles);
  await pagedList("/management/v1/user", "users", (list) => table(["Id", "Name", "Email", "Type", "Since"],
    list.map((u) => [u.id, u.name || "", u.email || "", u["user-type"], u["created-at"]]), "No users yet."), users);
  await pagedList("/management/v1/role", "roles", (list) => table(["Name", "Id", "Description"],
    list.map((r) => [r.name, r.id, r.description || ""]), "No roles yet."), roles);
}

// ---- recycle bin ----

async function binPage(wid) {
  showPast("");
  const w = await get(`/management/v1/warehouse/${wid}`);
  const list = h("div", { id: "bin" });
  page(crumbs(wid, [], "recycle bin"), h("h1", {}, `Recycle bin of ${w.name}`),
    h("p", { class: "muted" }, w["delete-profile"].type === "soft"
      ? `Dropped tables, views and generic tables stay restorable for ${w["delete-profile"]["expiration-seconds"]} s.`
      : "This warehouse deletes at once (hard delete profile): nothing is kept here."), list);
  // A table or view taken along by a recursive namespace drop comes back only with that namespace's whole tree.
  const undrop = (target, label) => h("button", { class: "undrop", "data-target": target.type, onclick: async (ev) => {
    try {
      await post(`/management/v1/warehouse/${wid}/deleted-tabulars/undrop`, { targets: [target] });
      for (const b of list.querySelectorAll(`button[data-id="${target.id}"]`)) {
        b.replaceWith(h("span", { class: "ok" }, "undropped"));
      }
    } catch (e) {
      ev.target.after(fail(e));
    }
  }, "data-id": target.id }, label);
  await pagedList(`/management/v1/warehouse/${wid}/deleted-tabulars`, "tabulars", (items) => table(
    ["Name", "Type", "Deleted at", "Expires at", ""], items.map((t) => [
      [...t.namespace, t.name].join("."), t["dropped-with"] ? `${t.typ}, with its namespace` : t.typ,
      t["deleted-at"], t["expiration-date"] || "",
      t["dropped-with"] ? undrop({ type: "namespace", id: t["dropped-with"] }, "Undrop the namespace tree")
        : undrop({ type: t.typ, id: t.id }, "Undrop")]), "Nothing was dropped."), list);
}

// ---- routing ----

const routes = [
  [/^\/?$/, () => warehousesPage()],
  [/^\/new-warehouse$/, () => newWarehousePage()],
  [/^\/server-history$/, () => serverHistoryPage()],
  [/^\/people$/, () => peoplePage()],
  [/^\/tags$/, () => tagsPage()],
  [/^\/wh\/([^/]+)\/history$/, (m) => warehouseHistoryPage(m[1])],
  [/^\/wh\/([^/]+)\/bin$/, (m) => binPage(m[1])],
  [/^\/wh\/([^/]+)\/ns\/([^/]+)\/table\/([^/]+)$/, (m) => tablePage(m[1], levelsOf(m[2]), decodeURIComponent(m[3]))],
  [/^\/wh\/([^/]+)\/ns\/([^/]+)\/view\/([^/]+)$/, (m) => viewPage(m[1], levelsOf(m[2]), decodeURIComponent(m[3]))],
  [/^\/wh\/([^/]+)\/ns\/([^/]+)\/generic-table\/([^/]+)$/,
    (m) => genericTablePage(m[1], levelsOf(m[2]), decodeURIComponent(m[3]))],
  [/^\/wh\/([^/]+)\/ns\/([^/]+)$/, (m) => namespacePage(m[1], levelsOf(m[2]))],
  [/^\/wh\/([^/]+)$/, (m) => warehousePage(m[1])],
];

const levelsOf = (path) => path.split(SEP).map(decodeURIComponent);

function signInPage() {
  page(h("h1", {}, "Sign in"), h("p", {}, "This catalog needs you to sign in with its identity provider."),
    h("button", { class: "primary", id: "sign-in", onclick: () => signIn(config).catch((e) => main.append(fail(e))) },
      "Sign in"));
}

async function route() {
  const path = location.hash.replace(/^#/, "") || "/";
  const found = routes.find(([re]) => re.test(path));
  main.setAttribute("aria-busy", "true");
  try {
    if (config.authentication && !token()) signInPage();
    else if (!found) throw new Error(`No page at ${path}`);
    else await found[1](path.match(found[0]));
  } catch (e) {
    page(fail(e));
  } finally {
    main.setAttribute("aria-busy", "false");
  }
}

async function who() {
  const who = document.getElementById("who");
  if (!config.authentication) {
    who.textContent = "anonymous (authentication is off)";
    return;
  }
  if (!token()) return;
  const me = await get("/management/v1/whoami");
  who.replaceChildren(h("span", { id: "user" }, me.id), " ",
    h("button", { id: "sign-out", onclick: () => { signOut(); location.assign("/ui"); } }, "Sign out"));
}

async function start() {
  config = await get("/ui/config.json");
  if (config.authentication) await finishSignIn(config);
  window.addEventListener("hashchange", route);
  await who();
  await route();
}

start().catch((e) => page(fail(e)));
