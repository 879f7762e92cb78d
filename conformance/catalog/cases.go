package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Expectation is what a case's answer should be.
type Expectation struct {
	// OK: the request is valid and MUST be answered with success.
	OK bool
	// ContractOK: the request is valid by the CONTRACT only, so its
	// success is a SHOULD.
	ContractOK bool
	// Must: the request is invalid by the published interface, so it MUST
	// NOT be answered with success; false for cases that are invalid only by
	// the CONTRACT (those have a SHOULD check alone).
	Must bool
	// Status, codes and field are the CONTRACT's answer (SHOULD).
	Status int
	Codes  []string
	Field  string
	// Literal: field is the key exactly as sent, not a canonical name.
	Literal bool
	// JSONError: the service may not be able to tell the request's format
	// (an unsupported Content-Type), and answer in JSON (CONTRACT 4).
	JSONError bool
	// OtherFormat: the body is of the other format than its Content-Type
	// says; the service may answer in either (ErrorFormats).
	OtherFormat bool
	// Allow: the answer carries Allow: POST (405).
	Allow bool
	// Said, when set, are the sentences of the CONTRACT that state this
	// answer, in place of those of its codes (codeSaid): a part of the
	// answer is judged only where one of them states it (Parts).
	Said []string
	// Quote is, for a refusal, the sentence of the texts that forbids
	// what the case sends (oracle.Verdict.Quote); the check's assertion
	// quotes it.
	Quote string
	// Inference, for a MUST whose sentence does not say it in so many
	// words, is the one step of reasoning from a published sentence that
	// makes it one (oracle.InferKey, InferSign); the assertion carries it.
	Inference string
}

// Case is one request, valid or with exactly one thing changed, sent in
// each format. The suite turns it into MUST, SHOULD, parity and sim checks.
type Case struct {
	// ID is stable; checks append the format and their kind to it.
	ID      string
	Title   string
	Section string
	// Contract is the CONTRACT section behind the SHOULD twin.
	Contract string
	Op       device.Operation
	Type     string
	Tags     []string
	// Formats limits the case to some formats (both when nil).
	Formats []device.Format
	// Build makes the request at run time; skip says why it cannot be made
	// against this fleet.
	Build func(e *Bench, f device.Format, id string) (c Call, skip string)
	Want  Expectation
	// Field and Value: for valid command values, the state the device must
	// show after (sim checks).
	Field, Value string
	// NoSim: the case is about another gateway or account than the tested
	// one, whose state the sim check does not read.
	NoSim bool
	// WholeFleet: the case sends to other gateways or accounts than the
	// tested one, which every worker of a --parallel run shares: its
	// checks are Shared (check.Traits).
	WholeFleet bool
}

// Costs of a case's checks against a slow target (check.Traits.Cost).
const (
	// quickCost: a request refused before the store answers at once.
	quickCost = 1
	// slowCost: a request the target accepts goes all the way (its
	// latency, its store), and so does one the store refuses (no such
	// device or gateway, a type mismatch).
	slowCost = 5
)

// Traits are what a check of the case takes (check.Traits), from what
// the case sends and expects. A case about other gateways or accounts is
// Shared; a message case is not: its state check looks for its own
// message among those the other workers append (observer.Log.gainedMessage),
// each valid message of a worker is one of a kind (Bench.Base).
func (c *Case) Traits(parity bool) check.Traits {
	t := check.Traits{Shared: c.WholeFleet, Cost: quickCost}
	if c.Want.OK || c.Want.ContractOK {
		t.Cost = slowCost
	}
	for _, code := range c.Want.Codes {
		switch code {
		case device.CodeDeviceNotFound, device.CodeGatewayNotFound, device.CodeTypeMismatch:
			t.Cost = slowCost
		}
	}
	if parity {
		t.Cost *= 2 // it sends the case twice
	}
	return t
}

// Expected says in words what the case expects: "success (MUST)",
// "success (SHOULD)" or "refused (MUST), 400 invalid_field".
func (c *Case) Expected() string {
	switch {
	case c.Want.OK:
		return "success (MUST)"
	case c.Want.ContractOK:
		return "success (SHOULD)"
	}
	level := "SHOULD"
	if c.Want.Must {
		level = "MUST"
	}
	return fmt.Sprintf("refused (%s), %d %s", level, c.Want.Status, strings.Join(c.Want.Codes, " or "))
}

func (c *Case) InFormats() []device.Format {
	if c.Formats != nil {
		return c.Formats
	}
	return []device.Format{device.JSON, device.XML}
}

// commandOn builds a command to the fleet's device of a type.
func commandOn(typeName string, change func(e *Bench, c *Call, f device.Format, id string) string) func(*Bench, device.Format, string) (Call, string) {
	return func(e *Bench, f device.Format, id string) (Call, string) {
		d, ok := e.Device(typeName)
		if !ok {
			return Call{}, "the fleet has no " + typeName + " on the tested gateway: not covered"
		}
		c := e.Base(device.SendCommand, d.SN, typeName)
		if change != nil {
			if skip := change(e, &c, f, id); skip != "" {
				return Call{}, skip
			}
		}
		return c, ""
	}
}

// OnOp builds a request of an operation about any device of the fleet.
func OnOp(op device.Operation, change func(e *Bench, c *Call, f device.Format, id string) string) func(*Bench, device.Format, string) (Call, string) {
	return func(e *Bench, f device.Format, id string) (Call, string) {
		d, ok := e.AnyDevice()
		if !ok && op != device.SendMessage {
			return Call{}, "the fleet has no device on the tested gateway"
		}
		c := e.Base(op, d.SN, d.Type)
		if change != nil {
			if skip := change(e, &c, f, id); skip != "" {
				return Call{}, skip
			}
		}
		return c, ""
	}
}

func setTo(name, value string) func(*Bench, *Call, device.Format, string) string {
	return func(_ *Bench, c *Call, _ device.Format, _ string) string { c.Set(name, value); return "" }
}

// without leaves a field out of the request.
func without(name string) func(*Bench, *Call, device.Format, string) string {
	return func(_ *Bench, c *Call, _ device.Format, _ string) string { c.Drop(name); return "" }
}

// opRow is one row of a table of cases made on each operation (opCases):
// the operation's valid request (OnOp) with change made to it.
type opRow struct {
	// id follows the table's prefix, title its lead; section is the
	// published section the case tests.
	id, title, section string
	change             func(e *Bench, c *Call, f device.Format, id string) string
	want               Expectation
	// formats limits the case to some formats (both when nil); tags
	// follow the table's own.
	formats []device.Format
	tags    []string
	// on, when set, says which operations the row is made on (all when
	// nil).
	on func(device.Operation) bool
}

// opCases are the cases of op made from the rows that are made on it, in
// order: ID prefix+id, title lead+title, each under the table's CONTRACT
// section and tagged with its tag first.
func opCases(op device.Operation, rows []opRow, prefix, lead, contract, tag string) []Case {
	var cs []Case
	for _, r := range rows {
		if r.on != nil && !r.on(op) {
			continue
		}
		cs = append(cs, Case{ID: prefix + r.id, Op: op, Title: lead + r.title, Section: r.section, Contract: contract,
			Build: OnOp(op, r.change), Want: r.want, Formats: r.formats, Tags: append([]string{tag}, r.tags...)})
	}
	return cs
}

// onMessage makes a row on send message alone.
func onMessage(op device.Operation) bool { return op == device.SendMessage }

// withSN makes a row on the operations about a device, whose request
// carries sn.
func withSN(op device.Operation) bool { return op != device.SendMessage }

func invalidField(field string) Expectation {
	return Expectation{Must: true, Status: 400, Codes: []string{device.CodeInvalidField}, Field: field}
}

func missingField(field string) Expectation {
	return Expectation{Must: true, Status: 400, Codes: []string{device.CodeMissingField}, Field: field}
}

// Cases is the whole catalog of request cases, in a stable order.
func Cases() []Case {
	var cs []Case
	cs = append(cs, validCases()...)
	cs = append(cs, valueCases()...)
	cs = append(cs, envelopeCases()...)
	cs = append(cs, operationCases()...)
	cs = append(cs, transportCases()...)
	cs = append(cs, structureCases()...)
	cs = append(cs, structureSamples()...)
	cs = append(cs, fleetCases()...)
	cs = append(cs, grammarCases()...)
	return cs
}

// String says in words the answer the CONTRACT gives the case in format f:
// the parts a sentence states, with the sentences, then the parts no
// sentence states, which the check reports and never fails.
func (w Expectation) String(f device.Format) string {
	var judged, said, info []string
	for _, p := range w.Parts(f) {
		if p.Info() {
			info = append(info, map[string]string{"status": "the status code", "code": "the error code",
				"field": "the field it names", "Allow": "the Allow header"}[p.What])
			continue
		}
		switch p.What {
		case "status":
			judged = append(judged, p.Want)
		case "code":
			judged = append(judged, "with error "+p.Want)
		case "field":
			judged = append(judged, "on field "+p.Want)
		case "format":
			judged = append(judged, "in "+p.Want)
		case "Allow":
			judged = append(judged, "and Allow: POST")
		}
		for _, q := range p.Said {
			if p.What != "format" && !slices.Contains(said, q) {
				said = append(said, q)
			}
		}
	}
	s := strings.Join(judged, " ")
	if len(said) > 0 {
		s += " (CONTRACT: “" + strings.Join(said, "” “") + "”)"
	}
	switch len(info) {
	case 0:
	case 1:
		s += "; " + info[0] + " is reported, not judged: no sentence states it"
	default:
		s += "; " + strings.Join(info, " and ") + " are reported, not judged: no sentence states them"
	}
	return s
}

// WireField is the field as the answer should name it.
func (w Expectation) WireField(f device.Format) string {
	if w.Literal {
		return w.Field
	}
	return WireName(f, w.Field)
}
