package gwsimtest_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

// TestAppTestingTableTypes: every `sim.Name(…) Result` and `sim.Name
// Result` of docs/app-testing.md's table names a method or field of
// *gwsimtest.Server that returns (or is) exactly that, so that the
// table's types are the package's.
func TestAppTestingTableTypes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "app-testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile("`sim\\.([A-Z]\\w*)(\\([^`]*?\\))?((?: [^`(][^`]*?)|(?: \\([^`]*\\)))?`")
	typ := reflect.TypeOf(&gwsimtest.Server{})
	checked := 0
	for _, m := range call.FindAllStringSubmatch(string(b), -1) {
		name, isCall, result := m[1], m[2] != "", strings.TrimSpace(m[3])
		var got string
		if isCall {
			meth, ok := typ.MethodByName(name)
			if !ok {
				t.Errorf("the table names sim.%s, which *gwsimtest.Server does not have", name)
				continue
			}
			var outs []string
			for i := range meth.Type.NumOut() {
				outs = append(outs, strings.ReplaceAll(meth.Type.Out(i).String(), "gwsimtest.", ""))
			}
			got = strings.Join(outs, ", ")
			if len(outs) > 1 {
				got = "(" + got + ")"
			}
		} else {
			f, ok := typ.Elem().FieldByName(name)
			if !ok {
				t.Errorf("the table names sim.%s, which gwsimtest.Server has no field of", name)
				continue
			}
			got = f.Type.String()
		}
		if result == "" {
			continue // the call's result is not given: nothing to check
		}
		// The package's aliases, as go doc and the table name them.
		got = strings.NewReplacer("server.Faults", "Faults", "clients.Report", "Report", "store.Message", "Message",
			"server.Entry", "Request", "scenario.Status", "ScenarioStatus").Replace(got)
		checked++
		if got != result {
			t.Errorf("the table gives sim.%s as %q, the package as %q", name, result, got)
		}
	}
	if checked < 12 {
		t.Errorf("only %d result types checked in the table", checked)
	}
}
