package explore

import (
	"math/rand"
	"strconv"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Rules is the one place the model asks what the two texts say about a
// value: which fields a device type has, whether a value is valid and how
// it is stored, and the values to try. Everything else the model knows
// (accounts, gateways, devices, which device answers through which gateway,
// that a refused request changes nothing) is the state machine's own.
type Rules interface {
	// Types lists the published device types.
	Types() []string
	// Fields lists a type's command fields by state key.
	Fields(typ string) []string
	// Wire is a field's name in a body of format ("json", "xml").
	Wire(typ, key, format string) string
	// Command judges a command's device fields: the stored value of each,
	// or the refusal.
	Command(typ, format string, fields []KV) (map[string]string, *Refusal)
	// Name judges a new display name: the name stored, or the refusal.
	Name(format, name string) (string, *Refusal)
	// Message judges message_type and message_value.
	Message(format, mtype, mvalue string) *Refusal
	// Valid and Invalid draw a value of a command field; Simplest is the
	// plainest valid value, for the shrinker.
	Valid(r *rand.Rand, typ, key string) KV
	Invalid(r *rand.Rand, typ, key string) (KV, string)
	Simplest(typ, key string) KV
	// ValidName, InvalidName, ValidMessage and InvalidMessage draw the
	// other operations' values.
	ValidName(r *rand.Rand) string
	InvalidName(r *rand.Rand) (string, string)
	ValidMessage(r *rand.Rand) Msg
	InvalidMessage(r *rand.Rand) (Msg, string)
}

// Refusal is the error a request must get. Open says the texts leave the
// request open: any answer conforms, and what it stores is not known.
type Refusal struct {
	Status int
	Code   string
	Field  string
	Open   bool
}

// oracleRules are the harness's own rule table (gatewayapi/oracle):
// judging through oracle.Judge, values from its generators (a plain drawn
// value, every allowed form, each edge, every way to break the grammar).
type oracleRules struct {
	valid, invalid map[*oracle.Field][]oracle.Sample
	// open are the forms neither text decides (oracle's OpenForms), drawn
	// only by a generator asked to (Generator.OpenForms).
	open map[*oracle.Field][]oracle.Sample
}

// OpenDrawer is a Rules that can also draw forms the texts leave open:
// a command field's value, or a message, whose verdict is Open (any answer
// conforms, what it stores is not known). ok is false when the field has
// none.
type OpenDrawer interface {
	OpenValue(r *rand.Rand, typ, key string) (kv KV, note string, ok bool)
	OpenMessage(r *rand.Rand) (m Msg, note string, ok bool)
}

// OracleRules are the rules of gatewayapi/oracle.
func OracleRules() Rules {
	r := &oracleRules{valid: map[*oracle.Field][]oracle.Sample{}, invalid: map[*oracle.Field][]oracle.Sample{},
		open: map[*oracle.Field][]oracle.Sample{}}
	add := func(f *oracle.Field) {
		for _, s := range f.OpenForms(f.Example) {
			if s.Value.Kind != oracle.Other { // a JSON literal: KV carries none
				r.open[f] = append(r.open[f], s)
			}
		}
		for _, s := range append(append(f.Forms(f.Example), f.Edges()...), f.Broken(f.Example)...) {
			switch {
			case s.Verdict.Open || s.Value.Kind == oracle.Other:
				// Open: no prediction; a JSON literal: KV carries none.
			case s.Verdict.OK && s.Value.Kind == oracle.Number && !f.Judge(device.XML, oracle.Str(s.Value.Raw)).OK:
				// A JSON number whose text is open in a string (51e0):
				// KV sends it as a string in XML, where no reading decides.
			case s.Verdict.OK:
				r.valid[f] = append(r.valid[f], s)
			default:
				r.invalid[f] = append(r.invalid[f], s)
			}
		}
	}
	for _, t := range oracle.Types {
		for i := range t.Fields {
			add(&t.Fields[i])
		}
	}
	add(&oracle.Name)
	add(&oracle.MessageType)
	add(&oracle.MessageValue)
	return r
}

func (*oracleRules) Types() []string { return oracle.TypeNames() }

func (*oracleRules) Fields(typ string) []string {
	if t, ok := oracle.LookupType(typ); ok {
		return t.StateKeys()
	}
	return nil
}

func field(typ, key string) *oracle.Field {
	if t, ok := oracle.LookupType(typ); ok {
		if f, ok := t.Field(key); ok {
			return f
		}
	}
	return nil
}

func (*oracleRules) Wire(typ, key, format string) string {
	if format != "json" {
		return key
	}
	if f := field(typ, key); f != nil {
		return f.Wire(device.JSON)
	}
	return oracle.JSONName(key)
}

func formatOf(s string) device.Format {
	if s == "xml" {
		return device.XML
	}
	return device.JSON
}

// judge is oracle.Judge on op's own fields behind a valid envelope: the
// explorer's model decides the credentials, gateway and device itself.
func (*oracleRules) judge(op device.Operation, format string, own []oracle.Sent) (map[string]any, *Refusal) {
	sent := []oracle.Sent{
		{Key: device.FieldAPIKey, Value: oracle.Str(oracle.APIKey.Example)},
		{Key: device.FieldTimestamp, Value: oracle.Str(oracle.TimestampF.Example)},
		{Key: device.FieldSign, Value: oracle.Str(oracle.Sign.Example)},
		{Key: device.FieldAccount, Value: oracle.Str(oracle.Account.Example)},
		{Key: device.FieldMAC, Value: oracle.Str(oracle.MAC.Example)},
	}
	v := oracle.Judge(op, formatOf(format), append(sent, own...))
	switch {
	case v.Open:
		return nil, &Refusal{Open: true}
	case !v.OK:
		return nil, &Refusal{Status: v.Status, Code: v.Code, Field: v.Field}
	}
	return v.State, nil
}

func (r *oracleRules) Command(typ, format string, fields []KV) (map[string]string, *Refusal) {
	own := []oracle.Sent{{Key: device.FieldSN, Value: oracle.Str(oracle.SN.Example)}, {Key: device.FieldType, Value: oracle.Str(typ)}}
	for _, kv := range fields {
		v := oracle.Str(kv.Value)
		if kv.Number && format == "json" {
			v = oracle.Num(kv.Value)
		}
		own = append(own, oracle.Sent{Key: r.Wire(typ, kv.Key, format), Value: v})
	}
	state, bad := r.judge(device.SendCommand, format, own)
	if bad != nil {
		return nil, bad
	}
	out := make(map[string]string, len(state))
	for k, v := range state {
		out[k] = storedText(v)
	}
	return out, nil
}

// storedText is a stored value as the model keeps it.
func storedText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return valueText(v)
}

func (r *oracleRules) Name(format, name string) (string, *Refusal) {
	state, bad := r.judge(device.UpdateName, format, []oracle.Sent{
		{Key: device.FieldSN, Value: oracle.Str(oracle.SN.Example)}, {Key: device.FieldName, Value: oracle.Str(name)}})
	if bad != nil {
		return "", bad
	}
	return storedText(state[device.FieldName]), nil
}

func (r *oracleRules) Message(format, mtype, mvalue string) *Refusal {
	_, bad := r.judge(device.SendMessage, format, []oracle.Sent{
		{Key: device.FieldMessageType, Value: oracle.Str(mtype)}, {Key: device.FieldMessageValue, Value: oracle.Str(mvalue)}})
	return bad
}

// sample is a drawn sample's value as a KV.
func sample(key string, s oracle.Sample) KV {
	return KV{Key: key, Value: s.Value.Raw, Number: s.Value.Kind == oracle.Number}
}

// Valid is, half the time, a plain drawn value, else one of the forms and
// edges the rules allow.
func (r *oracleRules) Valid(rnd *rand.Rand, typ, key string) KV {
	f := field(typ, key)
	if f == nil {
		return KV{Key: key, Value: "x"}
	}
	if ss := r.valid[f]; len(ss) > 0 && rnd.Intn(2) == 0 {
		return sample(key, ss[rnd.Intn(len(ss))])
	}
	return KV{Key: key, Value: f.Draw(rnd)}
}

// Plain is a plain drawn value of a field, in its canonical form: a
// value every reading of the texts stores as sent.
func (r *oracleRules) Plain(rnd *rand.Rand, typ, key string) KV {
	if f := field(typ, key); f != nil {
		return KV{Key: key, Value: f.Draw(rnd)}
	}
	return KV{Key: key, Value: "x"}
}

func (r *oracleRules) Invalid(rnd *rand.Rand, typ, key string) (KV, string) {
	f := field(typ, key)
	ss := r.invalid[f]
	if f == nil || len(ss) == 0 {
		return KV{Key: key, Value: ""}, "empty " + key
	}
	s := ss[rnd.Intn(len(ss))]
	return sample(key, s), key + " " + s.Title
}

func (*oracleRules) Simplest(typ, key string) KV {
	if f := field(typ, key); f != nil {
		return KV{Key: key, Value: f.Example}
	}
	return KV{Key: key, Value: "x"}
}

func (r *oracleRules) ValidName(rnd *rand.Rand) string {
	if ss := r.valid[&oracle.Name]; len(ss) > 0 && rnd.Intn(2) == 0 {
		return ss[rnd.Intn(len(ss))].Value.Raw
	}
	return oracle.Name.Draw(rnd)
}

func (r *oracleRules) InvalidName(rnd *rand.Rand) (string, string) {
	ss := r.invalid[&oracle.Name]
	s := ss[rnd.Intn(len(ss))]
	return s.Value.Raw, "name " + s.Title
}

func (r *oracleRules) ValidMessage(rnd *rand.Rand) Msg {
	m := Msg{Type: oracle.MessageType.Draw(rnd), Value: oracle.MessageValue.Draw(rnd)}
	if ss := r.valid[&oracle.MessageValue]; len(ss) > 0 && rnd.Intn(3) == 0 {
		m.Value = ss[rnd.Intn(len(ss))].Value.Raw
	}
	if ss := r.valid[&oracle.MessageType]; len(ss) > 0 && rnd.Intn(3) == 0 {
		m.Type = ss[rnd.Intn(len(ss))].Value.Raw
	}
	return m
}

func (r *oracleRules) InvalidMessage(rnd *rand.Rand) (Msg, string) {
	m := Msg{Type: oracle.MessageType.Draw(rnd), Value: oracle.MessageValue.Draw(rnd)}
	if rnd.Intn(3) == 0 {
		ss := r.invalid[&oracle.MessageType]
		s := ss[rnd.Intn(len(ss))]
		m.Type = s.Value.Raw
		return m, "message_type " + s.Title
	}
	ss := r.invalid[&oracle.MessageValue]
	s := ss[rnd.Intn(len(ss))]
	m.Value = s.Value.Raw
	return m, "message_value " + s.Title
}

// OpenValue draws one of a command field's open forms ("0051" for a
// dimming, " Auto" for a mode).
func (r *oracleRules) OpenValue(rnd *rand.Rand, typ, key string) (KV, string, bool) {
	f := field(typ, key)
	if f == nil || len(r.open[f]) == 0 {
		return KV{}, "", false
	}
	s := r.open[f][rnd.Intn(len(r.open[f]))]
	return sample(key, s), key + " " + s.Title + " (open)", true
}

// OpenMessage draws a message whose type or value is an open form.
func (r *oracleRules) OpenMessage(rnd *rand.Rand) (Msg, string, bool) {
	m := Msg{Type: oracle.MessageType.Draw(rnd), Value: oracle.MessageValue.Draw(rnd)}
	ts, vs := r.open[&oracle.MessageType], r.open[&oracle.MessageValue]
	switch {
	case len(ts) > 0 && (len(vs) == 0 || rnd.Intn(3) == 0):
		s := ts[rnd.Intn(len(ts))]
		m.Type = s.Value.Raw
		return m, "message_type " + s.Title + " (open)", true
	case len(vs) > 0:
		s := vs[rnd.Intn(len(vs))]
		m.Value = s.Value.Raw
		return m, "message_value " + s.Title + " (open)", true
	}
	return Msg{}, "", false
}

// PastEdge draws a value one step past an edge of a command field
// (refused): a dimming of 0 or 101, a point a thousandth past its range,
// an opt one character too long.
//
// PastEdges lists them all, with their notes; typ "" names the rename's
// name and the message's fields.
func (r *oracleRules) PastEdges(typ, key string) (kvs []KV, notes []string) {
	f := field(typ, key)
	if typ == "" {
		f = map[string]*oracle.Field{"name": &oracle.Name, "message_type": &oracle.MessageType, "message_value": &oracle.MessageValue}[key]
	}
	if f == nil {
		return nil, nil
	}
	for _, s := range f.Edges() {
		if !s.Verdict.OK && !s.Verdict.Open && s.Value.Kind == oracle.String {
			kvs, notes = append(kvs, sample(key, s)), append(notes, key+" "+s.Title)
		}
	}
	return kvs, notes
}

func (r *oracleRules) PastEdge(rnd *rand.Rand, typ, key string) (KV, string, bool) {
	f := field(typ, key)
	if f == nil {
		return KV{}, "", false
	}
	var past []oracle.Sample
	for _, s := range f.Edges() {
		if !s.Verdict.OK && !s.Verdict.Open && s.Value.Kind == oracle.String {
			past = append(past, s)
		}
	}
	if len(past) == 0 {
		return KV{}, "", false
	}
	s := past[rnd.Intn(len(past))]
	return sample(key, s), key + " " + s.Title, true
}
