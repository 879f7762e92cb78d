package client

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/simulator/auth"
	"github.com/gwdmi/gwtools/simulator/device"
	"github.com/gwdmi/gwtools/simulator/fleet"
)

// Field is one member of the control element, in send order. The harness
// builds bodies from fields rather than from the domain's types because it
// must also send what the domain would reject: duplicate, misspelt,
// misplaced or mistyped fields.
type Field struct {
	// Key is the wire name; the caller picks it for the format
	// ("cooling point" in JSON, "cooling_point" in XML).
	Key string
	// Value is a string; a json.Number to send a JSON number literal; a
	// json.RawMessage to send any JSON value as written (true, null, an
	// object); or nil for JSON null. In XML every value is element text.
	Value any
}

// SignPlaceholder is the sign Envelope puts in place until the client signs
// the request: well-formed, so that a request sent unsigned by mistake fails
// on the sign's value and not on its form.
const SignPlaceholder = "00000000000000000000000000000000"

// Envelope is the five envelope fields of published section 2.1 in
// published order, with the timestamp taken from now in loc (UTC if nil)
// and SignPlaceholder as the sign, for SignAuto to replace.
func (c *Client) Envelope(key fleet.APIKey, accountID, mac string, now time.Time, loc *time.Location) []Field {
	return []Field{
		{Key: device.FieldAPIKey, Value: key.Key},
		{Key: device.FieldTimestamp, Value: auth.Timestamp(now, loc)},
		{Key: device.FieldSign, Value: SignPlaceholder},
		{Key: device.FieldAccount, Value: accountID},
		{Key: device.FieldMAC, Value: mac},
	}
}

// Encode writes fields as a request body of the given format (JSON when
// format is zero), keeping their order and any duplicates: JSON
// {"control":{...}}, XML <xml><control>...</control></xml>. It fails only
// on a value type it does not know, an invalid json.RawMessage or a key that
// cannot be an XML element name; a malformed body is sent with
// Request.RawBody instead.
func Encode(format device.Format, fields []Field) ([]byte, error) {
	var b bytes.Buffer
	if format == device.XML {
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><xml><control>`)
		for _, f := range fields {
			if !isXMLName(f.Key) {
				return nil, fmt.Errorf("client: %q cannot be an XML element name", f.Key)
			}
			text, err := valueText(f.Value)
			if err != nil {
				return nil, fmt.Errorf("client: field %q: %w", f.Key, err)
			}
			b.WriteString("<" + f.Key + ">")
			if err := xml.EscapeText(&b, []byte(text)); err != nil {
				return nil, err
			}
			b.WriteString("</" + f.Key + ">")
		}
		b.WriteString(`</control></xml>`)
		return b.Bytes(), nil
	}
	b.WriteString(`{"control":`)
	if err := writeObject(&b, fields); err != nil {
		return nil, err
	}
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// writeObject writes fields as one JSON object in their order; a map or a
// struct would lose the order and the duplicates.
func writeObject(b *bytes.Buffer, fields []Field) error {
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeJSON(b, f.Key); err != nil {
			return err
		}
		b.WriteByte(':')
		switch v := f.Value.(type) {
		case string, json.Number:
			if err := writeJSON(b, v); err != nil {
				return fmt.Errorf("client: field %q: %w", f.Key, err)
			}
		case json.RawMessage:
			if !json.Valid(v) {
				return fmt.Errorf("client: field %q: %q is not a JSON value", f.Key, v)
			}
			b.Write(v)
		case nil:
			b.WriteString("null")
		default:
			return fmt.Errorf("client: field %q: value of type %T; use a string, json.Number or json.RawMessage", f.Key, f.Value)
		}
	}
	b.WriteByte('}')
	return nil
}

// writeJSON writes one string or number without HTML escaping, so that
// bodies in reports and curl commands read as they were typed.
func writeJSON(b *bytes.Buffer, v any) error {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
	return nil
}

// valueText is a field's value as text: the XML element content, and what
// signers read.
func valueText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return string(v), nil
	case json.RawMessage:
		return string(v), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("value of type %T; use a string, json.Number or json.RawMessage", v)
}

// isXMLName reports whether s is an XML element name (the Name production,
// simplified to Unicode letters and digits), so that Encode never writes a
// malformed body by accident.
func isXMLName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == ':' || unicode.IsLetter(r):
		case i > 0 && (r == '-' || r == '.' || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)):
		default:
			return false
		}
	}
	return true
}
