// Package explore looks for the bugs no fixed check names: it sends random
// sequences of commands, messages, renames and observer reads to a target,
// predicts every answer and every observed state with a model built from
// the harness's own reading of the two texts, shrinks the first
// disagreement to a minimal sequence, and checks histories of concurrent
// clients for linearizability with Porcupine (docs/explore.md).
package explore

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Kind is what an operation does.
type Kind string

// The kinds of operation: the three POST operations of the interface and
// the two CONTRACT 7 reads of the observer.
const (
	Command      Kind = "command"
	Message      Kind = "message"
	Rename       Kind = "rename"
	ReadDevice   Kind = "read_device"
	ReadMessages Kind = "read_messages"
)

// KV is one operation field in send order. Key is the field's state key
// (the XML element name, "cooling_point"); the runner writes the JSON
// name ("cooling point") in JSON bodies.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Number sends the value as a JSON number literal (JSON only).
	Number bool `json:"number,omitempty"`
}

// Op is one operation of a sequence, complete enough to be sent again by
// gwconform replay: everything but the timestamp and sign, which are made
// afresh at each send.
type Op struct {
	Kind Kind `json:"kind"`
	// Format is "json" or "xml" (the POST operations only).
	Format string `json:"format,omitempty"`
	// Client is the concurrent client that sends it (0 when sequential).
	Client int `json:"client,omitempty"`
	// Account and Key are the myservice_id and api_key sent.
	Account string `json:"myservice_id,omitempty"`
	Key     string `json:"api_key,omitempty"`
	MAC     string `json:"mac"`
	SN      string `json:"sn,omitempty"`
	// Type is the type field of a command.
	Type string `json:"type,omitempty"`
	// Fields are the device fields of a command, message_type and
	// message_value of a message, name of a rename.
	Fields []KV `json:"fields,omitempty"`
	// BadSign sends a well-formed sign made with a wrong secret.
	BadSign bool `json:"bad_sign,omitempty"`
	// Wire names the form the request is sent in (wire.go): an envelope
	// value in another form, another method or media type, a member
	// beside control; "" for the plain request.
	Wire string `json:"wire,omitempty"`
	// Note says what the generator meant ("valid", "invalid dimming").
	Note string `json:"note,omitempty"`
	// Origin says which identifiers were taken from elsewhere than the
	// addressed device's own account and gateway ("sn:other-account",
	// "api_key+myservice_id:other-account"); "" when all are its own.
	Origin string `json:"origin,omitempty"`
}

// IsRead reports whether op is an observer read.
func (op Op) IsRead() bool { return op.Kind == ReadDevice || op.Kind == ReadMessages }

// field is the value of the op field key.
func (op Op) field(key string) (string, bool) {
	for _, f := range op.Fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// String is the op on one line, as a shrunk sequence lists it.
func (op Op) String() string {
	var b strings.Builder
	if op.Client > 0 {
		fmt.Fprintf(&b, "[client %d] ", op.Client)
	}
	switch op.Kind {
	case ReadDevice:
		fmt.Fprintf(&b, "read device %s/%s", op.MAC, op.SN)
		return b.String()
	case ReadMessages:
		fmt.Fprintf(&b, "read messages %s", op.MAC)
		return b.String()
	}
	fmt.Fprintf(&b, "%s %s", op.Kind, op.Format)
	if op.SN != "" {
		fmt.Fprintf(&b, " %s/%s", op.MAC, op.SN)
	} else {
		fmt.Fprintf(&b, " %s", op.MAC)
	}
	if op.Type != "" {
		fmt.Fprintf(&b, " type=%q", op.Type)
	}
	for _, f := range op.Fields {
		fmt.Fprintf(&b, " %s=%q", f.Key, f.Value)
	}
	if op.BadSign {
		b.WriteString(" (wrong sign)")
	}
	if op.Wire != "" && !strings.Contains(op.Note, op.Wire) {
		fmt.Fprintf(&b, " [%s]", op.Wire)
	}
	if op.Note != "" && op.Note != "valid" {
		fmt.Fprintf(&b, " — %s", op.Note)
	}
	return b.String()
}

// device is the (gateway, device) an op addresses.
func (op Op) device() devKey { return devKey{op.MAC, op.SN} }

// devKey names a device by its gateway and serial number: a device is
// reached only through the gateway it is on.
type devKey struct{ MAC, SN string }

func (k devKey) String() string { return k.MAC + "/" + k.SN }

// Msg is one entry of a gateway's message log.
type Msg struct {
	Type  string `json:"message_type"`
	Value string `json:"message_value"`
}

// DeviceState is what the observer shows of a device: its name and its
// state by state key, each value as text (numbers in their shortest form).
type DeviceState struct {
	Name  string            `json:"name"`
	State map[string]string `json:"state"`
}

func (d DeviceState) clone() DeviceState {
	s := make(map[string]string, len(d.State))
	for k, v := range d.State {
		s[k] = v
	}
	return DeviceState{Name: d.Name, State: s}
}

// String lists the state in key order.
func (d DeviceState) String() string {
	keys := sortedKeys(d.State)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + d.State[k]
	}
	return fmt.Sprintf("name=%q {%s}", d.Name, strings.Join(parts, " "))
}

// Answer is what a POST operation got: the HTTP status and, for an error,
// the code and field of CONTRACT 4.
type Answer struct {
	Status int    `json:"status"`
	Code   string `json:"code,omitempty"`
	Field  string `json:"field,omitempty"`
	// Success is status 200 with status "success" in the body.
	Success bool `json:"success,omitempty"`
}

func (a Answer) String() string {
	if a.Success {
		return "200 success"
	}
	s := fmt.Sprintf("%d", a.Status)
	if a.Code != "" {
		s += " " + a.Code
	}
	if a.Field != "" {
		s += " (field " + a.Field + ")"
	}
	return s
}

// Expect is the model's prediction of an answer.
type Expect struct {
	// Any: the texts leave the request open; every answer conforms.
	Any    bool `json:"any,omitempty"`
	Status int  `json:"status"`
	// Codes lists the error codes the texts allow; one mostly, two where
	// they leave the choice open. Empty for success.
	Codes []string `json:"codes,omitempty"`
	// Field is the field the error must name; empty: any.
	Field string `json:"field,omitempty"`
}

// Success is the prediction of a success.
var success = Expect{Status: 200}

func refuse(status int, field string, codes ...string) Expect {
	return Expect{Status: status, Codes: codes, Field: field}
}

// Matches reports whether a agrees with the prediction.
func (e Expect) Matches(a Answer) bool {
	if e.Any {
		return true
	}
	if e.Status == 200 {
		return a.Success
	}
	if a.Status != e.Status || a.Success {
		return false
	}
	ok := len(e.Codes) == 0
	for _, c := range e.Codes {
		ok = ok || c == a.Code
	}
	return ok && (e.Field == "" || e.Field == a.Field)
}

// contractCodes are the error codes CONTRACT names.
var contractCodes = map[string]bool{}

func init() {
	for _, c := range []string{device.CodeInvalidField, device.CodeMissingField, device.CodeUnexpectedField,
		device.CodeMalformedBody, device.CodeBadRequest, device.CodeUnsupportedMediaType, device.CodeBodyTooLarge,
		device.CodeNotFound, device.CodeUnknownAPIKey, device.CodeAccountMismatch, device.CodeBadSignature,
		device.CodeStaleTimestamp, device.CodeReplayedRequest, device.CodeGatewayNotFound, device.CodeDeviceNotFound,
		device.CodeTypeMismatch, device.CodeGatewayOffline, device.CodeInjectedFault, device.CodeRateLimited,
		device.CodeUnauthorized, device.CodeTimeout, device.CodeStorageFailed, device.CodeStorageUnavailable} {
		contractCodes[c] = true
	}
}

// MatchesLeniently reports whether a agrees with the prediction with the
// latitudes of CONTRACT's preamble: a refusal of the predicted status
// whose code the texts do not name, or that names another field, agrees;
// so does 429, a rate limit, to any request.
func (e Expect) MatchesLeniently(a Answer) bool {
	if e.Any || e.Matches(a) {
		return true
	}
	if a.Status == 429 && !a.Success {
		return true
	}
	if e.Status == 200 || a.Success || a.Status != e.Status {
		return false
	}
	if !contractCodes[a.Code] {
		return true // a code the texts do not name: never judged
	}
	for _, c := range e.Codes {
		if c == a.Code {
			return true
		}
	}
	return len(e.Codes) == 0
}

func (e Expect) String() string {
	if e.Any {
		return "any answer (the texts leave this open)"
	}
	if e.Status == 200 {
		return "200 success"
	}
	s := fmt.Sprintf("%d %s", e.Status, strings.Join(e.Codes, " or "))
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}
