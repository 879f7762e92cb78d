package load

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
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
	// AckUncertain: the target answered that its store could not confirm
	// the change (503 storage_unavailable or storage_failed: a store lost
	// mid-write, or no replica confirmed it in time): like no_answer, it
	// may or may not have been applied.
	AckUncertain = "uncertain"
)

// AckEntry is one line of the ack log (Config.AckLog): an acknowledged
// change, or an attempt that got no answer. It never carries the api key,
// the timestamp or the sign, only what the request set.
type AckEntry struct {
	// Seq numbers the lines in the order they were written, from 1.
	Seq int64 `json:"seq"`
	// Status is AckAcknowledged, AckNoAnswer or AckUncertain.
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
	// Error is why no answer came (AckNoAnswer), or the answer's status
	// and code (AckUncertain).
	Error string `json:"error,omitempty"`
	// Time is when the answer came, or when the attempt was given up.
	Time time.Time `json:"time"`
}

// ackLog writes AckEntry lines, each in one write as soon as its answer
// came, so that a reader sees the log grow while the run lasts. Each
// device is owned by one worker (see Run), so the lines of one device are
// in the order of its attempts.
type ackLog struct {
	mu                         sync.Mutex
	w                          io.Writer
	seq                        int64
	acked, uncertain, noAnswer int64
	err                        error
}

func (l *ackLog) record(r *request, target, status string, why error) {
	e := AckEntry{Status: status, Op: r.op.Name(), Format: r.format.String(), Target: target, Time: time.Now().UTC()}
	if why != nil {
		e.Error = describeErr(why)
	}
	var t *oracle.Type // a command's type, once its type field is read
	for _, f := range r.fields {
		if t != nil { // a command's settings follow its type
			for i := range t.Fields {
				if t.Fields[i].Wire(r.format) == f.Key {
					if e.Values == nil {
						e.Values = make(map[string]string, len(r.fields))
					}
					e.Values[t.Fields[i].Name] = f.Value
				}
			}
			continue
		}
		switch f.Key {
		case device.FieldAccount:
			e.Account = f.Value
		case device.FieldMAC:
			e.MAC = f.Value
		case device.FieldSN:
			e.SN = f.Value
		case device.FieldType:
			e.Type = f.Value
			if r.op == device.SendCommand {
				t, _ = oracle.LookupType(f.Value)
			}
		case device.FieldName:
			e.Name = f.Value
		case device.FieldMessageType:
			e.MessageType = f.Value
		case device.FieldMessageValue:
			e.MessageValue = f.Value
		}
		// The api key, timestamp and sign are never written.
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	switch status {
	case AckAcknowledged:
		l.acked++
	case AckUncertain:
		l.uncertain++
	default:
		l.noAnswer++
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

// ReadAckLog reads an ack log's lines.
func ReadAckLog(r io.Reader) ([]AckEntry, error) {
	var out []AckEntry
	dec := json.NewDecoder(r)
	for {
		var e AckEntry
		err := dec.Decode(&e)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("ack log line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
}

// Expected is what an ack log says one device must show at the end, for
// its name and each field a command set: the last acknowledged value, or
// one of the values of attempts sent after it that got no answer (each
// may or may not have been applied). A field never acknowledged is not
// held to anything.
type Expected struct {
	MAC, SN string
	// Name and Values hold, per field, the last acknowledged value first,
	// then the unanswered ones sent after it; Name is empty when no rename
	// was acknowledged.
	Name   []string
	Values map[string][]string
}

// Expectations reads the ack log's lines, in their order, into what each
// device renamed or commanded must show, by "mac/sn". The order per device
// is the order of its attempts: gwconform load owns each device by one
// worker when it writes an ack log.
func Expectations(entries []AckEntry) map[string]*Expected {
	out := map[string]*Expected{}
	note := func(e AckEntry, field, v string) {
		key := e.MAC + "/" + e.SN
		x := out[key]
		if x == nil {
			x = &Expected{MAC: e.MAC, SN: e.SN, Values: map[string][]string{}}
			out[key] = x
		}
		cur := x.Values[field]
		if field == "" {
			cur = x.Name
		}
		switch {
		case e.Status == AckAcknowledged:
			cur = []string{v}
		case len(cur) > 0:
			cur = append(cur, v)
		default: // unanswered before any acknowledgement: nothing to hold
			return
		}
		if field == "" {
			x.Name = cur
		} else {
			x.Values[field] = cur
		}
	}
	for _, e := range entries {
		switch e.Op {
		case device.UpdateName.Name():
			note(e, "", e.Name)
		case device.SendCommand.Name():
			for k, v := range e.Values {
				note(e, k, v)
			}
		}
	}
	return out
}

// Mismatch is a field (or the name) of a device that shows what the ack
// log does not allow.
type Mismatch struct {
	MAC, SN string
	// Field is the state's field, or "name".
	Field string
	// Expected is the last acknowledged value, then the unanswered ones
	// sent after it (each may have been applied).
	Expected []string
	// Got is what the target shows ("(absent)" for a field it lacks,
	// "(no such device)" for a device it does not know).
	Got string
}

func (m Mismatch) String() string {
	s := fmt.Sprintf("%s/%s %s: expected %q", m.MAC, m.SN, m.Field, m.Expected[0])
	if len(m.Expected) > 1 {
		s += fmt.Sprintf(" (or, unanswered after it, %q)", m.Expected[1:])
	}
	return s + fmt.Sprintf(", got %q", m.Got)
}

// Check compares what a device shows (its name and its state, as the
// admin API gives them) with what the ack log allows.
func (x *Expected) Check(name string, state map[string]any) []Mismatch {
	var out []Mismatch
	if len(x.Name) > 0 && !slices.Contains(x.Name, name) {
		out = append(out, Mismatch{MAC: x.MAC, SN: x.SN, Field: "name", Expected: x.Name, Got: name})
	}
	fields := make([]string, 0, len(x.Values))
	for k := range x.Values {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	for _, k := range fields {
		allowed := x.Values[k]
		got, ok := state[k]
		if !ok || !slices.ContainsFunc(allowed, func(v string) bool { return sameValue(v, got) }) {
			g := fmt.Sprint(got)
			if !ok {
				g = "(absent)"
			}
			out = append(out, Mismatch{MAC: x.MAC, SN: x.SN, Field: k, Expected: allowed, Got: g})
		}
	}
	return out
}

// Mismatches is Check in sentences.
func (x *Expected) Mismatches(name string, state map[string]any) []string {
	var out []string
	for _, m := range x.Check(name, state) {
		out = append(out, m.String())
	}
	return out
}

// sameValue compares a value as sent with one the admin API shows:
// numbers as numbers, the rest as text.
func sameValue(sent string, got any) bool {
	g := fmt.Sprint(got)
	a, errA := strconv.ParseFloat(sent, 64)
	b, errB := strconv.ParseFloat(g, 64)
	if errA == nil && errB == nil {
		return a == b
	}
	return sent == g
}

// AckCounts names an ack log's lines by status, in the words the load's
// summary, its report and check-acks share: "12 acknowledged, 3
// uncertain (503), 1 sent without an answer". An uncertain change got an
// answer (503 storage_unavailable or storage_failed: the store could not
// confirm it); one without an answer got none (the connection broke).
// Either may or may not have been applied.
func AckCounts(acked, uncertain, noAnswer int64) string {
	return fmt.Sprintf("%d acknowledged, %d uncertain (503), %d sent without an answer", acked, uncertain, noAnswer)
}

// CountAcks counts an ack log's entries by status (AckCounts' order).
func CountAcks(entries []AckEntry) (acked, uncertain, noAnswer int64) {
	for _, e := range entries {
		switch e.Status {
		case AckAcknowledged:
			acked++
		case AckUncertain:
			uncertain++
		default:
			noAnswer++
		}
	}
	return acked, uncertain, noAnswer
}
