package server

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Latitudes are freedoms CONTRACT's preamble leaves a faithful service,
// which gwsim takes when asked (gwsim serve flags), so that a client, an
// app or the harness can be tried against a service that takes them.
// The zero value takes none: gwsim's answers as CONTRACT writes them.
// The others (refusing replays, a message cap, Connection: close, a
// delay before effects show) are Config.RejectReplays, the backend's
// MessageLimit, Config.ConnectionClose and LaggingState.
type Latitudes struct {
	// Pretty lays every operation's answer out over indented lines, JSON
	// and XML alike (--pretty): "lay out, order and escape JSON and XML
	// answers in any well-formed way".
	Pretty bool
	// OwnDetails answers with gwsim's own wording, and its own error code
	// and field wherever neither text states them (--own-details): "an
	// answer's detail that neither text states (an error code or `field`
	// not named here, a message's wording, a reason phrase) is never
	// failed". See ownDetails for what it changes.
	OwnDetails bool
}

// Own codes, for answers CONTRACT gives no code.
const (
	// ownMethodCode is the code of a 405 (CONTRACT 2: "405 with `Allow:
	// POST`", no code).
	ownMethodCode = "method_refused"
	// ownIDsCode is the code of a command whose device_id and sn differ
	// (CONTRACT 2: "both present and different: 400", no code).
	ownIDsCode = "ids_disagree"
)

// ownDetails is the error as a service that takes every latitude of the
// details might answer it: its own wording; its own code where CONTRACT
// names none; a field only where CONTRACT's example names one (an
// invalid dimming), the field as the state names it (cooling_point, not
// the JSON "cooling point") for the other validation errors, and none for
// missing fields, credentials, unknown gateways and devices.
func ownDetails(e *device.Error) *device.Error {
	o := *e
	o.Message = "Not done: " + strings.ReplaceAll(e.Code, "_", " ")
	switch {
	case e.Code == device.CodeMethodNotAllowed:
		o.Code = ownMethodCode
	case e.Field == device.FieldDeviceID && strings.Contains(e.Message, "different devices"):
		o.Code, o.Field = ownIDsCode, device.FieldSN
	case e.Code == device.CodeInvalidField || e.Code == device.CodeUnexpectedField:
		o.Field = strings.ReplaceAll(e.Field, " ", "_")
	default:
		o.Field = ""
	}
	if o.Field != "" {
		o.Message += " (" + o.Field + ")"
	}
	return &o
}

// pretty lays an answer's body out over indented lines; a body it cannot
// read is returned as it was.
func pretty(f device.Format, body []byte) []byte {
	var b bytes.Buffer
	if f == device.JSON {
		if json.Indent(&b, body, "", "  ") != nil {
			return body
		}
		b.WriteByte('\n')
		return b.Bytes()
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return body
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
		case xml.ProcInst:
			if t.Target == "xml" {
				b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
				continue
			}
		}
		if enc.EncodeToken(xml.CopyToken(tok)) != nil {
			return body
		}
	}
	if enc.Flush() != nil {
		return body
	}
	b.WriteByte('\n')
	return b.Bytes()
}
