package gwsimtest

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/send"
)

// Sign is the sign of a request with this timestamp, under the fleet's
// md5 scheme: md5 of api_key, secret and timestamp, lower-case hex (the
// interface's section 2.1). An app under test signs for itself; a test
// compares.
func (c Credentials) Sign(timestamp string) string { return auth.Sign(c.APIKey, c.Secret, timestamp) }

// Timestamp is t as the interface writes a timestamp (YYYYMMDDhhmmss, in
// the fleet's zone: UTC unless its timestamp_tz says otherwise).
func (s *Server) Timestamp(t time.Time) string { return auth.Timestamp(t, s.fleet.Location()) }

// Client sends signed requests to the simulator, as a well-behaved app
// would: a fresh timestamp and a correct sign each time. It is for the
// parts of a test that are not the app under test (setting a device up
// through the interface, a second app sharing the gateway).
type Client struct {
	s      *Server
	cred   Credentials
	format device.Format
}

// Client is a client of the fleet's first account and gateway, sending
// JSON.
func (s *Server) Client() *Client { return &Client{s: s, cred: s.cred, format: device.JSON} }

// XML is the same client sending XML.
func (c *Client) XML() *Client { d := *c; d.format = device.XML; return &d }

// As is the same client with other credentials (another account, key or
// gateway of the fleet).
func (c *Client) As(cred Credentials) *Client { d := *c; d.cred = cred; return &d }

// Answer is the simulator's answer to one request.
type Answer struct {
	Status int
	// OK: 200 with status success.
	OK bool
	// Code, Field and Message are the error's, when it is one.
	Code, Field, Message string
	Body                 []byte
}

func (a *Answer) String() string {
	if a.OK {
		return fmt.Sprintf("%d success", a.Status)
	}
	if a.Field != "" {
		return fmt.Sprintf("%d %s (%s): %s", a.Status, a.Code, a.Field, a.Message)
	}
	return fmt.Sprintf("%d %s: %s", a.Status, a.Code, a.Message)
}

// Field is one field of a command: its name in either format's spelling
// ("cooling_point" or "cooling point") and its value as sent (a number is
// written without quotes in JSON).
type Field struct{ Name, Value string }

// F is a Field.
func F(name, value string) Field { return Field{Name: name, Value: value} }

// Command sends a command to a device of the client's gateway.
func (c *Client) Command(ctx context.Context, sn, typ string, fields ...Field) (*Answer, error) {
	req := send.Request{Op: device.SendCommand, Format: c.format, SN: sn, Type: typ}
	for _, f := range fields {
		req.Settings = append(req.Settings, send.Setting{Name: f.Name, Value: f.Value})
	}
	return c.do(ctx, req)
}

// Message sends a message to the client's gateway (message_type and a
// SETTING=NUMBER message_value, e.g. "brightness=80").
func (c *Client) Message(ctx context.Context, messageType, value string) (*Answer, error) {
	return c.do(ctx, send.Request{Op: device.SendMessage, Format: c.format, MessageType: messageType, MessageValue: value})
}

// Rename sets a device's display name.
func (c *Client) Rename(ctx context.Context, sn, name string) (*Answer, error) {
	return c.do(ctx, send.Request{Op: device.UpdateName, Format: c.format, SN: sn, Name: name})
}

func (c *Client) do(ctx context.Context, req send.Request) (*Answer, error) {
	cred := send.Credentials{APIKey: c.cred.APIKey, Secret: c.cred.Secret, AccountID: c.cred.AccountID, MAC: c.cred.MAC,
		Scheme: c.s.fleet.Scheme(), Location: c.s.fleet.Location()}
	res, err := send.Send(ctx, send.Options{Target: c.s.URL, Timeout: 30 * time.Second}, cred, req, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("gwsimtest: %w", err)
	}
	r := res.Response
	return &Answer{Status: r.Status, OK: res.OK, Code: r.ErrorCode, Field: r.ErrorField, Message: r.ErrorMessage, Body: r.Body}, nil
}
