package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/check"
)

// TestChecksRunInTheOrderDeclared: Ginkgo runs the checks in the order
// they are declared, the order the checks run ahead of their place
// follow (ahead.go): a stretch ends at the next check that runs in its
// place in that order. Without the Ordered container, Ginkgo sorts the
// specs by their text, and a stretch would leave behind checks that run
// later, each run ahead again in a short stretch of its own. The checks
// here are declared in the reverse order of their text, some about a
// device and some in their place.
func TestChecksRunInTheOrderDeclared(t *testing.T) {
	var declared []check.Meta
	for i := 0; i < 40; i++ {
		declared = append(declared, check.Meta{ID: fmt.Sprintf("order.%02d", i), Level: check.Must, Section: "2",
			Title: fmt.Sprintf("Check %c%02d", 'z'-i%26, 40-i), Assertion: "It MUST hold."})
	}
	env := &Env{Concurrency: 1}
	declareChecks(func() {
		for i, m := range declared {
			key := func() string { return "device" }
			if i%3 == 0 {
				key = nil
			}
			env.ItAbout(m, key, func(context.Context) {})
		}
	})
	ids := map[string]string{}
	for _, m := range declared {
		ids[check.Finish(m).Text()] = m.ID
	}
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
