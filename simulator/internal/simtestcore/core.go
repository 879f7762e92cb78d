// Package simtestcore is the part of package simtest that imports nothing of
// the simulator: the test fleet, the Client that signs JSON and XML
// requests and reads answers and state over real HTTP, NeedTool and
// Chromium. Package simtest re-exports all of it beside Start (which
// starts a whole simulator) and Binary: tests use simtest. Only the
// internal tests of a package simtest imports (package server) import core,
// under the name simtest, since Go forbids that import cycle.
package simtestcore

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Identities of the test fleet.
const (
	AccountA = "a1a1a1a1a1a1a1a1a1a1a1a1"
	KeyA     = "key-a"
	SecretA  = "secret-a"
	MACA     = "a4c138f0e2b1" // one device of every type
	MACA2    = "a4c138f0e2b2" // a second gateway of account A, one Light Dimmer
	AccountB = "b2b2b2b2b2b2b2b2b2b2b2b2"
	KeyB     = "key-b"
	SecretB  = "secret-b"
	MACB     = "b0b0b0b0b0b1" // one device of every type
)

// SN is the serial number of the test fleet's device of type index i
// (in device.Types) on the gateway with the given prefix digit.
func SN(prefix byte, i int) string {
	return fmt.Sprintf("%c%029x%02x", prefix, 0, i)
}

// Fleet is the test fleet: account A (gateways MACA with one device of
// every type, and MACA2) and account B (gateway MACB with one device of
// every type). Devices are derived from device.Types, so a new type is
// covered by every test that ranges over them.
func Fleet() *fleet.Fleet {
	every := func(prefix byte) []fleet.Device {
		var ds []fleet.Device
		for i, t := range device.Types {
			ds = append(ds, fleet.Device{SN: SN(prefix, i), Type: t.Name, Name: t.Name + " " + string(prefix)})
		}
		return ds
	}
	f := &fleet.Fleet{Sign: "md5", Accounts: []fleet.Account{
		{ID: AccountA, APIKeys: []fleet.APIKey{{Key: KeyA, Secret: SecretA}}, Gateways: []fleet.Gateway{
			{MAC: MACA, Devices: every('a')},
			{MAC: MACA2, Devices: []fleet.Device{{SN: SN('c', 0), Type: "Light Dimmer", Name: "Porch", State: map[string]any{"dimming": 10}}}},
		}},
		{ID: AccountB, APIKeys: []fleet.APIKey{{Key: KeyB, Secret: SecretB}}, Gateways: []fleet.Gateway{
			{MAC: MACB, Devices: every('b')},
		}},
	}}
	if err := f.Check(); err != nil {
		panic("simtest: test fleet is invalid: " + err.Error())
	}
	return f
}

// F is one control field. Raw values are written as they are: a JSON
// literal (number, true, null, object) or inner XML.
type F struct {
	Key, Val string
	Raw      bool
}

// S is a string field.
func S(k, v string) F { return F{Key: k, Val: v} }

// N is a raw field: a JSON number or other literal, plain text (or inner
// markup) in XML.
func N(k, v string) F { return F{Key: k, Val: v, Raw: true} }

// Set replaces the value of key in fields, or appends it.
func Set(fields []F, f F) []F {
	out := append([]F(nil), fields...)
	for i := range out {
		if out[i].Key == f.Key {
			out[i] = f
			return out
		}
	}
	return append(out, f)
}

// Without drops key from fields.
func Without(fields []F, key string) []F {
	var out []F
	for _, f := range fields {
		if f.Key != key {
			out = append(out, f)
		}
	}
	return out
}

// Body writes fields as a request body with codec.AppendRequest, the
// encoder every client shares: {"control":{...}} or
// <xml><control>...</control></xml>, Raw values as they are, unchecked. It
// panics on what the encoder refuses (in XML, a key that is no element
// name): a body that cannot be written is the test's mistake.
func Body(format device.Format, fields []F) []byte {
	cf := make([]codec.Field, len(fields))
	for i, f := range fields {
		cf[i] = codec.Field{Key: f.Key, Value: f.Val}
		if f.Raw {
			cf[i].Kind = codec.Raw
		}
	}
	b, err := codec.AppendRequest(nil, format, cf)
	if err != nil {
		panic("simtest: " + err.Error())
	}
	return b
}

// ContentType is the request Content-Type of a format.
func ContentType(format device.Format) string {
	if format == device.XML {
		return "application/xml"
	}
	return "application/json"
}

// Client talks to one simulator as one api key of one account.
type Client struct {
	T          testing.TB
	Base       string
	HTTP       *http.Client
	APIKey     string
	Secret     string
	Account    string
	MAC        string
	AdminToken string
}

// NewClient is a client of account A of the test fleet.
func NewClient(t testing.TB, base string) *Client {
	return &Client{T: t, Base: base, HTTP: &http.Client{Timeout: 20 * time.Second},
		APIKey: KeyA, Secret: SecretA, Account: AccountA, MAC: MACA}
}

// Envelope is the five envelope fields with a fresh timestamp and sign.
func (c *Client) Envelope() []F { return c.EnvelopeAt(time.Now()) }

// EnvelopeAt is the envelope signed for the given time.
func (c *Client) EnvelopeAt(t time.Time) []F {
	ts := auth.Timestamp(t, time.UTC)
	return []F{
		S(device.FieldAPIKey, c.APIKey),
		S(device.FieldTimestamp, ts),
		S(device.FieldSign, auth.Sign(c.APIKey, c.Secret, ts)),
		S(device.FieldAccount, c.Account),
		S(device.FieldMAC, c.MAC),
	}
}

// Command is the fields of a send command to sn with the given type.
func (c *Client) Command(sn, typ string, fields ...F) []F {
	out := append(c.Envelope(), S(device.FieldSN, sn), S(device.FieldType, typ))
	return append(out, fields...)
}

// Response is one answer of an operation, read in the format its
// Content-Type names.
type Response struct {
	// Sent is the request body.
	Sent   []byte
	Status int
	Header http.Header
	Body   []byte
	// Format is what the Content-Type says (0 if neither JSON nor XML).
	Format device.Format
	// Result is the status member: success or error.
	Result               string
	Code, Field, Message string
}

func (r *Response) String() string {
	return fmt.Sprintf("%d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
}

// Send posts fields to an operation in a format.
func (c *Client) Send(op device.Operation, format device.Format, fields []F) *Response {
	return c.Post(op.Path(), ContentType(format), Body(format, fields))
}

// Post sends a body with a Content-Type (none when empty).
func (c *Client) Post(path, contentType string, body []byte) *Response {
	return c.Do(http.MethodPost, path, contentType, body)
}

// Do sends any request and reads the answer as an operation answer.
func (c *Client) Do(method, path, contentType string, body []byte) *Response {
	c.T.Helper()
	req, err := http.NewRequest(method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		c.T.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.T.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	r := &Response{Sent: body, Status: res.StatusCode, Header: res.Header, Body: b}
	if err := r.parse(); err != nil {
		c.T.Errorf("%s %s: answer %s: %v", method, path, r, err)
	}
	return r
}

type payload struct {
	Status string `json:"status" xml:"status"`
	Error  struct {
		Code    string `json:"code" xml:"code"`
		Field   string `json:"field" xml:"field"`
		Message string `json:"message" xml:"message"`
	} `json:"error" xml:"error"`
}

// parse reads the body in the format its Content-Type names; a body that
// does not parse as that format is an error.
func (r *Response) parse() error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("Content-Type: %v", err)
	}
	var p payload
	switch mt {
	case "application/json":
		r.Format = device.JSON
		dec := json.NewDecoder(bytes.NewReader(r.Body))
		dec.DisallowUnknownFields()
		err = dec.Decode(&p)
	case "application/xml":
		r.Format = device.XML
		var x struct {
			XMLName xml.Name `xml:"xml"`
			payload
		}
		err = xml.Unmarshal(r.Body, &x)
		p = x.payload
	default:
		return fmt.Errorf("Content-Type %s is neither JSON nor XML", mt)
	}
	if err != nil {
		return fmt.Errorf("body is not %s: %v", r.Format, err)
	}
	r.Result, r.Code, r.Field, r.Message = p.Status, p.Error.Code, p.Error.Field, p.Error.Message
	return nil
}

// OK fails the test unless the answer is 200 success in the format.
func (r *Response) OK(t testing.TB, format device.Format) {
	t.Helper()
	if r.Status != http.StatusOK || r.Result != "success" || r.Format != format || r.Code != "" {
		t.Errorf("want 200 success in %s, got %s", format, r)
	}
}

// Fail fails the test unless the answer is the given error in the format.
func (r *Response) Fail(t testing.TB, format device.Format, status int, code, field string) {
	t.Helper()
	if r.Status != status || r.Result != "error" || r.Code != code || r.Field != field || r.Format != format || r.Message == "" {
		t.Errorf("want %d %s (field %q) in %s, got %s", status, code, field, format, r)
	}
}

// Admin calls the admin API and returns the status and body; it fails the
// test on a transport error.
func (c *Client) Admin(method, path, body string) (int, http.Header, []byte) {
	c.T.Helper()
	req, err := http.NewRequest(method, c.Base+path, strings.NewReader(body))
	if err != nil {
		c.T.Fatal(err)
	}
	if c.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // admin bodies are JSON only
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.T.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

// AdminJSON calls the admin API, wants 200 and decodes the answer into v.
func (c *Client) AdminJSON(method, path, body string, v any) {
	c.T.Helper()
	status, h, b := c.Admin(method, path, body)
	if status != http.StatusOK {
		c.T.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.T.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			c.T.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// State is GET /_sim/state.
func (c *Client) State() []store.AccountView {
	c.T.Helper()
	var s struct {
		Accounts  []store.AccountView `json:"accounts"`
		Truncated bool                `json:"truncated"`
	}
	c.AdminJSON(http.MethodGet, "/_sim/state", "", &s)
	return s.Accounts
}

// Device is GET /_sim/gateways/{mac}/devices/{sn}.
func (c *Client) Device(mac, sn string) store.DeviceView {
	c.T.Helper()
	var d store.DeviceView
	c.AdminJSON(http.MethodGet, "/_sim/gateways/"+mac+"/devices/"+sn, "", &d)
	return d
}

// Messages is GET /_sim/gateways/{mac}/messages.
func (c *Client) Messages(mac string) []store.Message {
	c.T.Helper()
	var m []store.Message
	c.AdminJSON(http.MethodGet, "/_sim/gateways/"+mac+"/messages", "", &m)
	return m
}

// Reset is POST /_sim/reset.
func (c *Client) Reset() {
	c.T.Helper()
	c.AdminJSON(http.MethodPost, "/_sim/reset", "", nil)
}
