package catalog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Field is one control field by its canonical (XML) name; the JSON name is
// looked up when the request is sent, so a case changes one field in both
// formats alike.
type Field struct {
	Name  string
	Value string
	// Num sends the value as a JSON number literal; Lit as any JSON value
	// written as value (true, null, an array, an object).
	Num, Lit bool
	// Wire, when set, is the key as written in every format, for checks that
	// misspell or misplace a field on purpose.
	Wire string
}

// Call is one request a check sends, before it is given a format.
type Call struct {
	Op          device.Operation
	Path        string // op's path when empty
	Method      string
	ContentType string // the format's own when empty; client.NoContentType for none
	Fields      []Field
	// Raw, when set, replaces the encoded body (malformed bodies).
	Raw func(device.Format) []byte
	// KeepSign sends the sign field as it is (a wrong sign on purpose).
	KeepSign bool
	// Tamper says how a sign kept on purpose departs from the valid one
	// (a digit changed, a constant), for the lines that send the request
	// again; a kept sign without one is made from inputs no line holds.
	Tamper *client.Tamper
	// StampOffset is how far from the clock Stamp writes the timestamp.
	StampOffset time.Duration
	// device is the fleet device the call is about, for clean-up.
	SN, Type string
	// Stamp, when set, writes the timestamp of an attempt sent now: the
	// clock, or the clock at a set offset (a window's edge). A retry asked
	// for by the target (429, 503 with Retry-After) is a new attempt with
	// its timestamp written again and signed afresh, so that what the
	// check tests does not age by the wait. A timestamp set by hand (a
	// broken form) clears it: that value is the thing tested.
	Stamp func() string
	// Exact says the second Stamp writes is the thing tested (a window's
	// edge): a request that would repeat another is written again in a
	// later second rather than moved off it (client.Ledger).
	Exact bool
	// Resign, set on a call that keeps its sign (KeepSign) and whose sign
	// follows from its timestamp (a valid sign in another form), gives the
	// sign to send with another timestamp, so that the call too can be
	// moved off a second where it would repeat another request.
	Resign func(timestamp string) (string, bool)
	// Repeat sends the call as it is even when it repeats a request sent
	// before: a probe of replays (CONTRACT 1) means it to.
	Repeat bool
}

// WrongSign is a well-formed sign that is no sign of any request: made
// from no key or secret, it is no secret and reports show it.
const WrongSign = "0123456789abcdef0123456789abcdef"

// JSONNames maps canonical names to JSON keys where they differ.
var JSONNames = func() map[string]string {
	m := map[string]string{}
	for _, t := range oracle.Types {
		for _, f := range t.Fields {
			if f.JSON != f.Name {
				m[f.Name] = f.JSON
			}
		}
	}
	return m
}()

func WireName(f device.Format, name string) string {
	if f == device.JSON {
		if j, ok := JSONNames[name]; ok {
			return j
		}
	}
	return name
}

// Set replaces a field's value, or appends the field when absent.
func (c *Call) Set(name, value string) *Call {
	if name == device.FieldTimestamp {
		c.Stamp = nil
	}
	for i := range c.Fields {
		if c.Fields[i].Name == name && c.Fields[i].Wire == "" {
			c.Fields[i].Value, c.Fields[i].Num, c.Fields[i].Lit = value, false, false
			return c
		}
	}
	c.Fields = append(c.Fields, Field{Name: name, Value: value})
	return c
}

// SetNum sets a field as a JSON number.
func (c *Call) SetNum(name, value string) *Call {
	c.Set(name, value)
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			c.Fields[i].Num = true
		}
	}
	return c
}

// SetRaw marks a field's value as a JSON value written as it is.
func (c *Call) SetRaw(name string) *Call {
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			c.Fields[i].Lit = true
		}
	}
	return c
}

// Drop removes a field.
func (c *Call) Drop(name string) *Call {
	if name == device.FieldTimestamp {
		c.Stamp = nil
	}
	out := c.Fields[:0]
	for _, f := range c.Fields {
		if f.Name != name {
			out = append(out, f)
		}
	}
	c.Fields = out
	return c
}

// only keeps the envelope and the named fields.
func (c *Call) Keep(names ...string) *Call {
	keep := map[string]bool{}
	for _, n := range append(names, device.EnvelopeFields...) {
		keep[n] = true
	}
	out := c.Fields[:0]
	for _, f := range c.Fields {
		if keep[f.Name] {
			out = append(out, f)
		}
	}
	c.Fields = out
	return c
}

// Get returns a field's value.
func (c *Call) Get(name string) string {
	for _, f := range c.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Request turns the call into a client Request in a format, with a fresh
// timestamp unless the call pins one.
func (c Call) Request(f device.Format) client.Request {
	path := c.Path
	if path == "" {
		path = c.Op.Path()
	}
	r := client.Request{Path: path, Method: c.Method, Format: f, ContentType: c.ContentType, Repeat: c.Repeat}
	if c.KeepSign {
		r.Sign = client.SignKeep
	}
	r.Fields = make([]client.Field, 0, len(c.Fields))
	for _, kv := range c.Fields {
		key := kv.Wire
		if key == "" {
			key = WireName(f, kv.Name)
		}
		var v any = kv.Value
		switch {
		case kv.Num && f == device.JSON:
			v = json.Number(kv.Value)
		case kv.Lit && f == device.JSON:
			v = json.RawMessage(kv.Value)
		}
		r.Fields = append(r.Fields, client.Field{Key: key, Value: v})
	}
	if c.Raw != nil {
		r.RawBody = c.Raw(f)
	}
	r.Tamper = c.tamper()
	if c.Stamp != nil && !c.KeepSign && c.Raw == nil {
		r.Renew = func() []client.Field {
			renewed := c
			renewed.Fields = append([]Field(nil), c.Fields...)
			renewed.Stamp = nil
			for i := range renewed.Fields {
				// Only the timestamp field as the envelope writes it: a
				// check that renamed, dropped or broke it sends it so.
				if fl := &renewed.Fields[i]; fl.Name == device.FieldTimestamp && fl.Wire == "" {
					fl.Value = c.Stamp()
				}
			}
			return renewed.Request(f).Fields
		}
	}
	if c.Stamp != nil && c.Raw == nil && !c.Exact && (!c.KeepSign || c.Resign != nil) {
		// Another second near the clock's, for a request that would
		// repeat another (client.Ledger).
		r.Vary = func(shift int) []client.Field {
			moved := c
			moved.Fields = append([]Field(nil), c.Fields...)
			moved.Stamp = nil
			var stamp string
			for i := range moved.Fields {
				if fl := &moved.Fields[i]; fl.Name == device.FieldTimestamp && fl.Wire == "" {
					if t, err := time.Parse(oracle.TimestampLayout, c.Stamp()); err == nil {
						fl.Value = t.Add(time.Duration(shift) * time.Second).Format(oracle.TimestampLayout)
					}
					stamp = fl.Value
				}
			}
			if c.Resign != nil {
				sign, ok := c.Resign(stamp)
				if !ok {
					return c.Request(f).Fields
				}
				for i := range moved.Fields {
					if fl := &moved.Fields[i]; fl.Name == device.FieldSign && fl.Wire == "" {
						fl.Value = sign
					}
				}
			}
			return moved.Request(f).Fields
		}
	}
	return r
}

// tamper is what the request makes wrong on purpose in its sign,
// timestamp and api_key, for the lines that send it again (nil: nothing).
func (c Call) tamper() *client.Tamper {
	if c.Raw != nil {
		return nil // a malformed body: its timestamp and sign are renewed as they stand
	}
	var t client.Tamper
	if c.Tamper != nil {
		t = *c.Tamper
	}
	handSet := false
	for _, f := range c.Fields {
		if f.Name == device.FieldTimestamp && f.Wire == "" {
			handSet = c.Stamp == nil
		}
	}
	switch {
	case handSet:
		t.KeepTimestamp = true
	case c.Stamp != nil:
		t.Offset = c.StampOffset
	}
	if c.KeepSign && t.SignAt == 0 && t.Sign == "" && t.Unrepeatable == "" && c.Tamper == nil {
		t.Unrepeatable = "its sign was made on purpose from other inputs than the fleet's key, secret and this timestamp (a near miss of a credential, or another form of the sign)"
	}
	if t == (client.Tamper{}) {
		return nil
	}
	return &t
}

// SetStampAt sets the timestamp to the clock at off from now, for this
// attempt and those that follow.
func (c *Call) SetStampAt(b *Bench, off time.Duration) *Call {
	c.SetStamp(b.StampAt(off))
	c.StampOffset = off
	return c
}

// SetStamp sets the timestamp from a clock and keeps the clock for the
// attempts that follow (Call.Stamp).
func (c *Call) SetStamp(stamp func() string) *Call {
	c.Set(device.FieldTimestamp, stamp())
	c.Stamp, c.StampOffset = stamp, 0
	return c
}

// SetStampExact is SetStamp for a clock whose second is the thing tested
// (Call.Exact).
func (c *Call) SetStampExact(stamp func() string) *Call {
	c.SetStamp(stamp)
	c.Exact = true
	return c
}

// Base builds the valid request of an operation about a device (sn may be
// empty for send message), in published field order with the example
// values of the device's type.
func (b *Bench) Base(op device.Operation, sn, typeName string) Call {
	c := Call{Op: op, SN: sn, Type: typeName, Stamp: b.StampAt(0)}
	env := b.Client.Envelope(b.Target.Key, b.Target.AccountID, b.Target.MAC, b.Now(), b.Location)
	var own []oracle.Field
	if op == device.SendCommand {
		if t, ok := oracle.LookupType(typeName); ok {
			own = t.Fields
		}
	}
	// The envelope, two fields of the operation and a command's own.
	c.Fields = make([]Field, 0, len(env)+2+len(own))
	for _, f := range env {
		v, ok := f.Value.(string)
		if !ok {
			v = fmt.Sprint(f.Value)
		}
		c.Fields = append(c.Fields, Field{Name: f.Key, Value: v})
	}
	switch op {
	case device.SendCommand:
		c.Fields = append(c.Fields, Field{Name: device.FieldSN, Value: sn}, Field{Name: device.FieldType, Value: typeName})
		for _, f := range own {
			c.Fields = append(c.Fields, Field{Name: f.Name, Value: f.Example})
		}
	case device.SendMessage:
		c.Fields = append(c.Fields, Field{Name: device.FieldMessageType, Value: "message"},
			Field{Name: device.FieldMessageValue, Value: b.messageValue()})
	case device.UpdateName:
		c.Fields = append(c.Fields, Field{Name: device.FieldSN, Value: sn}, Field{Name: device.FieldName, Value: "Conformance Check"})
	}
	return c
}

// messageValue is a valid message_value no other message of the run
// carries (nor, by its tag from the clock, one of an earlier run): a check
// finds its own message in a log by it, whatever else the log holds, a
// log capped at any N that drops its oldest included, and a message that
// lands late is told from a later request's. In a --parallel run the
// worker's number is in it too.
func (b *Bench) messageValue() string {
	b.msgOnce.Do(func() { b.msgTag = strconv.FormatInt(time.Now().UnixMilli()%(36*36*36*36*36), 36) })
	n := b.msgSeq.Add(1)
	if b.Workers > 1 {
		return fmt.Sprintf("brightness_%s_w%d_%d=80", b.msgTag, b.Worker, n)
	}
	return fmt.Sprintf("brightness_%s_%d=80", b.msgTag, n)
}

// StampAt is the clock of a timestamp off the target's clock by off
// (Call.Stamp), written in the fleet's zone.
func (b *Bench) StampAt(off time.Duration) func() string {
	return func() string { return auth.Timestamp(b.Now().Add(off), b.Location) }
}
