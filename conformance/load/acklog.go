package load

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/simulator/device"
)

// Statuses of an AckEntry.
const (
	// AckAcknowledged: the target answered 200 with status success; the
	// change was acknowledged and must not be lost.
	AckAcknowledged = "acked"
	// AckNoAnswer: the request was (or may have been) sent, and no
	// complete answer came (the target died or the connection broke while
	// it was in flight): the change may or may not have been applied.
	AckNoAnswer = "no_answer"
)

// AckEntry is one line of the ack log (Config.AckLog): an acknowledged
// change, or an attempt that got no answer. It never carries the api key,
// the timestamp or the sign, only what the request set.
type AckEntry struct {
	// Seq numbers the lines in the order they were written, from 1.
	Seq int64 `json:"seq"`
	// Status is AckAcknowledged or AckNoAnswer.
	Status string `json:"status"`
	// Op is command, message or update_name (device.Operation.Name).
	Op     string `json:"op"`
	Format string `json:"format"`
	// Target is the base URL the request went to (without user info).
	Target  string `json:"target"`
	Account string `json:"account"`
	MAC     string `json:"mac"`
	// SN and Type name the device of a command or a rename.
	SN   string `json:"sn,omitempty"`
	Type string `json:"type,omitempty"`
	// Values are a command's settings: field name (as the admin API's
	// state names it, whatever the format's wire name) to the value sent.
	Values map[string]string `json:"values,omitempty"`
	// Name is a rename's new name.
	Name string `json:"name,omitempty"`
	// MessageType and MessageValue are a message's.
	MessageType  string `json:"message_type,omitempty"`
	MessageValue string `json:"message_value,omitempty"`
	// Error is why no answer came (AckNoAnswer only).
	Error string `json:"error,omitempty"`
	// Time is when the answer came, or when the attempt was given up.
	Time time.Time `json:"time"`
}

// ackLog writes AckEntry lines, each in one write as soon as its answer
// came, so that a reader sees the log grow while the run lasts. Each
// device is owned by one worker (see Run), so the lines of one device are
// in the order of its attempts.
type ackLog struct {
	mu          sync.Mutex
	w           io.Writer
	seq         int64
	acked, lost int64
	err         error
}

func (l *ackLog) record(r *request, target, status string, why error) {
	e := AckEntry{Status: status, Op: r.op.Name(), Format: r.format.String(), Target: target, Time: time.Now().UTC()}
	if why != nil {
		e.Error = describeErr(why)
	}
	var t *device.Type // a command's type, once its type field is read
	for _, f := range r.fields {
		if t != nil { // a command's settings follow its type
			for i := range t.Fields {
				if t.Fields[i].WireName(r.format) == f.k {
					if e.Values == nil {
						e.Values = make(map[string]string, len(r.fields))
					}
					e.Values[t.Fields[i].Name] = f.v
				}
			}
			continue
		}
		switch f.k {
		case device.FieldAccount:
			e.Account = f.v
		case device.FieldMAC:
			e.MAC = f.v
		case device.FieldSN:
			e.SN = f.v
		case device.FieldType:
			e.Type = f.v
			if r.op == device.SendCommand {
				t, _ = device.LookupType(f.v)
			}
		case device.FieldName:
			e.Name = f.v
		case device.FieldMessageType:
			e.MessageType = f.v
		case device.FieldMessageValue:
			e.MessageValue = f.v
		}
		// The api key, timestamp and sign are never written.
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	if status == AckAcknowledged {
		l.acked++
	} else {
		l.lost++
	}
	if l.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	l.err = err
}
