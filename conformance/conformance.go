// Package conformance is gwconform's suite: the checks of package checks,
// run by package engine against a target URL. cmd/gwconform reads the
// command line, prepares the engine's Env (target, fleet, client, signer;
// the embedded simulator too) and calls Execute once per process. The
// catalog's identity (CatalogVersion, CatalogHash) is the suite's: it
// changes with any check.
package conformance

import (
	"context"

	"github.com/gwdmi/gwtools/conformance/checks"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/conformance/report"
)

// Execute runs every check of the suite on cfg.Env (engine.Execute), the
// model-based phase within model, and returns the report document.
func Execute(ctx context.Context, cfg engine.Config, model checks.ModelBudget) (report.Document, error) {
	s := checks.New(cfg.Env, model)
	cfg.Checks = engine.Checks{Declare: s.Declare, Catalog: Catalog, Version: CatalogVersion, Hash: CatalogHash, Model: s.ModelSummary}
	return engine.Execute(ctx, cfg)
}
