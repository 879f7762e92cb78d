# Everything a developer or CI needs. make test needs only Go; it also
# runs the tests that start redis-server, Chromium (/usr/bin/chromium) or
# curl when they are installed, and skips each of those with one line when
# they are not (under CI=true they fail instead: .ci/run installs them).
GO      ?= go
# -trimpath keeps absolute paths out of what the go command compiles, so
# its build cache is shared by every checkout of the module on a machine:
# a fresh clone then links the test binaries instead of compiling the
# module again with -race (docs/performance.md, "make test's time").
export GOFLAGS += -trimpath
# A program built with -race sleeps a second as it exits (the race
# detector's atexit_sleep_ms), in case another thread is still writing a
# report. go test fails a test on any race found while it runs, so the
# tests do without it: some fifty test processes would each hold one of
# go test's two places for a second. GORACE's other settings are kept.
export GORACE := atexit_sleep_ms=0 $(GORACE)
BIN     := bin
REPORTS ?= reports/latest
FUZZTIME ?= 30s
# How long make bench runs gwconform explore against gwsim in each setting
# (in memory, --state-file, three replicas on Redis); shorten it for a
# quick run (EXPLORE_DURATION=30s), 0 for none. docs/benchmarks.md says it.
EXPLORE_DURATION ?= 5m
# A line docs/benchmarks.md carries under "Where this ran", e.g. that other
# work shared the machine during the run.
BENCH_NOTE ?=

.PHONY: catalog image deploy-check all build test test-race test-heavy tools conformance bench fuzz vet fmt-check lint checks-doc docs-examples clean openapi openapi-check

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN)/gwsim ./cmd/gwsim
	$(GO) build -buildvcs=auto -o $(BIN)/gwconform ./cmd/gwconform

# The whole suite against the embedded simulator; reports in $(REPORTS).
conformance: build
	./$(BIN)/gwconform run --report-dir $(REPORTS)

# The image, tagged with the version its gwsim reports (gwsim --version,
# gwsim_build_info): by default the chart's appVersion, which
# deploy/k8s-image's newTag matches (TestImageVersionsAgree), so that what
# is built is what the recipes run. From a clean checkout only: the image
# reports its commit, and a tree with changes is not that commit.
# docs/deploy.md, "Building and publishing the image".
IMAGE   ?= ghcr.io/gwdmi/gwtools
VERSION ?= $(shell sed -n 's/^appVersion: *//p' deploy/helm/gwsim/Chart.yaml)
image:
	@git diff --quiet HEAD -- || { echo "make image: the tree has changes; commit them first (the image reports its commit)"; exit 1; }
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$$(git rev-parse HEAD) -t $(IMAGE):$(VERSION) .

# Every recipe validated offline, as TestKustomizeAndKubeconform and the
# chart's tests do (docs/deploy.md, "Validating offline"): kustomize and
# helm (pinned, run with go run), kubeconform -strict against schemas made
# from the Kubernetes OpenAPI document of a pinned module, Pod Security
# "restricted", the chart's refusals, promtool on the alerts. Once the
# module cache holds the pinned tools it needs no network (GOPROXY=off).
# The schemas are left in $(SCHEMAS) for your own overlays:
#   kubeconform -strict -schema-location '$(SCHEMAS)/{{.ResourceKind}}{{.KindSuffix}}.json' my.yaml
SCHEMAS ?= deploy/schemas
DEPLOY_CHECKS := TestKustomizeAndKubeconform|TestHelmChart|TestHelmChartRefusesWhatCannotWork|TestHelmAlertsWhateverTheReleaseName|TestPrometheusRules|TestPodsRestricted|TestKubernetesManifests|TestLoadJob|TestDockerfile
deploy-check:
	$(GO) test -count=1 -run '^($(DEPLOY_CHECKS))$$' ./deploy -args -schemas $(abspath $(SCHEMAS))
	@echo "deploy-check: the schemas are in $(SCHEMAS)"

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The suite-level tests (each runs the whole conformance suite once or
# dozens of times, or a cluster of real processes: every seed, every
# deviation, tampered bundles, Redis replicas and Cluster, every store
# backend, Chromium over the reports, kustomize and kubeconform) mark
# themselves with simtest.Heavy(t) on their first line: go test -short
# skips them. make test runs -short with the race detector; make
# test-heavy runs every test without it (the race detector makes the
# suite-level tests several times slower and finds nothing the rest does
# not: the same code runs under -race in the other tests of each package).

# staticcheck, pinned: the same findings on every machine.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	$(GO) run $(STATICCHECK) ./...

# Every test but the suite-level ones, with the race detector (test-race),
# and vet, gofmt and staticcheck beside it. go test runs one test binary
# more than there are cores (TEST_P): the binaries spend part of their time
# waiting on sockets and timers, and with one per core the cores idle for
# a third of the run (docs/performance.md, make test). -Oline keeps each
# line whole; make fails when any of them fails (GO=false shows it). Where
# the time goes: .ci/testtime runs test-race's go test with -json and
# prints the seconds of each package and of each test of 1 s or more.
# Tests that share nothing run in parallel (t.Parallel), and every test
# process uses one gwsim and one gwconform, linked once (simtest.Binary).
test:
	@$(MAKE) --no-print-directory -j4 -Oline fmt-check vet lint test-race

TEST_P ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))

test-race:
	$(GO) test -short -race -count=1 -p $(TEST_P) ./...

# Every test, the suite-level ones included, without -race: about 25 minutes.
test-heavy:
	$(GO) test -count=1 -timeout 80m ./...

# What the tests start for real where they find it: curl, redis-server,
# Chromium, nginx (the Compose recipe's proxy), ip and unshare (the docs'
# examples, each in a network namespace of its own), promtool (Debian's
# prometheus package: the alerting rules, deploy/prometheus). Installs what is missing with apt-get when run as root
# (.ci/run does); make test never installs anything.
tools:
	@for pair in curl:curl redis-server:redis-server chromium:chromium nginx:nginx ip:iproute2 unshare:util-linux promtool:prometheus pytest-3:python3-pytest; do \
	  cmd=$${pair%%:*}; pkg=$${pair#*:}; \
	  command -v $$cmd >/dev/null 2>&1 && continue; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "tools: installing $$pkg (apt-get install -y $$pkg)"; \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkg >/dev/null 2>&1 || \
	      { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkg >/dev/null 2>&1; }; } || \
	      { echo "tools: could not install $$pkg"; exit 1; }; \
	  else \
	    echo "tools: $$cmd is missing: install it (apt-get install -y $$pkg) or its tests skip"; exit 1; \
	  fi; \
	done
	@# The pytest plugin installs offline with Debian's setuptools and pip
	@# (simulator/pytest-gwsim), into a venv of the Python pytest-3 runs on.
	@py=$$(head -1 "$$(command -v pytest-3)" | sed 's/^#! *//; s/ .*//'); \
	for pair in setuptools:python3-setuptools pip:python3-pip; do \
	  mod=$${pair%%:*}; pkg=$${pair#*:}; \
	  "$$py" -c "import $$mod" >/dev/null 2>&1 && continue; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "tools: installing $$pkg (apt-get install -y $$pkg)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkg >/dev/null 2>&1 || { echo "tools: could not install $$pkg"; exit 1; }; \
	  else \
	    echo "tools: $$py cannot import $$mod: install it (apt-get install -y $$pkg) or its tests skip"; exit 1; \
	  fi; \
	done

# Each fuzz target in turn for $(FUZZTIME) (make fuzz FUZZTIME=5m). Their
# seeds (testdata/fuzz/) also run in make test; crashers found are written
# there: keep them, they are the regression tests.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) ./gatewayapi/codec
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeXML$$' -fuzztime $(FUZZTIME) ./gatewayapi/codec
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./gatewayapi/device
	$(GO) test -run '^$$' -fuzz '^FuzzHandler$$' -fuzztime $(FUZZTIME) ./simulator/server

# Measure gwsim and gwconform and write docs/benchmarks.md, which gives the
# command line of every figure (cmd/gwbench): gwsim with its default flags
# against a bare handler at 4 and 32 connections, RSS per device at 1M and
# a 10M-device start, the suite (serial and --parallel against a 20 ms
# gwsim when gwconform run has --parallel), gwsim on Redis with each
# --store-durability, the client report's cost, and gwconform explore
# --clients 8 against gwsim for EXPLORE_DURATION in each of three settings.
# About 25 minutes on 2 cores with the default 5m (3 x 5m of explore).
# wrk drives the load comparison: installed here when it can be (root and
# apt-get); without it gwconform load stands in.
bench: build
	@command -v wrk >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "bench: installing wrk (apt-get install -y wrk)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null 2>&1 || \
	      { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null 2>&1; } || \
	      echo "bench: could not install wrk; gwconform load stands in for it"; \
	  else \
	    echo "bench: wrk is not installed; gwconform load stands in for it"; \
	  fi; }
	$(GO) build -o $(BIN)/gwbench ./cmd/gwbench
	GO=$(GO) ./$(BIN)/gwbench --out docs/benchmarks.md --explore-duration $(EXPLORE_DURATION) --note "$(BENCH_NOTE)"

clean:
	rm -rf $(BIN) reports/latest

# After a check is added, removed or reworded (one declaration in
# conformance/checks, or one case in conformance/catalog): the catalog's
# next version with its hash pinned (conformance/catalogversion.go), then
# docs/checks.md, then the docs' example summaries from real runs. The
# tests that fail on a stale one of them say to run this.
catalog:
	$(GO) test -count=1 -run '^TestCatalogVersionNamesItsContent$$' ./conformance -update
	@$(MAKE) --no-print-directory checks-doc docs-examples

# Rewrite docs/checks.md from the suite's own metadata.
checks-doc:
	$(GO) run ./cmd/gwconform checks > docs/checks.md

# Rewrite the example summaries of docs/usage.md and docs/certification.md
# from real runs (TestDocsExampleSummaries fails when they are stale).
docs-examples:
	$(GO) test -count=1 -run '^TestDocsExampleSummaries$$' ./cmd/gwconform -update

# Rewrite docs/openapi.yaml (and Redocly's list of XML examples to skip)
# from the device table, the status table and the published examples. A
# test in make test fails when they are stale.
openapi:
	$(GO) test -count=1 -run '^TestDocumentIsCurrent$$' ./simulator/openapi -args -update

# Independent tools check docs/openapi.yaml: Redocly CLI lints it, and
# Prism, as a validating proxy in front of a real gwsim serve, checks every
# answer while the whole conformance suite runs through it. The npm tools
# are pinned in .ci/openapi/package-lock.json and installed there with
# npm ci (node_modules is not committed). Node.js 20+ and npm are needed:
# installed here when missing and possible (root and apt-get).
OPENAPI_TOOLS := .ci/openapi
openapi-check:
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "openapi-check: installing nodejs and npm (apt-get install -y nodejs npm)"; \
	    { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm >/dev/null 2>&1; }; \
	  fi; command -v npm >/dev/null 2>&1 || { echo "openapi-check: Node.js 20+ with npm is needed"; exit 1; }; }
	cd $(OPENAPI_TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	$(GO) test -count=1 -run '^TestDocumentIsCurrent$$' ./simulator/openapi
	cd $(OPENAPI_TOOLS) && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true ./node_modules/.bin/redocly lint --config redocly.yaml ../../docs/openapi.yaml
	$(GO) test -count=1 -v -run '^TestPrismProxy$$' ./simulator/openapi -args -prism=$(CURDIR)/$(OPENAPI_TOOLS)/node_modules/.bin/prism
