package link

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// sent is what one request touches and what it sent, worked out once,
// from the request as the engine built it, before it is sent: the chain
// it counts in (schedule.Trips, the batches' answer times), the devices
// it may change (recent.go), and what it leaves at the observer once
// accepted (settle.go).
type sent struct {
	// key is the request's chain: the device its field sn names
	// (catalog.HexOnly), the tested gateway's messages (LogKey), or "".
	key string
	// devices are the serials (catalog.HexOnly) named in a field sn in
	// any letter case; anyDevice says the body is not the fields
	// (RawBody) and names none of them, so it may name any.
	devices   []string
	anyDevice bool
	// tested is the tested gateway as the running check saw it when the
	// request was sent, read where it is needed: for the key of a message
	// that names no device, and for a request that may be tracked.
	tested string
	// op is the operation served at the request's path; known is false
	// at any other path, and nothing is awaited of the request.
	op    device.Operation
	known bool
	// fields are the request's fields as text, by canonical name (the
	// first of a repeated field counts); nil when nothing is awaited of
	// the request whatever its answer (not tracked, or no operation).
	fields map[string]string
	// raw is a body written by hand, sent in place of the fields, in
	// format.
	raw    []byte
	format device.Format
}

// sentOf works out what req touches and sends; track says whether its
// answer may be tracked (settle.go), which needs its fields.
func (l *Link) sentOf(req client.Request, track bool) sent {
	s := sent{raw: req.RawBody, format: req.Format}
	// The key is the first field named sn exactly; a device is named by a
	// field sn in any letter case, with white space around.
	keyed := false
	for _, f := range req.Fields {
		if strings.EqualFold(strings.TrimSpace(f.Key), device.FieldSN) {
			sn := catalog.HexOnly(fmt.Sprint(f.Value))
			s.devices = append(s.devices, sn)
			if !keyed && f.Key == device.FieldSN {
				s.key, keyed = sn, true
			}
		}
	}
	s.anyDevice = len(s.devices) == 0 && req.RawBody != nil
	s.op, s.known = operationAt(req.Path)
	message := !keyed && s.known && s.op == device.SendMessage
	track = track && s.known && l.cfg.Settle > 0 && l.Observed()
	if message || track {
		s.tested = l.cfg.Tested()
	}
	if message {
		s.key = LogKey(s.tested)
	}
	if track {
		s.fields = map[string]string{}
		for _, f := range req.Fields {
			addField(s.fields, f.Key, fmt.Sprint(f.Value))
		}
	}
	return s
}

// addField adds a field by its canonical name, unless one of that name
// came first.
func addField(fields map[string]string, k, v string) {
	for canon, j := range catalog.JSONNames {
		if j == k {
			k = canon
		}
	}
	if _, seen := fields[k]; !seen {
		fields[k] = v
	}
}

// read are the fields the target read, by their canonical names: false
// when a body written by hand cannot be read, so that nothing is awaited
// of a request whose content is not known.
//
// A body written by hand is the one thing read back from the bytes: the
// checks write them by editing a valid body's text (cut, padded, a field
// twice, a number or an escape written another way, the grammars' near
// misses, the wire checks' bodies), and nothing but reading the edited
// text says which fields it holds, or whether a lenient reader finds any.
// Its fields come first; the request's own fill in what it lacks.
func (s sent) read() (map[string]string, bool) {
	if s.raw == nil {
		return s.fields, true
	}
	pairs, derr := codec.Decode(s.format, s.raw)
	if derr != nil {
		return nil, false
	}
	fields := map[string]string{}
	for _, p := range pairs {
		addField(fields, p.Key, p.Value.Text)
	}
	for k, v := range s.fields {
		if _, seen := fields[k]; !seen {
			fields[k] = v
		}
	}
	return fields, true
}
