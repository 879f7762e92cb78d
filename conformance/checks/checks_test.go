package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/engine"
)

// TestFamiliesInTheirOrder: each file's family is declared whole, in the
// order its number gives: HTTP's own rules first, the model-based phase
// last, the probes before the effect checks that read the state they
// leave. A serial run declares exactly the families, one after another.
func TestFamiliesInTheirOrder(t *testing.T) {
	var all []check.Meta
	New(engine.Listing(&all), ModelBudget{}).Declare()
	prefix := map[int]string{100: "http.", 300: "probe.", 400: "effect.", 900: "model."}
	var joined []string
	fs := inOrder(families)
	if len(fs) < 5 {
		t.Fatalf("%d families declared: the files of the package each declare theirs", len(fs))
	}
	for _, f := range fs {
		var one []check.Meta
		f.declare(New(engine.Listing(&one), ModelBudget{}))
		if len(one) == 0 {
			t.Errorf("the family of %s (order %d) declares no check", f.file, f.order)
			continue
		}
		if p, ok := prefix[f.order]; ok && !strings.HasPrefix(one[0].ID, p) {
			t.Errorf("the family of %s (order %d) starts with %s, not a check %s…", f.file, f.order, one[0].ID, p)
		}
		for _, m := range one {
			joined = append(joined, m.ID)
		}
	}
	var ids []string
	for _, m := range all {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, joined) {
		t.Errorf("Declare's %d checks are not the families' %d, one family after another", len(ids), len(joined))
	}
}

// TestOneOrderPerFamily: two families of one order would run in the order
// the compiler met their files; the package refuses it.
func TestOneOrderPerFamily(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "both have order 200") {
			t.Errorf("two families of order 200: %v", r)
		}
	}()
	inOrder([]family{{order: 200, file: "a.go"}, {order: 100, file: "b.go"}, {order: 200, file: "c.go"}})
}
