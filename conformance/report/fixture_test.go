package report_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The fixture suite: checks declared with check.It that pass, skip, and
// record exchanges the way the conformance suite does. TestReport runs it
// once and then marks some of them failed in a copy of its report.

const base = "http://127.0.0.1:8080"

// captured is the fixture suite's report.
var captured types.Report

var _ = ginkgo.ReportAfterSuite("capture the fixture report", func(r types.Report) {
	captured = r
})

func record(ex client.Exchange) {
	// The literal name, as the suite writes it: the contract under test.
	ginkgo.AddReportEntry("exchange", ex, ginkgo.ReportEntryVisibilityNever)
}

func commandExchange(t *device.Type, format string) client.Exchange {
	f, ctype, answer := device.JSON, "application/json", `{"status":"success"}`
	if format == "xml" {
		f, ctype, answer = device.XML, "application/xml", `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`
	}
	fields := []client.Field{{Key: "api_key", Value: "demo-key"}, {Key: "timestamp", Value: "20260102030405"},
		{Key: "sign", Value: "0123456789abcdef0123456789abcdef"}, {Key: "myservice_id", Value: "5f3a9c0e1b2d4f6a8c0e1b2d"},
		{Key: "mac", Value: "a4c138f0e2b1"}, {Key: "sn", Value: "0123456789abcdef0123456789abcdef"}, {Key: "type", Value: t.Name}}
	for _, fd := range t.Fields {
		fields = append(fields, client.Field{Key: fd.WireName(f), Value: fd.Example})
	}
	b, err := client.Encode(f, fields)
	if err != nil {
		panic(err)
	}
	return client.Exchange{
		Method:          "POST",
		URL:             base + "/v1/services/gateway/command",
		RequestHeaders:  map[string]string{"Content-Type": ctype},
		RequestBody:     string(b),
		Status:          200,
		ResponseHeaders: map[string]string{"Content-Type": ctype},
		ResponseBody:    answer,
		Duration:        2 * time.Millisecond,
	}
}

// scriptBody is a response body that must reach the HTML page escaped.
const scriptBody = `<html><script>alert("owned")</script></html>`

// FailingID is the check TestReport marks failed; PanickedID the one it
// marks panicked.
const (
	FailingID  = "CMD.4.JSON"
	PanickedID = "ERR.1"
	SkippedFor = "Infrared Sensor"
)

// fixtureTypes are the types the fixture sends commands to: the six
// published ones, named here rather than read from device.Types, so that a
// type added to the table leaves the fixture's counts as they are.
var fixtureTypes = []string{"Appliance Module", "Appliance Module Plus", "Relay Module", "Thermostat", "Infrared Sensor", "Light Dimmer"}

// fixtureChecks are the checks the fixture declares, each as check.It
// declares it: the fixture's catalog (fixtureCatalog).
var fixtureChecks []check.Meta

// fixtureIt declares a check of the fixture and lists it in its catalog.
func fixtureIt(m check.Meta, body func(ginkgo.SpecContext)) bool {
	fixtureChecks = append(fixtureChecks, check.Finish(m))
	return check.It(m, body)
}

// fixtureCatalog is the catalog of the fixture's checks, what the reports
// read their metadata from.
func fixtureCatalog() check.Catalog { return check.NewCatalog(fixtureChecks) }

var _ = ginkgo.Describe("fixture", func() {
	ginkgo.Describe("send command", func() {
		for i, name := range fixtureTypes {
			t, ok := device.LookupType(name)
			if !ok {
				panic("the device table lost " + name)
			}
			for _, f := range []string{"json", "xml"} {
				m := check.Meta{
					ID:         fmt.Sprintf("CMD.%d.%s", i+1, strings.ToUpper(f)),
					Level:      check.Must,
					Section:    "4.1",
					Title:      "send command to a " + t.Name + " in " + strings.ToUpper(f),
					Assertion:  "The answer MUST be 200 with status success",
					Operation:  "send command",
					Format:     f,
					DeviceType: t.Name,
				}
				fixtureIt(m, func(ginkgo.SpecContext) {
					if t.Name == SkippedFor {
						ginkgo.Skip("no " + t.Name + " device in the fleet")
					}
					ex := commandExchange(t, f)
					if m.ID == FailingID {
						ex.Status = 500
						ex.ResponseHeaders = map[string]string{"Content-Type": "text/html"}
						ex.ResponseBody = scriptBody
					}
					record(ex)
				})
			}
		}
	})

	pass := func(m check.Meta, ex ...client.Exchange) {
		fixtureIt(m, func(ginkgo.SpecContext) {
			for _, e := range ex {
				record(e)
			}
		})
	}
	dimmer, _ := device.LookupType("Light Dimmer")
	bad := commandExchange(dimmer, "json")
	bad.RequestBody = strings.Replace(bad.RequestBody, `"dimming":"50"`, `"dimming":"101"`, 1)
	bad.Status = 400
	bad.ResponseBody = `{"status":"error","error":{"code":"invalid_field","field":"dimming","message":"dimming must be an integer from 1 to 100"}}`
	pass(check.Meta{ID: "ENV.1", Level: check.Must, Section: "2.1", Title: "envelope with every field", Assertion: "A request with the five envelope fields MUST be accepted"}, commandExchange(dimmer, "json"))
	pass(check.Meta{ID: "AUTH.1", Level: check.Must, Section: "5", Title: "sign of 32 hex characters", Assertion: "A well-formed sign MUST be accepted", Tags: []string{"auth"}}, commandExchange(dimmer, "xml"))
	pass(check.Meta{ID: "VER.10", Level: check.Must, Section: "9", Title: "paths begin with /v1 (second)", Assertion: "Every path MUST begin with /v1"})
	pass(check.Meta{ID: "VER.2", Level: check.Must, Section: "9", Title: "paths begin with /v1", Assertion: "Every path MUST begin with /v1"})
	pass(check.Meta{ID: "MISC.1", Level: check.Must, Section: "4.5", Title: "a section the interface lacks", Assertion: "Nothing"})
	pass(check.Meta{ID: "DIM.RANGE.1", Level: check.Should, Section: "2.3", Contract: "3", Title: "dimming 101", Assertion: "The answer SHOULD be 400 invalid_field", Operation: "send command", Format: "json", DeviceType: dimmer.Name, Tags: []string{"edge"}}, bad)
	pass(check.Meta{ID: PanickedID, Level: check.Should, Section: "7", Contract: "4", Title: "error payload layout", Assertion: "An error SHOULD carry status error and an error object"}, bad)
	pass(check.Meta{ID: "SIM.STATE.1", Level: check.Should, Section: "3", Contract: "3", Title: "a command changes the state", Assertion: "The device state SHOULD hold the value sent", Tags: []string{"sim"}})
	xmlAnswer := commandExchange(dimmer, "xml")
	pass(check.Meta{ID: "INFO.XML.1", Level: check.Info, Section: "4.4", Contract: "4", Title: "response layout to an XML request", Assertion: "Reports the Content-Type and body of the answer to an XML request", Format: "xml"}, xmlAnswer)
	probe := commandExchange(dimmer, "json")
	probe.Status = 415
	probe.ResponseBody = `{"status":"error"}`
	pass(check.Meta{ID: "INFO.CT.1", Level: check.Info, Section: "4", Contract: "2", Title: "Content-Type text/plain", Assertion: "Reports how the target answers an unsupported Content-Type"}, probe)

	ginkgo.It("a plain spec that is not a check", func() {})
})
