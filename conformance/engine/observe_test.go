package engine

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// TestPreflightCauses: the lines a refused pre-flight gives name the cause
// and never a whole api key.
func TestPreflightCauses(t *testing.T) {
	for _, c := range []struct{ base, want string }{
		{"http://h:8080/v1", "expected at http://h:8080/v1/services/…, and you gave …/v1: give --target http://h:8080"},
		{"http://h:8080/api/v1/", "expected at http://h:8080/api/v1/services/…, and you gave …/v1: give --target http://h:8080/api"},
		{"http://h:8080", "every operation answered HTTP 404 (text/html); the operations are expected at http://h:8080/v1/services/…"},
	} {
		if got := notFoundCause(c.base, &client.Response{Status: 404, ContentType: "text/html"}); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s", c.base, got)
		}
	}
	if got := maskKey("vendor-key-1"); got != "vend…" {
		t.Errorf("maskKey: %q", got)
	}
	if got := maskKey("abc"); got != "…" {
		t.Errorf("maskKey of a short key: %q", got)
	}
}
