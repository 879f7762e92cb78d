package catalog

import (
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"hash/fnv"
	"io"
	"math/rand"
	"regexp"
	"strconv"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Cases generated from the grammars the texts rest on (package oracle,
// nearmiss.go): every near miss of JSON's number for every numeric field,
// of JSON's and XML's other productions, of the HTTP method and path, of
// the sign's inputs and characters, and of each hexadecimal identifier at
// every position. Each case expects the oracle's verdict and quotes its
// sentence; the forms the texts leave open are only probed
// (grammarProbes). A case's tags name its generator (gen:<name>), which
// docs/checks.md counts.

// GenTag is the tag prefix that names a case's generator.
const GenTag = "gen:"

// grammarCases are every generated case, in a stable order.
func grammarCases() []Case {
	var cs []Case
	cs = append(cs, jsonNumberCases()...)
	cs = append(cs, bodyGrammarCases()...)
	cs = append(cs, fieldTwiceCases()...)
	cs = append(cs, methodCases()...)
	cs = append(cs, pathCases()...)
	cs = append(cs, signCases()...)
	cs = append(cs, idPositionCases()...)
	return cs
}

// wantNearMiss is a case's expectation from a generated form's verdict.
// A MUST that rests on an inference carries it in the expectation, and so
// once in the check's assertion beside its quote, never in the title.
func wantNearMiss(m oracle.NearMiss, field string) Expectation {
	w := wantOf(m.Verdict, field)
	if m.Verdict.OK {
		w = Expectation{ContractOK: true, Status: 200}
	}
	if m.Inference != "" && m.Verdict.Must && !m.Verdict.OK {
		w.Inference = m.Inference
	}
	return w
}

// numberMid is a whole number inside a numeric field's range, around
// which its number forms are written: a lenient reading of a near miss
// gives a value the field takes.
func numberMid(f *oracle.Field) int64 {
	if f.Kind == oracle.Decimal {
		return (f.Min + f.Max) / 2 / 1000
	}
	return (f.Min + f.Max + 1) / 2
}

// jsonSentinel stands for a field's value in a body whose literal is
// written in after encoding.
const jsonSentinel = "\u2063gw-literal\u2063"

// jsonNumberCases write every near miss of RFC 8259's number as the
// value of every numeric field (published 2.3; CONTRACT 2 allows JSON
// numbers there).
func jsonNumberCases() []Case {
	var cs []Case
	for _, t := range oracle.Types {
		for i := range t.Fields {
			fd := &t.Fields[i]
			if fd.Kind != oracle.Integer && fd.Kind != oracle.Decimal {
				continue
			}
			for _, m := range oracle.JSONNumberNearMisses(numberMid(fd)) {
				m := m
				name := fd.Name
				cs = append(cs, Case{ID: "command." + check.Slug(t.Name) + "." + check.Slug(fd.Name) + ".json-text." + m.Slug,
					Op: device.SendCommand, Type: t.Name, Section: "2.3", Contract: "2", Formats: []device.Format{device.JSON},
					Title: "a " + t.Name + " command whose " + fd.JSON + " is the JSON text " + m.Title,
					Want:  wantNearMiss(m, ""), NoSim: true, Tags: []string{"json-text", "broken", GenTag + "json-number"},
					Build: commandOn(t.Name, func(e *Bench, c *Call, f device.Format, _ string) string {
						c.Set(name, jsonSentinel)
						valid := string(Encoded(e, *c, f))
						key := `"` + WireName(f, name) + `":`
						body := strings.Replace(valid, key+`"`+jsonSentinel+`"`, key+m.Text, 1)
						c.Raw = func(device.Format) []byte { return []byte(body) }
						return ""
					})})
			}
		}
	}
	return cs
}

// HeldBack reports whether a generated form is one XML 1.0 refuses that the reference
// simulator still accepts: its XML reader (Go's encoding/xml) does not
// check the XML declaration's place and form, processing-instruction
// targets, or an attribute given twice. The suite is proved against the
// simulator, so they are probed (INFO, grammarProbes) until it refuses
// them; docs/checks.md lists them.
func HeldBack(slug string) bool {
	switch slug {
	case "white-space-before-declaration", "declaration-twice", "declaration-after-comment",
		"declaration-without-version", "declaration-empty", "declaration-version-unquoted",
		"declaration-encoding-first", "declaration-upper-case", "attribute-twice":
		return true
	}
	return false
}

// bodyGrammarCases write every decided near miss of JSON's and XML's
// grammars into a send message body.
func bodyGrammarCases() []Case {
	var cs []Case
	op := device.SendMessage
	add := func(prefix, gen string, f device.Format, ms []oracle.NearMiss) {
		for _, m := range ms {
			m := m
			if m.Verdict.Open || f == device.XML && HeldBack(m.Slug) {
				continue // probed, never judged (grammarProbes)
			}
			id := prefix + "invalid." + m.Slug
			if m.Verdict.OK {
				id = prefix + "valid." + m.Slug
			}
			if strings.HasPrefix(m.Slug, "doctype-") && !m.Verdict.Must {
				id = op.Name() + ".xml-doctype." + strings.TrimPrefix(m.Slug, "doctype-")
			}
			cs = append(cs, Case{ID: id, Op: op, Section: "2.1", Contract: "2", Formats: []device.Format{f},
				Title: "a " + op.Name() + " request " + m.Title, Want: wantNearMiss(m, ""), NoSim: true,
				Tags:  []string{f.String() + "-text", GenTag + gen},
				Build: rawCase(op, func(_ *Bench, b []byte, _ device.Format) []byte { return []byte(m.Edit(string(b))) })})
		}
	}
	add(op.Name()+".json-text.", "json-text", device.JSON, oracle.JSONTextNearMisses())
	add(op.Name()+".xml-text.", "xml-document", device.XML, oracle.XMLDocumentNearMisses())
	return cs
}

// fieldTwiceCases give every field's element twice in an XML body, the
// same value both times, in every operation (command: the envelope, sn
// and type on its first type, and each type's own fields).
func fieldTwiceCases() []Case {
	var cs []Case
	add := func(op device.Operation, typ, id, name string, build func(func(*Bench, *Call, device.Format, string) string) func(*Bench, device.Format, string) (Call, string)) {
		v := oracle.Judge(op, device.XML, []oracle.Sent{{Key: name}, {Key: name}})
		w := wantOf(v, "")
		w.Codes = append(w.Codes, device.CodeMalformedBody)
		title := "a " + op.Name() + " request whose " + name + " element appears twice, with the same value"
		if typ != "" {
			title = "a " + typ + " command whose " + name + " element appears twice, with the same value"
		}
		cs = append(cs, Case{ID: id, Op: op, Type: typ, Section: "2.1", Contract: "2", Formats: []device.Format{device.XML},
			Title: title, Want: w, NoSim: true, Tags: []string{"xml-text", "structure", GenTag + "xml-field-twice"},
			Build: build(func(e *Bench, c *Call, f device.Format, _ string) string {
				body := twiceElement(string(Encoded(e, *c, f)), name)
				c.Raw = func(device.Format) []byte { return []byte(body) }
				return ""
			})})
	}
	for _, op := range device.Operations {
		op := op
		onAny := func(ch func(*Bench, *Call, device.Format, string) string) func(*Bench, device.Format, string) (Call, string) {
			return OnOp(op, ch)
		}
		names := append([]string{}, device.EnvelopeFields...)
		switch op {
		case device.SendMessage:
			names = append(names, device.FieldMessageType, device.FieldMessageValue)
		case device.UpdateName:
			names = append(names, device.FieldSN, device.FieldName)
		case device.SendCommand:
			names = append(names, device.FieldSN, device.FieldType)
		}
		for _, n := range names {
			add(op, "", op.Name()+".xml-field-twice."+check.Slug(n), n, onAny)
		}
	}
	for _, t := range oracle.Types {
		t := t
		for _, fd := range t.Fields {
			build := func(ch func(*Bench, *Call, device.Format, string) string) func(*Bench, device.Format, string) (Call, string) {
				return commandOn(t.Name, ch)
			}
			add(device.SendCommand, t.Name, "command."+check.Slug(t.Name)+".xml-field-twice."+check.Slug(fd.Name), fd.Name, build)
		}
	}
	return cs
}

// twiceElement writes the first element of name in an XML body twice.
func twiceElement(body, name string) string {
	re := regexp.MustCompile(`<` + regexp.QuoteMeta(name) + `>[^<]*</` + regexp.QuoteMeta(name) + `>`)
	loc := re.FindStringIndex(body)
	if loc == nil {
		return body
	}
	el := body[loc[0]:loc[1]]
	return body[:loc[1]] + el + body[loc[1]:]
}

// methodCases send every operation with every method of RFC 9110 but
// POST (GET, PUT, DELETE and PATCH are transport.go's; HEAD, whose answer
// has no body, has its own checks, headChecks), an unknown token and
// post in lower case.
func methodCases() []Case {
	var cs []Case
	for oi, op := range device.Operations {
		op := op
		for j, m := range oracle.MethodNearMisses() {
			m := m
			switch m.Text {
			case "GET", "PUT", "DELETE", "PATCH", "HEAD":
				continue
			}
			w := methodRefused(wantNearMiss(m, ""))
			// The method does not depend on the body's format: each form
			// is sent in JSON on some operations, in XML on the others.
			cs = append(cs, Case{ID: op.Name() + ".method." + m.Slug, Op: op, Section: "4", Contract: "2", Formats: Alternate(oi + j),
				Title: "a " + op.Name() + " request " + m.Title, Want: w, NoSim: true,
				Tags:  []string{"transport", GenTag + "http-method"},
				Build: OnOp(op, func(_ *Bench, c *Call, _ device.Format, _ string) string { c.Method = m.Text; return "" })})
		}
	}
	return cs
}

// pathCases send every operation to each decided near miss of its path
// but the catalog's own (transport.go: a trailing s, /v2, capitals).
func pathCases() []Case {
	var cs []Case
	for oi, op := range device.Operations {
		op := op
		for j, m := range oracle.PathNearMisses(op.Path()) {
			m := m
			if m.Verdict.Open {
				continue
			}
			// As for the methods: JSON on some operations, XML on others.
			cs = append(cs, Case{ID: op.Name() + ".path." + m.Slug, Op: op, Section: "9", Contract: "2", Formats: Alternate(oi + j),
				Title: "a " + op.Name() + " request " + m.Title, Want: wantNearMiss(m, ""), NoSim: true,
				Tags:  []string{"transport", GenTag + "http-path"},
				Build: OnOp(op, func(_ *Bench, c *Call, _ device.Format, _ string) string { c.Path = m.Text; return "" })})
		}
	}
	return cs
}

// rng is a source drawn from the run's seed and a case's ID.
func (b *Bench) rng(id string) *rand.Rand {
	h := fnv.New64a()
	io.WriteString(h, id)
	return rand.New(rand.NewSource(b.Seed ^ int64(h.Sum64())))
}

// Alternate is JSON for an even position and XML for an odd one: a
// family of one case per position is sent in both formats, half each.
func Alternate(i int) []device.Format {
	return []device.Format{[]device.Format{device.JSON, device.XML}[i%2]}
}

// signCases send the sign computed from every proper subset and every
// other order of its inputs (and with separators), and the right sign
// with one character changed at each of its 32 positions to a digit drawn
// from the run's seed (of the 480 such changes, one per position), spread
// over the three operations: a service may check the sign on one
// operation's path and not on another's.
func signCases() []Case {
	var cs []Case
	need := func(e *Bench) string {
		if !e.md5Signs() {
			return "the harness does not compute the sign itself (scheme " + string(e.Fleet.Scheme()) + " or a sign command): the sign's near misses are not covered"
		}
		return ""
	}
	for j, m := range oracle.SignInputForms() {
		m := m
		op, formats := spread(j, device.Operations)
		cs = append(cs, Case{ID: op.Name() + ".sign.inputs." + m.Slug, Op: op, Section: "5", Contract: "1", Formats: formats,
			Title: "a " + op.Name() + " request whose sign is the " + m.Title, Want: wantNearMiss(m, device.FieldSign), NoSim: true,
			Tags: []string{"auth", "near-miss", GenTag + "sign-inputs"},
			Build: OnOp(op, func(e *Bench, c *Call, _ device.Format, _ string) string {
				if skip := need(e); skip != "" {
					return skip
				}
				k := e.Target.Key
				c.KeepSign = true
				c.Set(device.FieldSign, oracle.SignOf(m.Text, k.Key, k.Secret, c.Get(device.FieldTimestamp)))
				c.Resign = func(ts string) (string, bool) { return oracle.SignOf(m.Text, k.Key, k.Secret, ts), true }
				return ""
			})})
	}
	v, inf := oracle.SignPositionVerdict()
	for i := 0; i < 32; i++ {
		i := i
		m := oracle.NearMiss{Verdict: v, Inference: inf}
		op, formats := spread(i, device.Operations)
		cs = append(cs, Case{ID: op.Name() + ".sign." + oracle.PositionSlug(i), Op: op, Section: "5", Contract: "1", Formats: formats,
			Title: "a " + op.Name() + " request whose sign has its character at position " + itoa(i+1) + " of 32 changed to another hexadecimal digit",
			Want:  wantNearMiss(m, device.FieldSign), NoSim: true, Tags: []string{"auth", "near-miss", GenTag + "sign-position"},
			Build: OnOp(op, func(e *Bench, c *Call, _ device.Format, id string) string {
				if skip := need(e); skip != "" {
					return skip
				}
				k := e.Target.Key
				right := oracle.SignOf(oracle.SignTemplate, k.Key, k.Secret, c.Get(device.FieldTimestamp))
				c.KeepSign = true
				changed := oracle.PositionChanges(right, e.rng(id))[i].Text
				c.Set(device.FieldSign, changed)
				c.Tamper = &client.Tamper{SignAt: i + 1, SignTo: changed[i : i+1]}
				return ""
			})})
	}
	return cs
}

// spread is the operation and format the i-th case of a family of one
// case per position is sent in: the operations in turn, and each
// operation's cases in JSON and XML by turns.
func spread(i int, ops []device.Operation) (device.Operation, []device.Format) {
	return ops[i%len(ops)], Alternate(i / len(ops))
}

func itoa(n int) string { return strconv.Itoa(n) }

// knownID reports whether a hexadecimal id names an account, gateway or
// device of the fleet.
func (b *Bench) knownID(v string) bool {
	v = strings.ToLower(v)
	for _, a := range b.Fleet.Accounts {
		if strings.ToLower(a.ID) == v {
			return true
		}
		for _, g := range a.Gateways {
			if strings.ToLower(g.MAC) == v {
				return true
			}
			for _, d := range g.Devices {
				if strings.ToLower(d.SN) == v {
					return true
				}
			}
		}
	}
	return false
}

// idPositionCases change each hexadecimal identifier the fleet gives
// (myservice_id, mac, sn) at every position but the first and the last
// (near-miss.*.first-character-changed and last-character-changed), to a
// digit drawn from the run's seed that names nothing in the fleet, spread
// over the operations that carry it.
func idPositionCases() []Case {
	var cs []Case
	for _, x := range []struct {
		field, section, contract string
		n                        int
		ops                      []device.Operation
		w                        Expectation
	}{
		// MUST by an inference from published 5 (every request carries
		// myservice_id with the key's credentials).
		{device.FieldAccount, "5", "1", 24, device.Operations, Expectation{Must: true, Status: 403, Codes: []string{device.CodeAccountMismatch}, Field: device.FieldAccount,
			Quote: oracle.QuoteSignCarried, Inference: oracle.InferAccount}},
		{device.FieldMAC, "2.1", "3", 12, device.Operations, Expectation{Status: 404, Codes: []string{device.CodeGatewayNotFound}, Field: device.FieldMAC,
			Quote: oracle.QuoteNoGateway}},
		{device.FieldSN, "2.2", "3", 32, []device.Operation{device.SendCommand, device.UpdateName}, Expectation{Status: 404, Codes: []string{device.CodeDeviceNotFound}, Field: device.FieldSN,
			Quote: oracle.QuoteNoDevice}},
	} {
		x := x
		for i := 1; i < x.n-1; i++ {
			i := i
			op, formats := spread(i, x.ops)
			cs = append(cs, Case{ID: op.Name() + ".near-miss." + x.field + "." + oracle.PositionSlug(i), Op: op, Formats: formats,
				Title:   "a " + op.Name() + " request with " + x.field + " changed at position " + itoa(i+1) + " of " + itoa(x.n),
				Section: x.section, Contract: x.contract, Want: x.w, NoSim: true, Tags: []string{"near-miss", "auth", GenTag + "id-position"},
				Build: OnOp(op, func(e *Bench, c *Call, _ device.Format, id string) string {
					v := c.Get(x.field)
					if len(v) != x.n {
						return "the fleet's " + x.field + " is not " + itoa(x.n) + " characters"
					}
					changed := oracle.PositionChanges(v, e.rng(id))[i].Text
					if e.knownID(changed) {
						changed = e.unknownNearMiss(v, i)
					}
					c.Set(x.field, changed)
					if x.field == device.FieldSN {
						c.SN = "" // no device of the fleet is named: nothing to put back
					}
					return ""
				})})
		}
	}
	return cs
}

// HeldBackForms are the generated XML forms probed rather than judged
// (heldBack), by slug.
func HeldBackForms() []string {
	var out []string
	for _, m := range oracle.XMLDocumentNearMisses() {
		if !m.Verdict.Open && HeldBack(m.Slug) {
			out = append(out, m.Slug)
		}
	}
	return out
}
