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
	"cmp"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"

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
// runs them (engine.Checks.Declare): family by family, in their order.
func (env *Suite) Declare() {
	for _, f := range inOrder(families) {
		f.declare(env)
	}
}

// A family is the checks one file of the package declares. Each file adds
// its own to families (declares), so a new file of checks is the one file
// its family touches.
type family struct {
	// order places the family in a serial run, from 100 to 900:
	//  - 100 HTTP's own rules (httprules.go): they speak to the target on
	//    connections of their own and run in their place, and a service
	//    that breaks one may break every exchange after them;
	//  - 200 the cases of package catalog (suite.go);
	//  - 300 the probes (probes.go), about one device each: against a far
	//    target they run ahead with the cases (package engine, ahead.go);
	//  - 400 the effect checks (effects.go), each reading the state the
	//    probes left;
	//  - 900 the model-based phase (modelphase.go): it reaches every
	//    device of the fleet, so it runs last.
	order int
	// file is where the family is declared, named in a clash of orders.
	file    string
	declare func(*Suite)
}

// families are the package's families, as its files declare them.
var families []family

// declares adds a file's family to families; a file calls it as the value
// of a package-level blank variable. order is the family's place (family).
func declares(order int, declare func(*Suite)) struct{} {
	_, file, _, _ := runtime.Caller(1)
	families = append(families, family{order: order, file: filepath.Base(file), declare: declare})
	return struct{}{}
}

// inOrder is fs by their order; two families of one order are a mistake
// of the code, which the package's tests meet first.
func inOrder(fs []family) []family {
	out := slices.Clone(fs)
	slices.SortFunc(out, func(a, b family) int { return cmp.Compare(a.order, b.order) })
	for i := 1; i < len(out); i++ {
		if out[i].order == out[i-1].order {
			panic(fmt.Sprintf("checks: the families of %s and %s both have order %d", out[i-1].file, out[i].file, out[i].order))
		}
	}
	return out
}

// ModelSummary is the model-based phase as the reports show it; nil when
// it did not run.
func (env *Suite) ModelSummary() *report.ModelPhase { return env.model.summary }
