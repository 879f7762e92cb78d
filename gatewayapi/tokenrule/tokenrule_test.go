package tokenrule

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestLoopbackIsResolved: a name under .localhost is resolved, not taken
// on its name: one that a resolver answers with another address is not
// loopback, and the environment's token does not go there; localhost
// itself resolves to loopback on this machine.
func TestLoopbackIsResolved(t *testing.T) {
	real := Resolve
	t.Cleanup(func() { Resolve = real })
	Resolve = func(ctx context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "evil.localhost":
			return []net.IPAddr{{IP: net.ParseIP("192.0.2.7")}}, nil
		case "split.localhost":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("192.0.2.7")}}, nil
		case "app.localhost":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("::1")}}, nil
		}
		return real(ctx, host)
	}
	for raw, want := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://[::1]:1": true, "http://127.9.9.9": true,
		"http://localhost:8080": true, "http://app.localhost:1": true,
		"http://evil.localhost:8080": false, "http://split.localhost": false,
		"http://192.0.2.7": false, "http://0.0.0.0:8080": false, "not a url": false, "http://": false,
	} {
		if got := OnLoopback(raw); got != want {
			t.Errorf("OnLoopback(%q) = %v, want %v", raw, got, want)
		}
	}
	var out strings.Builder
	tok := Of("", "env-token-0123456789abcdef0123456789")
	if got := tok.To("http://evil.localhost:8080", NotNamed, &out, "prog", "hint"); got != "" || !strings.Contains(out.String(), "not sent to http://evil.localhost:8080") {
		t.Errorf("evil.localhost: sent %q, said %q", got, out.String())
	}
	out.Reset()
	if got := tok.To("http://user:pw@evil.localhost:8080/?k=v", Named, &out, "prog", "hint"); got == "" || strings.Contains(out.String(), "pw") || strings.Contains(out.String(), "user") || strings.Contains(out.String(), "env-token") {
		t.Errorf("named: sent %q, said %q", got, out.String())
	}
	if got := Of("cli-token", "env").To("http://192.0.2.7", NotNamed, &out, "prog", "hint"); got != "cli-token" {
		t.Errorf("a token from the command line goes where the command line says: %q", got)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:secret@h.example:8443/p?api_key=k#f": "https://h.example:8443/p",
		"http://127.0.0.1:8080":                         "http://127.0.0.1:8080",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
