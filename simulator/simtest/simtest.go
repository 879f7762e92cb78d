// Package simtest is how a test meets a simulator: Start runs one on
// loopback and gives its URLs and a Client; Binary gives a built gwsim or
// gwconform; StartRedis, StartCluster and StartSentinel run Redis; Serve
// runs a built gwsim serve; Chromium opens a browser. The test fleet, the
// Client that signs JSON and XML requests, NeedTool and Chromium are
// package core's, re-exported here: use them from simtest. It is for
// tests only.
package simtest

import (
	"context"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	core "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
)

// Identities of the test fleet (Fleet).
const (
	AccountA = core.AccountA
	KeyA     = core.KeyA
	SecretA  = core.SecretA
	MACA     = core.MACA  // one device of every type
	MACA2    = core.MACA2 // a second gateway of account A, one Light Dimmer
	AccountB = core.AccountB
	KeyB     = core.KeyB
	SecretB  = core.SecretB
	MACB     = core.MACB // one device of every type
)

// ChromiumPath is where Chromium is looked for.
const ChromiumPath = core.ChromiumPath

type (
	// F is one control field of a request (core.F).
	F = core.F
	// Client talks to one simulator as one api key (core.Client).
	Client = core.Client
	// Response is one answer of an operation (core.Response).
	Response = core.Response
)

// SN is the serial number of the test fleet's device of type index i on
// the gateway with the given prefix digit.
func SN(prefix byte, i int) string { return core.SN(prefix, i) }

// Fleet is the test fleet (core.Fleet).
func Fleet() *fleet.Fleet { return core.Fleet() }

// S is a string field.
func S(k, v string) F { return core.S(k, v) }

// N is a raw field (a JSON literal, plain text in XML).
func N(k, v string) F { return core.N(k, v) }

// Set replaces the value of a key in fields, or appends it.
func Set(fields []F, f F) []F { return core.Set(fields, f) }

// Without drops a key from fields.
func Without(fields []F, key string) []F { return core.Without(fields, key) }

// Body writes fields as a request body in a format (core.Body).
func Body(format device.Format, fields []F) []byte { return core.Body(format, fields) }

// ContentType is the request Content-Type of a format.
func ContentType(format device.Format) string { return core.ContentType(format) }

// NewClient is a client of account A of the test fleet at base.
func NewClient(t testing.TB, base string) *Client { return core.NewClient(t, base) }

// NeedTool returns the path of a program a test starts for real; where it
// is missing the test skips with one line, or fails under CI=true.
func NeedTool(t testing.TB, name, install string) string {
	t.Helper()
	return core.NeedTool(t, name, install)
}

// Chromium is a chromedp context on a headless Chromium of width x height
// started for this test, with NeedTool's rule (core.Chromium).
func Chromium(t testing.TB, width, height int) context.Context {
	t.Helper()
	return core.Chromium(t, width, height)
}

// StartChromium starts a Chromium shared by several tests (core.StartChromium).
func StartChromium(width, height int) (context.Context, func(), error) {
	return core.StartChromium(width, height)
}

// ConsoleErrors collects what a Chromium tab logs as an error or throws
// (core.ConsoleErrors); the returned func stops and gives them.
func ConsoleErrors(ctx context.Context) func() []string { return core.ConsoleErrors(ctx) }

// Heavy marks a suite-level test: one that runs the whole conformance
// suite, often several times, or a cluster of real processes, and takes
// from seconds to minutes. Under go test -short (make test) it skips with
// one line; make test-heavy runs it. Call it on the test's first line.
func Heavy(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("suite-level test: make test-heavy runs it")
	}
}
