package main

import (
	"encoding/xml"
	"net/http"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestClientsCommand: gwsim clients reads the report of a running gwsim
// serve behind its admin token, in each format, and --fail fails on an
// app's invalid request.
func TestClientsCommand(t *testing.T) {
	url, _, _, _ := serve(t, "--admin-token", testToken)
	target, err := fleet.Demo().Target()
	if err != nil {
		t.Fatal(err)
	}
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	am := target.Devices["Appliance Module"].SN
	c.Send(device.SendCommand, device.XML, c.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "Off"))).
		Fail(t, device.XML, http.StatusBadRequest, device.CodeUnexpectedField, "Relay2")

	code, _, errs := run("clients", "--target", url)
	if code != 2 || !strings.Contains(errs, "admin token") {
		t.Errorf("without the token: exit %d, %q", code, errs)
	}
	code, out, errs := run("clients", "--target", url, "--admin-token", testToken)
	if code != 0 || !strings.Contains(out, "FAIL app sent no fields that belong to another device type: 1 time;") ||
		!strings.Contains(out, "Relay2 (a field of Appliance Module Plus) sent to an Appliance Module") {
		t.Errorf("text: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run("clients", "--target", url, "--admin-token", testToken, "--format", "junit", "--fail")
	var suites struct {
		Failures int `xml:"failures,attr"`
	}
	if code != 1 || xml.Unmarshal([]byte(out), &suites) != nil || suites.Failures != 2 {
		t.Errorf("junit --fail: exit %d, %d failures\n%s", code, suites.Failures, out)
	}
	for _, format := range []string{"json", "html"} {
		code, out, _ := run("clients", "--target", url, "--admin-token", testToken, "--format", format)
		if code != 0 || !strings.Contains(out, "Relay2") {
			t.Errorf("%s: exit %d\n%s", format, code, out)
		}
		if strings.Contains(out, target.Key.Key) || strings.Contains(out, target.Key.Secret) {
			t.Errorf("%s: the report shows the api_key or its secret", format)
		}
	}
	for _, args := range [][]string{{"clients", "--format", "pdf"}, {"clients", "--target", "ftp://x"}, {"clients", "extra"}} {
		if code, _, _ := run(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
