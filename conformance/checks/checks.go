// Package checks is the conformance suite of the Gateway Device Management
// Interface: every check, declared on a run's engine.Env. The cases of
// package catalog give one check per format and expectation (suite.go),
// and the checks written here add what a case cannot say: the effects an
// observer shows (effects.go, landing.go), what gwsim's own devices do
// (sim.go), the probes of what the interface leaves open (probes.go,
// grammarprobes.go), HTTP's own rules (httprules.go) and the model-based
// phase (modelphase.go). Each check quotes the sentence it judges; the
// engine runs them and knows none of them.
package checks

import (
	"sync/atomic"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/conformance/report"
)

// Suite is the checks of one run, on the run's Env: the engine's
// exported methods are the Suite's, and it keeps the little state its
// checks share.
type Suite struct {
	*engine.Env
	// budget is the model-based phase's, and model the phase as it ran.
	budget ModelBudget
	model  modelPhase
	// wireSeq numbers the messages of HTTP's own rules (httprules.go):
	// each carries a value no other request of the run has.
	wireSeq atomic.Int64
}

// New is the suite's checks on env, the model-based phase within budget.
func New(env *engine.Env, budget ModelBudget) *Suite {
	return &Suite{Env: env, budget: budget}
}

// Declare declares every check on the Env, in the order a serial run
// runs them (engine.Checks.Declare).
func (env *Suite) Declare() {
	// HTTP's own rules first: they speak to the target on connections of
	// their own and run in their place, and a service that breaks one may
	// break every exchange of the checks after them.
	env.declareHTTPRules()
	for _, c := range catalog.Cases() {
		env.declare(c)
	}
	// The probes before the effect checks: they are about one device each
	// and run ahead with the cases against a far target (engine, ahead.go),
	// and each effect check then reads the state they left, in every run.
	env.declareProbes()
	env.declareEffects()
	// The model-based phase last: it reaches every device of the fleet.
	env.declareModelPhase()
}

// ModelSummary is the model-based phase as the reports show it; nil when
// it did not run.
func (env *Suite) ModelSummary() *report.ModelPhase { return env.model.summary }
