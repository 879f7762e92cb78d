# Everything a developer or CI needs. make test needs only Go; it also
# runs the tests that start redis-server, Chromium (/usr/bin/chromium) or
# curl when they are installed, and skips each of those with one line when
# they are not (under CI=true they fail instead: .ci/run installs them).
GO      ?= go
# -trimpath keeps absolute paths out of what the go command compiles, so
# its build cache is shared by every checkout of the module on a machine:
# a fresh clone then links the test binaries instead of compiling the
# module again with -race (measured: 271 s of CPU to compile them in a
# second clone without it, 26 s with it).
export GOFLAGS += -trimpath
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

.PHONY: all build test test-heavy tools conformance bench fuzz vet fmt-check lint checks-doc docs-examples clean openapi openapi-check

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN)/gwsim ./cmd/gwsim
	$(GO) build -buildvcs=auto -o $(BIN)/gwconform ./cmd/gwconform

# The whole suite against the embedded simulator; reports in $(REPORTS).
conformance: build
	./$(BIN)/gwconform run --report-dir $(REPORTS)

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The suite-level tests: each runs the whole conformance suite once or
# dozens of times (every seed, every deviation, a bundle tampered every
# way, 429 shedding waited out, both Redis replicas, a Redis Cluster,
# every store backend, every program and output searched for a secret...).
# They hold most of the time of the tests, and the race detector makes
# them several times slower while finding nothing the rest does not (the
# same code runs under -race in the other tests of each package). So they
# run in make test-heavy, without -race; .ci/run runs both targets.
# So do the slowest tests of make test (6 s or more each under -race, as
# .ci/testtime measured them at stop 34: whole runs of gwconform against
# gwsim, the hostile request catalog, every value of every type, the
# Redis replica and failover runs, the load report and the manifests in
# Chromium and kubeconform), which kept make test over 3 minutes.
HEAVY := TestSimulatorNeverFlagged|TestSlowThermostatIsJudgedAndTheRunEndsInTime|TestCalibrationIgnoresNoise|TestProbeOpenKeepsARealDifference|TestOpenFormsNeverFail|TestOpenFormsNeverFailShort|TestIndependentDeviationsOnlyEffectsShow|TestMutationScore|TestNoFalseFailureOnAnySeed|TestBundleVerifiesAndEveryTamperingFails|TestShedding429IsCertifiedWithoutFalseFailure|TestBaselineRerunAndReplay|TestSignCommandBesideTheFleetFile|TestFaultyTargetsFailTheRunAndTheReportNamesTheCheck|TestParallelVerdictsEqualSerial|TestShouldFailuresFailOnlyWithFailOnShould|TestConformanceOnEachReplica|TestReplicasOnRedisCluster|TestEveryBackend|TestNoSecretInAnyOutput|TestReportHTMLInChromium|TestReportFilesStayUnder2MB|TestVerifyNamesShouldAndKnownFailures|TestDocsExampleSummaries|TestLateChangesPassOnceSettled|TestNeverAppliedChangesFailWithoutWaitingEachTime|TestSlowDeviceIsJudgedAndTheRunEndsInTime|TestDiffFindsEachDeviation|TestDiffTwoVersions|TestDiffTwoCopiesAreTheSame|TestDiffGwsimAgainstAService|TestExploreGoesPastShouldDisagreements|TestFailoverResumesWithoutTheOldPrimary|TestDocExamplesRun|TestAppModuleUsesGwsimtest|TestIndependentTargetWithoutObserver|TestQuietPlainVersionedOutput|TestAdminTokenSkipReasonIsTrue|TestRunWithNoArgumentsPassesAgainstTheEmbeddedSimulator|TestConsoleForPeopleAndCILogs|TestIndependentTargetPassesThroughItsObserver|TestDimmerOnlyFleetIsPartial|TestRunAgainstGwsimServePassesAndPutsTheFleetBack|TestHostileCatalog|TestEveryTypeEveryValue|TestReplicatedWaitsForAReplica|TestReplicaKilledMidLoadLosesNoAcknowledgedChange|TestClientReportAcrossReplicas|TestSentinelFailoverLosesNoAcknowledgedChange|TestLoadReportInChromium|TestKustomizeAndKubeconform|TestSlowThermostatAloneIsJudgedAndTheRunEndsInTime|TestSlowThermostatAloneJudgesEveryFieldOfTheState
HEAVY_PKGS := ./cmd/gwconform ./simulator/redisstore ./fixtures ./simulator/gwsimtest ./conformance/explore ./conformance/diff ./simulator ./conformance/load ./deploy

# staticcheck, pinned: the same findings on every machine.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	$(GO) run $(STATICCHECK) ./...

# Every test but the suite-level ones, with the race detector; vet,
# gofmt and staticcheck (a few seconds with warm caches). Where the time
# goes: .ci/testtime runs this go test with -json and prints the seconds
# of each package and of each test of 1 s or more, and the CPU time of
# the whole run. Tests that share nothing run in parallel (t.Parallel:
# the gwconform runs of cmd/gwconform, the redis-servers of
# simulator/redisstore), and every test process uses one gwsim and one
# gwconform, linked once (simtest.Binary). Measured on the 2-core machine
# while other work loaded it (load average 4-12 before, 6-16 after), so
# the wall times are high; compare the CPU times:
#   package (go test's Elapsed, s)  before  after
#   cmd/gwconform                      240    308
#   simulator/redisstore               113     27
#   conformance/explore                 17     28
#   conformance/load                    17     21
#   simulator                           18     19
#   cmd/gwsim                           15      9
#   simulator/server                    12     13
#   go test (.ci/testtime), wall       261    388
#   go test, CPU (user+sys)            300    273
#   make test, same checkout, wall       -    280 (load 6-10)
#   make test, same checkout, CPU        -    246
#   make test, fresh clone, wall         -    571 (load 9-13)
#   make test, fresh clone, CPU          -    405
# After the merge (main at 36b0ec5, TestNoSecretInAnyOutput moved to
# HEAVY, -trimpath below), on a quiet machine: make test from a fresh
# clone 143 s wall, 206 s CPU (cmd/gwconform 102 s, conformance/explore
# 23 s, simulator/redisstore 22 s, conformance/load 16 s); a cold build
# cache adds about 270 s of CPU to compile the module with -race.
# Stop 32 (main at 2e2cc68, after issues 26-31 and the whole-run tests
# that came with them moved to HEAVY): from a fresh clone 182 s wall,
# 258 s CPU, recompiling with -race what the last commit changed
# (cmd/gwconform 105 s, simulator/redisstore 28 s, conformance/load 21 s).
# Stop 34 (main at ca5b022, after the sixteen slowest tests moved to
# HEAVY): from a fresh clone 200 s wall, 265 s CPU, recompiling with
# -race what the stop changed (cmd/gwconform 87 s, simulator/server 15 s,
# conformance/load 12 s, conformance/explore 11 s); run again in that
# clone, 151 s wall, 210 s CPU (cmd/gwconform 89 s).
# Before: main at 0204a85, simulator/redisstore alone (not in the
# totals). Without -trimpath a fresh clone compiled the module again (go's
# cache keys held the directory): -race builds, vet and staticcheck cost
# about 180 s of CPU there before a test ran.
test: vet fmt-check lint
	$(GO) test -race -count=1 -skip '^($(HEAVY))$$' ./...

# The suite-level tests (HEAVY above), without -race: several minutes.
test-heavy:
	$(GO) test -count=1 -timeout 70m -run '^($(HEAVY))$$' $(HEAVY_PKGS)

# What the tests start for real where they find it: curl, redis-server,
# Chromium, nginx (the Compose recipe's proxy), ip and unshare (the docs'
# examples, each in a network namespace of its own). Installs what is missing with apt-get when run as root
# (.ci/run does); make test never installs anything.
tools:
	@for pair in curl:curl redis-server:redis-server chromium:chromium nginx:nginx ip:iproute2 unshare:util-linux; do \
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
