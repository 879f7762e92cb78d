# Everything a developer or CI needs, with only Go installed.
GO      ?= go
BIN     := bin
REPORTS ?= reports/latest
FUZZTIME ?= 30s

.PHONY: all build test tools conformance bench fuzz vet fmt-check checks-doc clean

all: build

build:
	$(GO) build -o $(BIN)/gwsim ./cmd/gwsim
	$(GO) build -o $(BIN)/gwconform ./cmd/gwconform

# The whole suite against the embedded simulator; reports in $(REPORTS).
conformance: build
	./$(BIN)/gwconform run --report-dir $(REPORTS)

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

test: vet fmt-check tools
	$(GO) test -race -count=1 ./...

# The examples test sends the published examples with curl, as an app
# developer would; install it where it is missing and we can.
tools:
	@command -v curl >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "test: installing curl (apt-get install -y curl)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y curl >/dev/null 2>&1 || \
	      { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y curl >/dev/null 2>&1; }; \
	  fi; command -v curl >/dev/null 2>&1 || { echo "test: curl is needed (fixtures/examples_test.go)"; exit 1; }; }
	@# The dashboard's browser tests drive Debian's Chromium (simulator/server/browser_test.go).
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "test: installing chromium (apt-get install -y chromium)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 || \
	      { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1; }; \
	  fi; command -v chromium >/dev/null 2>&1 || { echo "test: chromium is needed (simulator/server/browser_test.go)"; exit 1; }; }

# Each fuzz target in turn for $(FUZZTIME) (make fuzz FUZZTIME=5m). Their
# seeds (testdata/fuzz/) also run in make test; crashers found are written
# there: keep them, they are the regression tests.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) ./simulator/codec
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeXML$$' -fuzztime $(FUZZTIME) ./simulator/codec
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./simulator/device
	$(GO) test -run '^$$' -fuzz '^FuzzHandler$$' -fuzztime $(FUZZTIME) ./simulator/server

# Measure gwsim and gwconform and write docs/benchmarks.md, which gives the
# command line of every figure. wrk drives the load comparison: installed
# here when it can be (root and apt-get); without it gwconform load stands in.
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
	./$(BIN)/gwbench --out docs/benchmarks.md

clean:
	rm -rf $(BIN) reports/latest

# Rewrite docs/checks.md from the suite's own metadata.
checks-doc:
	$(GO) run ./cmd/gwconform checks > docs/checks.md
