package conformance

import (
	"testing"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/check"
)

// TestChecksRunInTheOrderDeclared: Ginkgo runs the checks in the order
// they are declared, the order the checks run ahead of their place
// follow (ahead.go): a stretch ends at the next check that runs in its
// place in that order. Without the Ordered container, Ginkgo sorts the
// specs by their text, and a stretch would leave behind checks that run
// later, each run ahead again in a short stretch of its own.
func TestChecksRunInTheOrderDeclared(t *testing.T) {
	var declared []check.Meta
	(&Env{collect: &declared}).declareAll()
	ids := map[string]string{}
	for _, m := range declared {
		ids[check.Finish(m).Text()] = m.ID
	}
	env := &Env{Concurrency: 1}
	env.declareChecks()
	r := ginkgo.PreviewSpecs("order")
	var ran []string
	for _, sr := range r.SpecReports {
		if id, ok := ids[sr.LeafNodeText]; ok {
			ran = append(ran, id)
		}
	}
	if len(ran) != len(declared) {
		t.Fatalf("Ginkgo would run %d of the %d checks declared", len(ran), len(declared))
	}
	for i, m := range declared {
		if ran[i] != m.ID {
			t.Fatalf("check %d: Ginkgo runs %s where %s was declared", i, ran[i], m.ID)
		}
	}
	ahead := env.ahead.IDs()
	if len(ahead) != len(declared) {
		t.Fatalf("%d checks to run ahead, %d declared", len(ahead), len(declared))
	}
	for i, id := range ahead {
		if id != declared[i].ID {
			t.Fatalf("check %d: ahead has %s where %s was declared", i, id, declared[i].ID)
		}
	}
}
