# Everything a developer or CI needs, with only Go installed.
GO      ?= go
BIN     := bin
REPORTS ?= reports/latest
FUZZTIME ?= 30s

.PHONY: all build test conformance bench fuzz vet fmt-check checks-doc clean

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

test: vet fmt-check
	$(GO) test -race -count=1 ./...

clean:
	rm -rf $(BIN) reports/latest

# Rewrite docs/checks.md from the suite's own metadata.
checks-doc:
	$(GO) run ./cmd/gwconform checks > docs/checks.md
