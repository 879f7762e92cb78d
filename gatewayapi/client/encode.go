package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
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
// format is zero) with codec.AppendRequest, the one request encoder, keeping
// their order and any duplicates: JSON {"control":{...}}, XML
// <xml><control>...</control></xml>. It fails only on a value type it does
// not know, an invalid json.Number or json.RawMessage in JSON, or a key
// that cannot be an XML element name; a malformed body is sent with
// Request.RawBody instead.
func Encode(format device.Format, fields []Field) ([]byte, error) {
	cf, err := codecFields(format, fields)
	if err != nil {
		return nil, err
	}
	b, err := codec.AppendRequest(nil, format, cf)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return b, nil
}

// jsonObject is fields as one JSON object in their order, as inside a JSON
// body: what signers hash or read.
func jsonObject(fields []Field) ([]byte, error) {
	cf, err := codecFields(device.JSON, fields)
	if err != nil {
		return nil, err
	}
	b, err := codec.AppendJSONControl(nil, cf)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return b, nil
}

// codecFields is fields for the encoder in format.
func codecFields(format device.Format, fields []Field) ([]codec.Field, error) {
	cf := make([]codec.Field, len(fields))
	for i, f := range fields {
		var err error
		if cf[i], err = codecField(format, f); err != nil {
			return nil, fmt.Errorf("client: field %q: %w", f.Key, err)
		}
	}
	return cf, nil
}

// codecField is f for the encoder: in XML every value is element text; in
// JSON a json.Number is a number literal (encoding/json's "0" when empty,
// as the client has always sent it), a json.RawMessage a JSON value and nil
// null.
func codecField(format device.Format, f Field) (codec.Field, error) {
	if format == device.XML {
		text, err := valueText(f.Value)
		return codec.Field{Key: f.Key, Value: text}, err
	}
	switch v := f.Value.(type) {
	case string:
		return codec.Field{Key: f.Key, Value: v}, nil
	case json.Number:
		if v == "" {
			v = "0"
		}
		return codec.Field{Key: f.Key, Value: string(v), Kind: codec.Number}, nil
	case json.RawMessage:
		return codec.Field{Key: f.Key, Value: string(v), Kind: codec.JSONValue}, nil
	case nil:
		return codec.Field{Key: f.Key, Kind: codec.Null}, nil
	}
	_, err := valueText(f.Value)
	return codec.Field{}, err
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
