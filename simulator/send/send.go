// Package send sends one signed request of the interface and prints the
// exchange, for a developer with no gateway on the desk: `gwsim send`. It
// builds, signs and encodes the request with conformance/client, the one
// request encoder of the project, so what it sends is what the harness
// sends.
package send

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// SignMarker stands for the sign wherever a request is printed: the sign
// proves knowledge of the secret for a whole timestamp window, so it is
// never shown.
const SignMarker = "<SIGNATURE>"

// Credentials are the envelope values of the caller.
type Credentials struct {
	APIKey, Secret, AccountID, MAC string
	// Scheme is the target's sign scheme: md5 (also when empty), or
	// format/off, for which any well-formed sign is sent.
	Scheme auth.Scheme
	// Location reads timestamps; UTC when nil.
	Location *time.Location
}

// FromFleet takes the credentials the harness would use from a fleet: the
// first account with a key, its first key and gateway.
func FromFleet(f *fleet.Fleet) (Credentials, *fleet.Target, error) {
	t, err := f.Target()
	if err != nil {
		return Credentials{}, nil, err
	}
	return Credentials{APIKey: t.Key.Key, Secret: t.Key.Secret, AccountID: t.AccountID, MAC: t.MAC,
		Scheme: f.Scheme(), Location: f.Location()}, t, nil
}

// Request is one request to send.
type Request struct {
	Op     device.Operation
	Format device.Format
	// Type and SN for a command; SN and Name for update name.
	Type, SN, Name string
	// MessageType and MessageValue for a message.
	MessageType, MessageValue string
	// Settings are a command's fields, name=value, in the order given.
	// A field may be named as in either format ("cooling_point" or
	// "cooling point"); it is sent under the name the format uses.
	Settings []Setting
}

// Setting is one field of a command.
type Setting struct{ Name, Value string }

// ParseSetting reads name=value.
func ParseSetting(s string) (Setting, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return Setting{}, fmt.Errorf("%q is not FIELD=VALUE", s)
	}
	return Setting{Name: strings.TrimSpace(name), Value: value}, nil
}

// Check reports a request that cannot be sent as asked (bad usage, not a
// judgement of the values, which the target judges).
func (r Request) Check() error {
	switch r.Op {
	case device.SendCommand:
		if r.Type == "" {
			return errors.New("send command needs --type, one of: " + strings.Join(device.TypeNames(), ", "))
		}
		if r.SN == "" {
			return errors.New("send command needs --sn (or a fleet with a device of that type)")
		}
		if len(r.Settings) == 0 {
			return errors.New("send command needs at least one FIELD=VALUE, e.g. dimming=40")
		}
	case device.SendMessage:
		if r.MessageType == "" || r.MessageValue == "" {
			return errors.New("send message needs a message type (--type) and one SETTING=NUMBER, e.g. brightness=80")
		}
	case device.UpdateName:
		if r.SN == "" || r.Name == "" {
			return errors.New("send rename needs --sn and --name")
		}
	default:
		return errors.New("unknown operation")
	}
	if r.Format != device.JSON && r.Format != device.XML {
		return errors.New("--format must be json or xml")
	}
	return nil
}

// fields are the control fields after the envelope, named for the format.
func (r Request) fields() []client.Field {
	switch r.Op {
	case device.SendCommand:
		out := []client.Field{{Key: device.FieldSN, Value: r.SN}, {Key: device.FieldType, Value: r.Type}}
		typ, known := device.LookupType(r.Type)
		for _, s := range r.Settings {
			name := s.Name
			if known {
				for i := range typ.Fields {
					f := &typ.Fields[i]
					if name == f.Name || name == f.JSON {
						name = f.WireName(r.Format)
					}
				}
			}
			out = append(out, client.Field{Key: name, Value: s.Value})
		}
		return out
	case device.SendMessage:
		return []client.Field{{Key: device.FieldMessageType, Value: r.MessageType}, {Key: device.FieldMessageValue, Value: r.MessageValue}}
	case device.UpdateName:
		return []client.Field{{Key: device.FieldSN, Value: r.SN}, {Key: device.FieldName, Value: r.Name}}
	}
	return nil
}

// Result is the outcome of Send.
type Result struct {
	Exchange client.Exchange
	Response *client.Response
	// OK: the target answered 200 with status success.
	OK bool
}

// Options are how Send reaches the target.
type Options struct {
	Target  string
	Timeout time.Duration
	// Now is the clock of the timestamp; time.Now when nil.
	Now func() time.Time
	// Retries is how many times a request answered 429 or 503 with a
	// Retry-After is sent again (signed afresh) once that wait is over;
	// 0: never, the answer stands. Each retry is said and printed.
	Retries int
}

// MaxRetries bounds Options.Retries.
const MaxRetries = 10

// xmlSignMarker is SignMarker as an XML body shows it: escaped, so that
// the printed body stays well-formed XML whose sign reads SignMarker.
const xmlSignMarker = "&lt;SIGNATURE&gt;"

// Send signs and sends req and prints the exchange on out: the request
// line, headers and body (the sign shown as SignMarker), then the status,
// headers and body of the answer. With Options.Retries it sends the
// request again after an answer that asks to wait (429, 503 with
// Retry-After), saying so, and prints every exchange; otherwise one
// request, whatever the answer. It returns an error only when no answer
// came or the request could not be made.
func Send(ctx context.Context, o Options, cred Credentials, req Request, out io.Writer) (Result, error) {
	if err := req.Check(); err != nil {
		return Result{}, err
	}
	if o.Retries < 0 || o.Retries > MaxRetries {
		return Result{}, fmt.Errorf("--retries must be from 0 to %d", MaxRetries)
	}
	// The client never retries on its own: what is sent is said here.
	c, err := client.New(client.Config{BaseURL: o.Target, Timeout: o.Timeout, RetryBudget: -1})
	if err != nil {
		return Result{}, err
	}
	defer c.CloseIdleConnections()
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	for attempt := 0; ; attempt++ {
		res, err := sendOnce(ctx, c, now(), cred, req, out)
		if err != nil || attempt == o.Retries {
			if err != nil {
				err = fmt.Errorf("no answer from %s: %w", o.Target, err)
			}
			return res, err
		}
		wait, ok := waitAsked(res.Response, now())
		if !ok {
			return res, nil // the answer stands: nothing asks for a retry
		}
		fmt.Fprintf(out, "\n# retry %d of %d: the answer asked to wait %s (Retry-After); sending again, signed afresh\n\n",
			attempt+1, o.Retries, wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		}
	}
}

// waitAsked is the wait an answer asks for before a retry: a 429 or 503
// with a Retry-After of seconds or an HTTP date.
func waitAsked(r *client.Response, now time.Time) (time.Duration, bool) {
	if r == nil || (r.Status != 429 && r.Status != 503) {
		return 0, false
	}
	v := strings.TrimSpace(r.Header.Get("Retry-After"))
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sendOnce signs req at now, sends it once and prints the exchange.
func sendOnce(ctx context.Context, c *client.Client, now time.Time, cred Credentials, req Request, out io.Writer) (Result, error) {
	env := c.Envelope(fleet.APIKey{Key: cred.APIKey, Secret: cred.Secret}, cred.AccountID, cred.MAC, now, cred.Location)
	fields := append(env, req.fields()...)

	// Signed here rather than by the client, so that the printed body can
	// show the marker in place of exactly this value.
	var signer client.Signer = client.MD5Signer{APIKey: cred.APIKey, Secret: cred.Secret}
	if cred.Scheme == auth.FormatOnly || cred.Scheme == auth.Off {
		signer = client.FormatSigner{}
	}
	unsigned := slices.DeleteFunc(slices.Clone(fields), func(f client.Field) bool { return f.Key == device.FieldSign })
	sign, err := signer.Sign(ctx, unsigned)
	if err != nil {
		return Result{}, err
	}
	for i := range fields {
		if fields[i].Key == device.FieldSign {
			fields[i].Value = sign
		}
	}
	resp, ex, err := c.Do(ctx, client.Request{Path: req.Op.Path(), Format: req.Format, Fields: fields, Sign: client.SignKeep})
	marker := SignMarker
	if req.Format == device.XML {
		marker = xmlSignMarker
	}
	ex.RequestBody = strings.ReplaceAll(ex.RequestBody, sign, marker)
	// The api_key shows its first four characters, as in every output.
	shown := ex
	shown.RequestBody = client.MaskAPIKeys(ex.RequestBody)
	Print(out, shown)
	return Result{Exchange: ex, Response: resp, OK: err == nil && resp.Success()}, err
}

// Print writes an exchange as a person reads it: request, blank line,
// answer. Headers are sorted.
func Print(w io.Writer, ex client.Exchange) {
	fmt.Fprintf(w, "> %s %s\n", ex.Method, ex.URL)
	for _, k := range slices.Sorted(maps.Keys(ex.RequestHeaders)) {
		fmt.Fprintf(w, "> %s: %s\n", k, ex.RequestHeaders[k])
	}
	fmt.Fprintf(w, ">\n%s\n\n", ex.RequestBody)
	if ex.Error != "" && ex.Status == 0 {
		fmt.Fprintf(w, "< (no answer: %s)\n", printable.String(ex.Error))
		return
	}
	fmt.Fprintf(w, "< HTTP %d (%s)\n", ex.Status, ex.Duration.Round(time.Millisecond))
	for _, k := range slices.Sorted(maps.Keys(ex.ResponseHeaders)) {
		fmt.Fprintf(w, "< %s: %s\n", printable.String(k), printable.String(ex.ResponseHeaders[k]))
	}
	fmt.Fprintf(w, "<\n%s\n", printable.Lines(ex.ResponseBody))
}
