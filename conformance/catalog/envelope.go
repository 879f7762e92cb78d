package catalog

import (
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"time"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Cases of the envelope (published 2.1 and 5): one envelope field, or sn,
// changed in each operation.

// envelopeCases change one envelope field (published 2.1 and 5) of each
// operation: the rows of missingRows, the oracle's samples of each field,
// the rows of envelopeTable.
func envelopeCases() []Case {
	var cs []Case
	for _, op := range device.Operations {
		p, lead := op.Name()+".envelope.", "a "+op.Name()+" request with "
		cs = append(cs, opCases(op, missingRows(), p, lead, "1", "envelope")...)
		// Every allowed form and every broken form of each envelope field
		// and of sn, from the oracle (samplecases.go).
		sampled := []string{device.FieldAPIKey, device.FieldTimestamp, device.FieldAccount, device.FieldMAC, device.FieldSign}
		if withSN(op) {
			sampled = append(sampled, device.FieldSN)
		}
		cs = append(cs, envelopeSamples(op, p, sampled)...)
		cs = append(cs, opCases(op, envelopeTable(), p, lead, "1", "envelope")...)
	}
	return cs
}

// missingRows leave out each envelope field, and sn.
func missingRows() []opRow {
	var rows []opRow
	for _, n := range device.EnvelopeFields {
		rows = append(rows, opRow{id: n + ".missing", title: "no " + n, section: "2.1", change: without(n), want: missingField(n)})
	}
	return append(rows, opRow{id: "sn.missing", title: "no sn", section: "2.2", change: without(device.FieldSN),
		want: missingField(device.FieldSN), on: withSN})
}

// envelopeTable are the envelope cases of an operation: ID after
// "<operation>.envelope.", title after "a <operation> request with ",
// published section, change, expectation.
func envelopeTable() []opRow {
	authTags := []string{"auth"}
	stale := Expectation{Status: 401, Codes: []string{device.CodeStaleTimestamp}, Field: device.FieldTimestamp}
	return append(windowEdgeRows(), []opRow{
		// CONTRACT 1: the window holds both ways; inside it, past and future
		// are valid.
		{id: "timestamp.past-inside-window", title: "a timestamp half the window in the past", section: "5",
			change: inWindow(-50), want: Expectation{ContractOK: true, Status: 200}, tags: authTags},
		{id: "timestamp.future-inside-window", title: "a timestamp half the window in the future", section: "5",
			change: inWindow(50), want: Expectation{ContractOK: true, Status: 200}, tags: authTags},
		{id: "timestamp.future", title: "a timestamp one day ahead", section: "5",
			change: outOfWindow(24 * time.Hour), want: stale, tags: authTags},
		{id: "timestamp.stale", title: "a timestamp one day old", section: "5",
			change: outOfWindow(-24 * time.Hour), want: stale, tags: authTags},
		{id: "sign.wrong", title: "a well-formed sign that does not match", section: "5", change: wrongSign, tags: authTags,
			want: Expectation{Must: true, Status: 401, Codes: []string{device.CodeBadSignature}, Field: device.FieldSign,
				Quote: oracle.QuoteSignCarried, Inference: oracle.InferSign}},
		{id: "api_key.unknown", title: "an api_key that was never issued", section: "5", change: unknownKey, tags: authTags,
			want: Expectation{Must: true, Status: 401, Codes: []string{device.CodeUnknownAPIKey}, Field: device.FieldAPIKey,
				Quote: oracle.QuoteSignCarried, Inference: oracle.InferKey}},
		{id: "myservice_id.other-account", title: "the myservice_id of another account", section: "5", change: otherAccountID, tags: authTags,
			want: Expectation{Must: true, Status: 403, Codes: []string{device.CodeAccountMismatch}, Field: device.FieldAccount}},
		{id: "mac.unknown", title: "a gateway the account does not have", section: "2.1", change: unknownHex(device.FieldMAC, 12),
			want: Expectation{Status: 404, Codes: []string{device.CodeGatewayNotFound}, Field: device.FieldMAC}},
		{id: "sn.unknown", title: "a device the gateway does not have", section: "2.2", change: unknownHex(device.FieldSN, 32),
			want: Expectation{Status: 404, Codes: []string{device.CodeDeviceNotFound}, Field: device.FieldSN}, on: withSN},
	}...)
}

// windowEdgeRows, on send message (CONTRACT 1): one second inside and
// outside the window, both ways.
func windowEdgeRows() []opRow {
	var rows []opRow
	for _, w := range oracle.WindowEdges(300 * time.Second) {
		want := Expectation{ContractOK: true, Status: 200}
		if !w.OK {
			want = Expectation{Status: 401, Codes: []string{device.CodeStaleTimestamp}, Field: device.FieldTimestamp}
		}
		rows = append(rows, opRow{id: "timestamp." + w.Slug, title: "a timestamp " + w.Title, section: "5",
			change: atWindowEdge(w.Slug), want: want, tags: []string{"auth", "boundary"}, on: onMessage})
	}
	return rows
}

const skipNoWindow = "the fleet disables the timestamp window"

// atWindowEdge sends the timestamp at the edge of the fleet's window
// that slug names (oracle.WindowEdges).
func atWindowEdge(slug string) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, _ device.Format, _ string) string {
		win := e.Fleet.Window()
		if win == 0 {
			return skipNoWindow
		}
		for _, x := range oracle.WindowEdges(win) {
			if x.Slug == slug {
				// Sent early in a second, so that the second the
				// timestamp names is the one meant; a retry waits for
				// and names its own second.
				c.SetStampExact(func() string {
					time.Sleep(oracle.Aligned(e.Now()))
					return e.Now().Truncate(time.Second).Add(x.Offset).In(e.Location).Format(oracle.TimestampLayout)
				})
				c.StampOffset = x.Offset
			}
		}
		return ""
	}
}

// inWindow sends the timestamp off the clock by a percentage of the
// fleet's window.
func inWindow(percent int) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, _ device.Format, _ string) string {
		w := e.Fleet.Window()
		if w == 0 {
			return skipNoWindow
		}
		c.SetStampAt(e, w*time.Duration(percent)/100)
		return ""
	}
}

// outOfWindow sends the timestamp off the clock by off, far outside any
// window.
func outOfWindow(off time.Duration) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, _ device.Format, _ string) string {
		if e.Fleet.Window() == 0 {
			return skipNoWindow
		}
		c.SetStampAt(e, off)
		return ""
	}
}

// wrongSign sends WrongSign as the sign, where the fleet's scheme can
// tell it from a right one.
func wrongSign(e *Bench, c *Call, _ device.Format, _ string) string {
	if !e.KnownSign {
		return "the fleet's sign scheme cannot tell a wrong sign (sign: format or off)"
	}
	c.KeepSign = true
	c.Set(device.FieldSign, WrongSign)
	c.Tamper = &client.Tamper{Sign: WrongSign}
	return ""
}

// unknownKey sends an api_key that was never issued: "unknown-" and
// letters drawn from the check's values.
func unknownKey(e *Bench, c *Call, _ device.Format, id string) string {
	k := "unknown-" + e.Faker(id).LetterN(12)
	c.Set(device.FieldAPIKey, k)
	c.Tamper = &client.Tamper{APIKey: k} // a key of no account: no credential
	return ""
}

// otherAccountID sends the myservice_id of the fleet's other account.
func otherAccountID(e *Bench, c *Call, _ device.Format, _ string) string {
	if e.Target.OtherAccount == "" {
		return "the fleet has a single account"
	}
	c.Set(device.FieldAccount, e.Target.OtherAccount)
	return ""
}

// unknownHex sends as a field n hexadecimal digits drawn from the check's
// values.
func unknownHex(field string, n int) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, _ device.Format, id string) string {
		c.Set(field, hexN(e.Faker(id), n))
		return ""
	}
}

func hexN(fk *gofakeit.Faker, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[fk.Number(0, 15)]
	}
	return string(b)
}

// envelopeSamples are the cases of the envelope fields and sn: every
// sample on the field's home operation (send message for the envelope,
// update name for sn), the catalog's first ones on the others.
func envelopeSamples(op device.Operation, prefix string, names []string) []Case {
	var cs []Case
	for _, name := range names {
		f, _ := oracle.Lookup(name)
		home := op == device.SendMessage && name != device.FieldSN || name == device.FieldSN && op == device.UpdateName
		section, contract := "2.1", "2"
		switch name {
		case device.FieldSN:
			section = "2.2"
		case device.FieldTimestamp:
			section, contract = "5", "1"
		}
		for _, s := range samplesOf(f, f.Example) {
			legacy := legacySlug(f, s.Slug)
			if !home && !legacy {
				continue
			}
			c := fieldSampleCase(op, prefix+name, "a "+op.Name()+" request with "+name, section, contract, f, s)
			c.Tags = append([]string{"envelope"}, c.Tags...)
			// A new form check judges the answer; the state checks of the
			// catalog's first ones already show a refusal changes nothing.
			c.NoSim = !legacy
			cs = append(cs, c)
		}
	}
	return cs
}
