package engine

import (
	"errors"
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
		{"http://vendor:pw-Zq81@h:8080/api/v1", "expected at http://h:8080/api/v1/services/…, and you gave …/v1: give --target http://h:8080/api"},
	} {
		base, err := client.ParseBaseURL(c.base)
		if err != nil {
			t.Fatal(err)
		}
		got := notFoundCause(base, &client.Response{Status: 404, ContentType: "text/html"})
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %s", c.base, got)
		}
		tls := transportCause(base, errors.New("http: server gave HTTP response to HTTPS client"))
		if strings.Contains(got, "pw-Zq81") || strings.Contains(got, "vendor") || strings.Contains(tls, "pw-Zq81") || !strings.Contains(tls, "give --target http://h:8080") {
			t.Errorf("%s: a cause names the user information, or not the target: %s; %s", c.base, got, tls)
		}
	}
	if got := maskKey("vendor-key-1"); got != "vend…" {
		t.Errorf("maskKey: %q", got)
	}
	if got := maskKey("abc"); got != "…" {
		t.Errorf("maskKey of a short key: %q", got)
	}
}
