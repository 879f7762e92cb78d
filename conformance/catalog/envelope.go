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
// operation.
func envelopeCases() []Case {
	var cs []Case
	for _, op := range device.Operations {
		p := op.Name() + ".envelope."
		add := func(id, title, section string, change func(*Bench, *Call, device.Format, string) string, w Expectation, tags ...string) {
			cs = append(cs, Case{ID: p + id, Op: op, Title: "a " + op.Name() + " request with " + title, Section: section,
				Contract: "1", Build: OnOp(op, change), Want: w, Tags: append([]string{"envelope"}, tags...)})
		}
		for _, name := range device.EnvelopeFields {
			n := name
			add(n+".missing", "no "+n, "2.1", func(_ *Bench, c *Call, _ device.Format, _ string) string {
				c.Drop(n)
				return ""
			}, missingField(n))
		}
		hexFields := []string{device.FieldAccount, device.FieldMAC, device.FieldSign}
		if op != device.SendMessage {
			hexFields = append(hexFields, device.FieldSN)
			add("sn.missing", "no sn", "2.2", func(_ *Bench, c *Call, _ device.Format, _ string) string {
				c.Drop(device.FieldSN)
				return ""
			}, missingField(device.FieldSN))
		}
		// Every allowed form and every broken form of each envelope field
		// and of sn, from the oracle (samplecases.go).
		cs = append(cs, envelopeSamples(op, p, append([]string{device.FieldAPIKey, device.FieldTimestamp}, hexFields...))...)
		if op == device.SendMessage {
			// CONTRACT 1: one second inside and outside the window, both ways.
			for _, w := range oracle.WindowEdges(300 * time.Second) {
				want := Expectation{ContractOK: true, Status: 200}
				if !w.OK {
					want = Expectation{Status: 401, Codes: []string{device.CodeStaleTimestamp}, Field: device.FieldTimestamp}
				}
				slug := w.Slug
				add("timestamp."+slug, "a timestamp "+w.Title, "5", func(e *Bench, c *Call, _ device.Format, _ string) string {
					win := e.Fleet.Window()
					if win == 0 {
						return "the fleet disables the timestamp window"
					}
					for _, x := range oracle.WindowEdges(win) {
						if x.Slug == slug {
							// Sent early in a second, so that the second
							// the timestamp names is the one meant; a
							// retry waits for and names its own second.
							c.SetStampExact(func() string {
								time.Sleep(oracle.Aligned(e.Now()))
								return e.Now().Truncate(time.Second).Add(x.Offset).In(e.Location).Format(oracle.TimestampLayout)
							})
							c.StampOffset = x.Offset
						}
					}
					return ""
				}, want, "auth", "boundary")
			}
		}
		window := func(d time.Duration) func(*Bench, *Call, device.Format, string) string {
			return func(e *Bench, c *Call, _ device.Format, _ string) string {
				w := e.Fleet.Window()
				if w == 0 {
					return "the fleet disables the timestamp window"
				}
				off := w * time.Duration(d) / 100 // d is a percentage of the window
				c.SetStampAt(e, off)
				return ""
			}
		}
		// CONTRACT 1: the window holds both ways; inside it, past and future
		// are valid.
		add("timestamp.past-inside-window", "a timestamp half the window in the past", "5", window(-50), Expectation{ContractOK: true, Status: 200}, "auth")
		add("timestamp.future-inside-window", "a timestamp half the window in the future", "5", window(50), Expectation{ContractOK: true, Status: 200}, "auth")
		add("timestamp.future", "a timestamp one day ahead", "5", func(e *Bench, c *Call, _ device.Format, _ string) string {
			if e.Fleet.Window() == 0 {
				return "the fleet disables the timestamp window"
			}
			c.SetStampAt(e, 24*time.Hour)
			return ""
		}, Expectation{Status: 401, Codes: []string{device.CodeStaleTimestamp}, Field: device.FieldTimestamp}, "auth")
		stale := Expectation{Status: 401, Codes: []string{device.CodeStaleTimestamp}, Field: device.FieldTimestamp}
		add("timestamp.stale", "a timestamp one day old", "5", func(e *Bench, c *Call, _ device.Format, _ string) string {
			if e.Fleet.Window() == 0 {
				return "the fleet disables the timestamp window"
			}
			c.SetStampAt(e, -24*time.Hour)
			return ""
		}, stale, "auth")
		add("sign.wrong", "a well-formed sign that does not match", "5", func(e *Bench, c *Call, _ device.Format, _ string) string {
			if !e.KnownSign {
				return "the fleet's sign scheme cannot tell a wrong sign (sign: format or off)"
			}
			c.KeepSign = true
			c.Set(device.FieldSign, WrongSign)
			c.Tamper = &client.Tamper{Sign: WrongSign}
			return ""
		}, Expectation{Must: true, Status: 401, Codes: []string{device.CodeBadSignature}, Field: device.FieldSign, Quote: oracle.QuoteSignCarried, Inference: oracle.InferSign}, "auth")
		add("api_key.unknown", "an api_key that was never issued", "5", func(e *Bench, c *Call, _ device.Format, id string) string {
			k := "unknown-" + e.Faker(id).LetterN(12)
			c.Set(device.FieldAPIKey, k)
			c.Tamper = &client.Tamper{APIKey: k} // a key of no account: no credential
			return ""
		}, Expectation{Must: true, Status: 401, Codes: []string{device.CodeUnknownAPIKey}, Field: device.FieldAPIKey, Quote: oracle.QuoteSignCarried, Inference: oracle.InferKey}, "auth")
		add("myservice_id.other-account", "the myservice_id of another account", "5", func(e *Bench, c *Call, _ device.Format, _ string) string {
			if e.Target.OtherAccount == "" {
				return "the fleet has a single account"
			}
			c.Set(device.FieldAccount, e.Target.OtherAccount)
			return ""
		}, Expectation{Must: true, Status: 403, Codes: []string{device.CodeAccountMismatch}, Field: device.FieldAccount}, "auth")
		add("mac.unknown", "a gateway the account does not have", "2.1", func(e *Bench, c *Call, _ device.Format, id string) string {
			c.Set(device.FieldMAC, hexN(e.Faker(id), 12))
			return ""
		}, Expectation{Status: 404, Codes: []string{device.CodeGatewayNotFound}, Field: device.FieldMAC})
		if op != device.SendMessage {
			add("sn.unknown", "a device the gateway does not have", "2.2", func(e *Bench, c *Call, _ device.Format, id string) string {
				c.Set(device.FieldSN, hexN(e.Faker(id), 32))
				return ""
			}, Expectation{Status: 404, Codes: []string{device.CodeDeviceNotFound}, Field: device.FieldSN})
		}
	}
	return cs
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
