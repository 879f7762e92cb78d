package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

const demoDimmer = "0123456789abcdef0123456789abcd06"

// deviceState reads a device through the admin API of a running gwsim.
func deviceState(t *testing.T, base, sn string) map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/_sim/gateways/a4c138f0e2b1/devices/" + sn)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Name  string         `json:"name"`
		State map[string]any `json:"state"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	d.State["name"] = d.Name
	return d.State
}

var signShown = regexp.MustCompile(`"sign":"[0-9a-f]{32}"|<sign>[0-9a-f]{32}</sign>`)

// TestSendAgainstServe runs gwsim send against a real gwsim serve on
// loopback, in both formats: each operation changes the state it names,
// an error answer exits 1 and changes nothing, and the sign never shows.
func TestSendAgainstServe(t *testing.T) {
	sim := simtest.Serve(t, simtest.Binary(t, "gwsim"))
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			dim := map[string]string{"json": "40", "xml": "77"}[format]
			code, out, errOut := run("send", "command", "--target", sim.URL, "--format", format, "--type", "Light Dimmer", "--sn", demoDimmer, "dimming="+dim)
			if code != 0 {
				t.Fatalf("command: exit %d\n%s\n%s", code, out, errOut)
			}
			marker := map[string]string{"json": `"sign":"<SIGNATURE>"`, "xml": "<sign>&lt;SIGNATURE&gt;</sign>"}[format]
			for _, want := range []string{"> POST " + sim.URL + "/v1/services/gateway/command", "> Content-Type: application/" + format,
				"< HTTP 200", "success", marker} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if signShown.MatchString(out) || strings.Contains(out, "demo-secret") {
				t.Errorf("the sign or secret is shown:\n%s", out)
			}
			if got := deviceState(t, sim.URL, demoDimmer)["dimming"]; got != mustFloat(dim) {
				t.Errorf("dimming after command: %v, want %s", got, dim)
			}
			// Flags before the operation, as in every other subcommand
			// (this once refused with "name the operation").
			flagsFirst := map[string]string{"json": "41", "xml": "78"}[format]
			if code, out, errOut := run("send", "--target", sim.URL, "--format", format, "command", "--type", "Light Dimmer", "dimming="+flagsFirst, "--sn", demoDimmer); code != 0 {
				t.Fatalf("flags before the operation: exit %d\n%s\n%s", code, out, errOut)
			}
			if got := deviceState(t, sim.URL, demoDimmer)["dimming"]; got != mustFloat(flagsFirst) {
				t.Errorf("dimming after the command with its flags first: %v, want %s", got, flagsFirst)
			}

			// The thermostat point, named as either format names it,
			// reaches the device without --sn (the fleet's thermostat).
			if code, out, errOut := run("send", "command", "--target", sim.URL, "--format", format, "--type", "Thermostat", "cooling point=22.5"); code != 0 {
				t.Fatalf("thermostat: exit %d\n%s\n%s", code, out, errOut)
			}
			if got := deviceState(t, sim.URL, "0123456789abcdef0123456789abcd04")["cooling_point"]; got != 22.5 {
				t.Errorf("cooling_point: %v", got)
			}

			name := "Hall " + format
			if code, out, _ := run("send", "rename", "--target", sim.URL, "--format", format, "--sn", demoDimmer, "--name", name); code != 0 {
				t.Fatalf("rename: exit %d\n%s", code, out)
			}
			if got := deviceState(t, sim.URL, demoDimmer)["name"]; got != name {
				t.Errorf("name: %v", got)
			}
			if code, out, _ := run("send", "message", "--target", sim.URL, "--format", format, "brightness=80"); code != 0 || !strings.Contains(out, "brightness=80") {
				t.Fatalf("message: exit %d\n%s", code, out)
			}

			// An error answer: exit 1, printed, and the state unchanged.
			code, out, errOut = run("send", "command", "--target", sim.URL, "--format", format, "--type", "Light Dimmer", "--sn", demoDimmer, "dimming=400")
			if code != 1 || !strings.Contains(out, "< HTTP 400") || !strings.Contains(out, "invalid_field") || !strings.Contains(errOut, "400 invalid_field") {
				t.Errorf("error answer: exit %d\n%s\n%s", code, out, errOut)
			}
			if got := deviceState(t, sim.URL, demoDimmer)["dimming"]; got != mustFloat(flagsFirst) {
				t.Errorf("a rejected command changed dimming to %v", got)
			}
		})
	}

	// A wrong secret from the environment: 401 bad_signature, exit 1; the
	// secret's value appears nowhere.
	t.Setenv("GWSIM_SECRET", "not-the-secret-9f8e7d")
	code, out, errOut := run("send", "message", "--target", sim.URL, "brightness=1")
	if code != 1 || !strings.Contains(out, "bad_signature") {
		t.Errorf("wrong secret: exit %d\n%s", code, out)
	}
	if strings.Contains(out+errOut, "not-the-secret-9f8e7d") {
		t.Error("the secret is shown")
	}
	// The right one from a file.
	file := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(file, []byte("demo-secret\n"), 0o600)
	if code, out, _ := run("send", "message", "--target", sim.URL, "--secret-file", file, "brightness=2"); code != 0 {
		t.Errorf("secret file: exit %d\n%s", code, out)
	}
}

func mustFloat(s string) float64 {
	var f float64
	json.Unmarshal([]byte(s), &f)
	return f
}

// TestSendUsage: bad usage exits 2 without sending; help shows no secret.
func TestSendUsage(t *testing.T) {
	t.Setenv("GWSIM_SECRET", "env-secret-value-123")
	for _, args := range [][]string{
		{"send"},
		{"send", "toast"},
		{"send", "command", "dimming=4"},
		{"send", "command", "--type", "Light Dimmer"},
		{"send", "command", "--type", "Light Dimmer", "dimming"},
		{"send", "message"},
		{"send", "message", "a=1", "b=2"},
		{"send", "rename", "--sn", demoDimmer},
		{"send", "rename", "--name", "x", "--type", "Thermostat", "--sn", demoDimmer},
		{"send", "message", "--format", "yaml", "a=1"},
		{"send", "message", "--fleet", "/nonexistent/fleet.yaml", "a=1"},
		{"send", "message", "--api-key", "other-key", "a=1", "--secret", ""},
		{"send", "message", "--nope", "a=1"},
		{"send", "--target", "http://127.0.0.1:1"},
		{"send", "--format", "json", "toast", "a=1"},
	} {
		if args[len(args)-1] == "" {
			os.Unsetenv("GWSIM_SECRET")
			args = args[:len(args)-2]
		}
		code, out, errOut := run(args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		t.Setenv("GWSIM_SECRET", "env-secret-value-123")
	}
	code, out, errOut := run("send", "-h")
	if code != 0 || !strings.Contains(errOut, "--secret-file") && !strings.Contains(errOut, "-secret-file") {
		t.Errorf("help: exit %d %q %q", code, out, errOut)
	}
	if strings.Contains(out+errOut, "env-secret-value-123") || strings.Contains(out+errOut, "demo-secret") {
		t.Error("help shows a secret")
	}
	// Unreachable target: exit 1, said plainly.
	if code, _, errOut := run("send", "message", "--target", "http://127.0.0.1:1", "a=1"); code != 1 || !strings.Contains(errOut, "no answer") {
		t.Errorf("unreachable: exit %d %q", code, errOut)
	}
}

// TestGWSIMURLSetsTheTarget: $GWSIM_URL is the target of gwsim send and
// gwsim clients when --target is not given; --target wins; a GWSIM_URL
// that is no URL is refused, naming it.
func TestGWSIMURLSetsTheTarget(t *testing.T) {
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo()})
	t.Setenv("GWSIM_URL", sim.URL())
	if code, out, errOut := run("send", "command", "--type", "Light Dimmer", "--sn", demoDimmer, "dimming=44"); code != 0 || !strings.Contains(out, sim.URL()) {
		t.Errorf("send with GWSIM_URL: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run("clients", "--format", "json"); code != 0 || !strings.Contains(out, `"requests": 1`) {
		t.Errorf("clients with GWSIM_URL: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run("send", "--target", "http://127.0.0.1:1", "message", "brightness=1"); code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("--target does not win over GWSIM_URL: exit %d %s", code, errOut)
	}
	t.Setenv("GWSIM_URL", "127.0.0.1:8080")
	for _, cmd := range [][]string{{"send", "message", "brightness=1"}, {"clients"}} {
		if code, _, errOut := run(cmd...); code != 2 || !strings.Contains(errOut, "GWSIM_URL") {
			t.Errorf("%v with a GWSIM_URL that is no URL: exit %d %s", cmd, code, errOut)
		}
	}
}
