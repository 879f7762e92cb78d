package device

import (
	"slices"
	"strings"
	"time"
)

// Operation is one of the three POST operations of the interface.
type Operation uint8

const (
	SendCommand Operation = iota + 1
	SendMessage
	UpdateName
)

// Operations lists the three operations in published order.
var Operations = []Operation{SendCommand, SendMessage, UpdateName}

// Path is the operation's published path below the base URL.
func (o Operation) Path() string {
	switch o {
	case SendCommand:
		return "/v1/services/gateway/command"
	case SendMessage:
		return "/v1/services/gateway/message"
	case UpdateName:
		return "/v1/services/device/update_name"
	}
	return ""
}

// Name is a short name used in logs, labels and reports.
func (o Operation) Name() string {
	switch o {
	case SendCommand:
		return "command"
	case SendMessage:
		return "message"
	case UpdateName:
		return "update_name"
	}
	return "unknown"
}

func (o Operation) String() string { return o.Name() }

// Field names of the envelope and the operations, as written on the wire in
// both formats.
const (
	FieldAPIKey       = "api_key"
	FieldTimestamp    = "timestamp"
	FieldSign         = "sign"
	FieldAccount      = "myservice_id"
	FieldMAC          = "mac"
	FieldFormat       = "format"
	FieldSN           = "sn"
	FieldDeviceID     = "device_id"
	FieldType         = "type"
	FieldMessageType  = "message_type"
	FieldMessageValue = "message_value"
	FieldName         = "name"
)

// EnvelopeFields are the required envelope fields in published order.
var EnvelopeFields = []string{FieldAPIKey, FieldTimestamp, FieldSign, FieldAccount, FieldMAC}

// TimestampLayout is the published YYYYMMDDHHMMSS form.
const TimestampLayout = "20060102150405"

// Limits of text fields the published interface leaves open (CONTRACT 3).
const (
	MaxNameLen         = 64
	MaxAPIKeyLen       = 128
	MaxMessageTypeLen  = 64
	MaxMessageValueLen = 256
)

// HexLen is the length of each hexadecimal identifier field.
var HexLen = map[string]int{FieldSign: 32, FieldAccount: 24, FieldMAC: 12, FieldSN: 32, FieldDeviceID: 32}

// Pair is one field of a control element, named as on the wire.
type Pair struct {
	Key   string
	Value Value
}

// Envelope is the common part of every request (published 2.1).
type Envelope struct {
	APIKey    string
	Timestamp string
	// Time is Timestamp read as a wall-clock time without a zone; the
	// authenticator places it in the fleet's zone.
	Time      time.Time
	Sign      string
	AccountID string
	MAC       string
	// Format is the optional format field; zero when absent.
	Format Format
}

// Request is a parsed and validated request of any operation.
type Request struct {
	Op Operation
	Envelope
	// SN and Type and Settings: send command; SN and Name: update name.
	SN       string
	Type     *Type
	Settings []Setting
	Name     string
	// settings is where Settings starts: the request and its settings are
	// one allocation.
	settings [MaxFields]Setting
	// MessageType and MessageValue: send message.
	MessageType  string
	MessageValue string
}

// Parse validates the fields of one control element for an operation. The
// format is the body's format; it decides the thermostat points' names and
// what the optional format field must say.
func Parse(op Operation, format Format, pairs []Pair) (*Request, *Error) {
	return ParseOpen(op, format, pairs, RefuseOpen)
}

// ParseOpen is Parse reading the forms neither text decides as open says
// (OpenForms): gwsim serve --open-forms.
func ParseOpen(op Operation, format Format, pairs []Pair, open OpenForms) (*Request, *Error) {
	p := parser{op: op, format: format, pairs: pairs, open: open}
	if open == AcceptOpen && format == JSON {
		// A JSON member twice is open: the first is read.
	} else if len(pairs) <= smallPairs {
		for i := range pairs {
			for j := 0; j < i; j++ {
				if pairs[j].Key == pairs[i].Key {
					return nil, invalid(pairs[i].Key, "%s appears more than once", pairs[i].Key)
				}
			}
		}
	} else {
		p.seen = make(map[string]Value, len(pairs))
		for _, kv := range pairs {
			if _, dup := p.seen[kv.Key]; dup {
				return nil, invalid(kv.Key, "%s appears more than once", kv.Key)
			}
			p.seen[kv.Key] = kv.Value
		}
	}
	if p.seen == nil && len(pairs) <= smallPairs {
		for i := range pairs {
			if k := slotOf(pairs[i].Key); k >= 0 && p.slots[k] == 0 {
				p.slots[k] = int8(i + 1)
			}
		}
	}
	if p.seen == nil && len(pairs) > smallPairs {
		p.seen = make(map[string]Value, len(pairs))
		for _, kv := range pairs {
			if _, dup := p.seen[kv.Key]; !dup {
				p.seen[kv.Key] = kv.Value
			}
		}
	}
	req := &Request{Op: op}
	if err := p.envelope(&req.Envelope); err != nil {
		return nil, err
	}
	var err *Error
	switch op {
	case SendCommand:
		err = p.command(req)
	case SendMessage:
		err = p.message(req)
	case UpdateName:
		err = p.rename(req)
	default:
		err = Errorf(CodeNotFound, "", "unknown operation")
	}
	if err != nil {
		return nil, err
	}
	return req, nil
}

type parser struct {
	op     Operation
	format Format
	pairs  []Pair
	// seen indexes pairs by key when there are more than smallPairs.
	seen map[string]Value
	open OpenForms
	// slots holds, by slotOf, 1 + the index of the first pair of each
	// name the parse looks up more than once (0: absent), when seen is
	// nil.
	slots [numSlots]int8
}

// numSlots is the number of names slotOf numbers.
const numSlots = 9

// slotOf numbers the names of the envelope (0 to 4, in EnvelopeFields'
// order) and the other names a parse looks up more than once; -1 for any
// other name.
func slotOf(name string) int {
	switch name {
	case FieldAPIKey:
		return 0
	case FieldTimestamp:
		return 1
	case FieldSign:
		return 2
	case FieldAccount:
		return 3
	case FieldMAC:
		return 4
	case FieldFormat:
		return 5
	case FieldSN:
		return 6
	case FieldDeviceID:
		return 7
	case FieldType:
		return 8
	}
	return -1
}

// smallPairs is how many pairs are searched one by one, which is faster
// than building a map; a valid request has at most 12, only odd or hostile
// bodies more.
const smallPairs = 16

// get is the value of the field named name.
func (p *parser) get(name string) (Value, bool) {
	if p.seen != nil {
		v, ok := p.seen[name]
		return v, ok
	}
	if k := slotOf(name); k >= 0 {
		if i := p.slots[k]; i > 0 {
			return p.pairs[i-1].Value, true
		}
		return Value{}, false
	}
	for i := range p.pairs {
		if p.pairs[i].Key == name {
			return p.pairs[i].Value, true
		}
	}
	return Value{}, false
}

// str returns a required string field as sent. Values are not trimmed: a
// mac of 12 hexadecimal characters with a space before it is 13 characters
// (published 2.1); only name is trimmed (CONTRACT 3).
func (p *parser) str(name string) (string, *Error) {
	v, ok := p.get(name)
	if !ok {
		return "", Errorf(CodeMissingField, name, "%s is required", name)
	}
	if v.Kind != String {
		what := v.Text
		if v.Kind == Number {
			what = "a number"
		}
		return "", invalid(name, "%s must be a string, not %s", name, what)
	}
	return v.Text, nil
}

func (p *parser) hex(name string) (string, *Error) {
	s, err := p.str(name)
	if err != nil {
		return "", err
	}
	n := hexLen(name)
	hex, upper := hexDigits(s)
	if len(s) != n || !hex {
		return "", invalid(name, "%s must be %d hexadecimal characters, not %s", name, n, quote(s))
	}
	if upper {
		return strings.ToLower(s), nil
	}
	return s, nil
}

// hexLen is HexLen[name] without the map's hashing.
func hexLen(name string) int {
	switch name {
	case FieldSign, FieldSN, FieldDeviceID:
		return 32
	case FieldAccount:
		return 24
	case FieldMAC:
		return 12
	}
	return HexLen[name]
}

// hexDigits reports whether s is all hexadecimal digits (isHex) and
// whether any is in upper case, in one pass.
func hexDigits(s string) (hex, upper bool) {
	var seen uint8
	for i := 0; i < len(s); i++ {
		seen |= hexClass[s[i]]
	}
	if seen&hexNot != 0 {
		return false, false
	}
	return true, seen&hexUpper != 0
}

// hexClass is what hexDigits sees in a byte: hexLower for 0-9 and a-f,
// hexUpper for A-F, hexNot for any other.
var hexClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9' || 'a' <= c && c <= 'f':
			t[c] = hexLower
		case 'A' <= c && c <= 'F':
			t[c] = hexUpper
		default:
			t[c] = hexNot
		}
	}
	return t
}()

const (
	hexLower uint8 = 1 << iota
	hexUpper
	hexNot
)

// isDigits reports whether s is n ASCII digits.
func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// timestampTime reads 14 digits (the caller checked them) as
// time.Parse(TimestampLayout, s) does, without its general parser: ok
// when time.Parse takes s, with the same time. sec60 reports a second of
// 60 in an otherwise real date and time, which time.Parse refuses; t is
// then the second after :59.
func timestampTime(s string) (t time.Time, ok, sec60 bool) {
	two := func(i int) int { return int(s[i]-'0')*10 + int(s[i+1]-'0') }
	year := two(0)*100 + two(2)
	month, day, hour, minute, sec := two(4), two(6), two(8), two(10), two(12)
	if month < 1 || month > 12 || day < 1 || day > DaysIn(month, year) || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false, false
	}
	t = time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	return t, sec < 60, sec == 60
}

// DaysIn is the length of a month of the proleptic Gregorian calendar.
func DaysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func (p *parser) envelope(e *Envelope) *Error {
	for _, name := range EnvelopeFields {
		if _, ok := p.get(name); !ok {
			return Errorf(CodeMissingField, name, "%s is required", name)
		}
	}
	var err *Error
	if e.APIKey, err = p.str(FieldAPIKey); err != nil {
		return err
	}
	if strings.TrimSpace(e.APIKey) == "" || len(e.APIKey) > MaxAPIKeyLen {
		return invalid(FieldAPIKey, "api_key must be 1 to %d characters", MaxAPIKeyLen)
	}
	if e.Timestamp, err = p.str(FieldTimestamp); err != nil {
		return err
	}
	if !isDigits(e.Timestamp, 14) {
		return invalid(FieldTimestamp, "timestamp must be 14 digits YYYYMMDDHHMMSS, not %s", quote(e.Timestamp))
	}
	t, ok, sec60 := timestampTime(e.Timestamp)
	if !ok && !(sec60 && p.open == AcceptOpen) {
		// Second 60 (a leap second) is open: the second after :59.
		return invalid(FieldTimestamp, "timestamp %s is not a real date and time", e.Timestamp)
	}
	e.Time = t
	if e.Sign, err = p.hex(FieldSign); err != nil {
		return err
	}
	if e.AccountID, err = p.hex(FieldAccount); err != nil {
		return err
	}
	if e.MAC, err = p.hex(FieldMAC); err != nil {
		return err
	}
	if _, ok := p.get(FieldFormat); ok {
		s, err := p.str(FieldFormat)
		if err != nil {
			return err
		}
		f, ok := ParseFormat(s)
		if s != strings.ToLower(s) && p.open == RefuseOpen {
			ok = false // JSON or XML in upper case is open
		}
		if !ok {
			return invalid(FieldFormat, "format must be json or xml, not %s", quote(s))
		}
		if f != p.format {
			return invalid(FieldFormat, "format says %s but the body is %s", f, p.format)
		}
		e.Format = f
	}
	return nil
}

// unexpected rejects the first field, in body order, that is not allowed:
// the envelope, format, the operation's extra fields and, for a command,
// typ's fields. The lists are short, so a search beats building a set.
func (p *parser) unexpected(typ *Type, extra ...string) *Error {
	for _, kv := range p.pairs {
		if !p.allowed(kv.Key, typ, extra) {
			return Errorf(CodeUnexpectedField, kv.Key, "%s", p.whyUnexpected(kv.Key, typ))
		}
	}
	return nil
}

func (p *parser) allowed(key string, typ *Type, extra []string) bool {
	if k := slotOf(key); k >= 0 && k < len(EnvelopeFields) || key == FieldFormat || slices.Contains(extra, key) {
		return true
	}
	if typ != nil {
		for i := range typ.Fields {
			if typ.Fields[i].WireName(p.format) == key {
				return true
			}
		}
	}
	return false
}

func (p *parser) whyUnexpected(key string, typ *Type) string {
	for _, t := range Types {
		for i := range t.Fields {
			f := &t.Fields[i]
			if f.WireName(p.format) == key && typ != nil {
				return key + " is not a field of " + A(typ.Name)
			}
			if f.Name != f.JSON && (key == f.Name || key == f.JSON) {
				return key + " is not a field in " + p.format.String() + "; write it as " + quote(f.WireName(p.format))
			}
		}
	}
	return key + " is not a field of " + p.op.Name()
}

func (p *parser) command(r *Request) *Error {
	typeName, err := p.str(FieldType)
	if err != nil {
		return err
	}
	// Only a listed name: the published table lists type's values, and no
	// sentence makes another spelling equal to one.
	t, ok := LookupType(typeName)
	if !ok {
		return invalid(FieldType, "type must be one of %s, not %s", strings.Join(TypeNames(), ", "), quote(typeName))
	}
	r.Type = t
	if err := p.unexpected(t, FieldSN, FieldDeviceID, FieldType); err != nil {
		return err
	}
	_, hasSN := p.get(FieldSN)
	_, hasID := p.get(FieldDeviceID)
	switch {
	case hasSN:
		if r.SN, err = p.hex(FieldSN); err != nil {
			return err
		}
		if hasID {
			id, err := p.hex(FieldDeviceID)
			if err != nil {
				return err
			}
			if id != r.SN {
				return invalid(FieldDeviceID, "device_id and sn name different devices")
			}
		}
	case hasID:
		if r.SN, err = p.hex(FieldDeviceID); err != nil {
			return err
		}
	default:
		return Errorf(CodeMissingField, FieldSN, "sn is required")
	}
	r.Settings = r.settings[:0] // a type has at most MaxFields fields
	for i := range t.Fields {
		f := &t.Fields[i]
		key := f.WireName(p.format)
		v, ok := p.get(key)
		if !ok {
			continue
		}
		// Errors name the field as the request wrote it ("cooling point" in
		// JSON), like the codec's and the unexpected-field errors do.
		set, err := f.parse(i, v, key, p.open)
		if err != nil {
			return err
		}
		r.Settings = append(r.Settings, set)
	}
	if len(r.Settings) == 0 {
		names := make([]string, len(t.Fields))
		for i := range t.Fields {
			names[i] = t.Fields[i].WireName(p.format)
		}
		return Errorf(CodeMissingField, t.Fields[0].WireName(p.format),
			"a %s command must carry at least one of %s", t.Name, strings.Join(names, ", "))
	}
	return nil
}

func (p *parser) message(r *Request) *Error {
	if err := p.unexpected(nil, FieldMessageType, FieldMessageValue); err != nil {
		return err
	}
	var err *Error
	if r.MessageType, err = p.str(FieldMessageType); err != nil {
		return err
	}
	if !messageTypeOK(r.MessageType, p.open) {
		return invalid(FieldMessageType, "message_type must be a word of 1 to %d letters, digits, '_', '.' or '-', not %s",
			MaxMessageTypeLen, quote(r.MessageType))
	}
	if r.MessageValue, err = p.str(FieldMessageValue); err != nil {
		return err
	}
	if !messageValueOK(r.MessageValue, p.open) {
		return invalid(FieldMessageValue, "message_value must be <setting_name>=<number>, not %s", quote(r.MessageValue))
	}
	return nil
}

func (p *parser) rename(r *Request) *Error {
	if err := p.unexpected(nil, FieldSN, FieldName); err != nil {
		return err
	}
	var err *Error
	if r.SN, err = p.hex(FieldSN); err != nil {
		return err
	}
	if r.Name, err = p.str(FieldName); err != nil {
		return err
	}
	r.Name = strings.TrimSpace(r.Name) // CONTRACT 3: 1 to 64 characters after trimming
	return checkName(r.Name)
}

func checkName(name string) *Error {
	return checkText(FieldName, name, MaxNameLen, "text of 1 to 64 characters")
}

// CheckName validates a display name (trimmed by the caller).
func CheckName(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return nil
}
