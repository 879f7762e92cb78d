// Package observer reads what a target shows of its devices and messages
// through the two reads of CONTRACT 7, and compares what it read:
//
//	GET /_sim/gateways/{mac}/devices/{sn}  {"sn","type","name","state":{…}}
//	GET /_sim/gateways/{mac}/messages      [{"message_type","message_value",…}, …] oldest first
//
// By default the observer is the target itself when the target answers
// them (gwsim does); a vendor's service is observed through a small
// adapter over its own device store (docs/observer.md). gwsim's additions
// (?limit= and X-Total-Count on the messages) are used when present,
// never required. It knows nothing of checks or of how a run is
// scheduled: the run gives it where to read and the bound of requests in
// flight it keeps (Reader.Slot).
package observer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Reader reads one observer.
type Reader struct {
	// Base is the observer's base URL and Token its bearer token.
	Base, Token string
	// Counts: the observer has gwsim's additions on the messages.
	Counts bool
	// Window, when above 1, is how many of the newest messages a read of
	// a log takes (other processes append to it meanwhile: Log.Shared);
	// else the newest alone.
	Window int
	// Slot, when set, waits for a place among the run's requests in
	// flight and gives the func that frees it, or says why no read may
	// go out (the run's target has stopped answering).
	Slot func() (func(), error)
}

// Device reads a device as it is now.
func (r Reader) Device(ctx context.Context, mac, sn string) (Device, error) {
	var d Device
	release, err := r.slot()
	if err != nil {
		return d, err
	}
	_, err = Get(ctx, r.Base, r.Token, DevicePath(mac, sn), &d)
	release()
	if err == nil && d.State == nil {
		err = fmt.Errorf("GET %s: the answer has no state object", DevicePath(mac, sn))
	}
	return d, err
}

// Log reads a gateway's messages as they are now: only the newest and
// the count where the observer has gwsim's additions (the log may hold a
// thousand entries, too many to read twice a check), else all.
func (r Reader) Log(ctx context.Context, mac string) (Log, error) {
	release, err := r.slot()
	if err != nil {
		return Log{}, err
	}
	defer release()
	var msgs []Message
	shared := r.Window > 1
	if r.Counts {
		limit := max(r.Window, 1)
		h, err := Get(ctx, r.Base, r.Token, MessagesPath(mac)+"?limit="+strconv.Itoa(limit), &msgs)
		if err != nil {
			return Log{}, err
		}
		total, err := strconv.Atoi(h.Get("X-Total-Count"))
		if err != nil {
			return Log{}, fmt.Errorf("the observer gave no count of messages (X-Total-Count %q)", h.Get("X-Total-Count"))
		}
		l := Log{Total: total, Counted: true, Recent: msgs, Shared: shared}
		if len(msgs) > 0 {
			l.Last = &msgs[len(msgs)-1]
		}
		return l, nil
	}
	if _, err := Get(ctx, r.Base, r.Token, MessagesPath(mac), &msgs); err != nil {
		return Log{}, err
	}
	l := Log{Total: len(msgs), All: msgs, Recent: msgs, Shared: shared}
	if len(msgs) > 0 {
		l.Last = &msgs[len(msgs)-1]
	}
	return l, nil
}

func (r Reader) slot() (func(), error) {
	if r.Slot == nil {
		return func() {}, nil
	}
	return r.Slot()
}

// CloseIdleConnections closes the connections kept for reuse.
func CloseIdleConnections() { observerHTTP.CloseIdleConnections() }

// observerHTTP follows no redirect: a hostile observer must not lead the
// harness, bearer token included, to another host.
var observerHTTP = &http.Client{Timeout: 10 * time.Second, Transport: observerTransport(),
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// observerTransport is Go's default transport (proxies from the
// environment, HTTP/2) keeping up to 64 idle connections to the observer:
// a run reads up to --concurrency places at once (32 by default), and with
// Go's default of 2 kept, each wave of reads opened new connections and
// closed all but two of them after it (a TCP, and over https a TLS,
// handshake per read of an effect check's twenty-odd places).
func observerTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 64
	return t
}

// Device is a device as GET /_sim/gateways/{mac}/devices/{sn} shows it.
type Device struct {
	SN    string         `json:"sn"`
	Type  string         `json:"type"`
	Name  string         `json:"name"`
	State map[string]any `json:"state"`
}

// State is what the observer shows about the device and gateway a call
// concerns: the device (nil when the call names none) and, for a message,
// the gateway's messages.
type State struct {
	Device *Device
	Log    Log
}

// Message is one entry of GET /_sim/gateways/{mac}/messages; an observer
// may add other members (gwsim adds the time), which are not compared.
type Message struct {
	Type  string `json:"message_type"`
	Value string `json:"message_value"`
}

// readError is an observer answer other than 200.
type readError struct {
	path   string
	status int
	body   string
}

func (e *readError) Error() string {
	body := e.body
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	return fmt.Sprintf("GET %s: HTTP %d %s", e.path, e.status, strings.Join(strings.Fields(body), " "))
}

// Get reads a path of the observer into v and returns the answer's
// headers. An answer 429 or 503 with a short Retry-After is waited out and
// the read made again, twice at most: an observer behind the same load
// shedding as the target is no reason to fail a check.
func Get(ctx context.Context, base, token, path string, v any) (http.Header, error) {
	for attempt := 0; ; attempt++ {
		h, wait, err := getOnce(ctx, base, token, path, v)
		if wait < 0 || attempt == 2 {
			return h, err
		}
		select {
		case <-ctx.Done():
			return h, err
		case <-time.After(wait):
		}
	}
}

// getOnce is one read; wait is how long the observer asked to wait
// before reading again (negative: it did not).
func getOnce(ctx context.Context, base, token, path string, v any) (_ http.Header, wait time.Duration, _ error) {
	wait = -1
	if base == "" {
		return nil, wait, fmt.Errorf("no observer")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return nil, wait, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := observerHTTP.Do(req)
	if err != nil {
		return nil, wait, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, wait, err
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s >= 0 && s <= 5 {
				wait = time.Duration(s) * time.Second
			}
		}
		return nil, wait, &readError{path: path, status: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, wait, fmt.Errorf("GET %s: the answer is not the JSON of CONTRACT 7: %v", path, err)
	}
	return resp.Header, wait, nil
}

func DevicePath(mac, sn string) string {
	return "/_sim/gateways/" + url.PathEscape(mac) + "/devices/" + url.PathEscape(sn)
}

func MessagesPath(mac string) string { return "/_sim/gateways/" + url.PathEscape(mac) + "/messages" }

// Log is what the observer shows of a gateway's messages: all of them,
// or with gwsim's additions the newest one and how many were ever received.
type Log struct {
	// Total is X-Total-Count when the observer gives it, else len(All).
	Total int
	// All is every message, oldest first (without gwsim's additions).
	All []Message
	// Last is the newest message, if any.
	Last    *Message
	Counted bool
	// Recent are the newest messages (with gwsim's additions), newest
	// last: one, or Reader.Window when other processes append to the log.
	Recent []Message
	// shared: other workers of a --parallel run append to the same log
	// meanwhile; a check then looks for its own messages among those
	// appended, not at the count.
	Shared bool
}

// Gained says what the log after shows beyond before: "" when exactly one
// message came, the newest; else what is wrong. A log that keeps only
// its newest entries (a ring) may have dropped its oldest.
func (before Log) Gained(after Log) string {
	if before.Counted && after.Counted {
		if after.Total != before.Total+1 {
			return fmt.Sprintf("the gateway's messages went from %d to %d (X-Total-Count), not one more", before.Total, after.Total)
		}
		return ""
	}
	switch {
	case len(after.All) == len(before.All)+1 && sameMessages(after.All[:len(before.All)], before.All):
		return ""
	case len(after.All) == len(before.All) && len(before.All) > 0 && !sameMessages(after.All, before.All) &&
		sameMessages(after.All[:len(after.All)-1], before.All[1:]):
		return "" // a full ring: the oldest went, one came
	}
	return fmt.Sprintf("the gateway's messages went from %d to %d, not the same ones and one more", len(before.All), len(after.All))
}

// Appended are the messages after shows beyond before, newest last; ok
// is false when the observer's window cannot tell.
func (before Log) Appended(after Log) (_ []Message, ok bool) {
	if before.Counted && after.Counted {
		k := after.Total - before.Total
		if k < 0 || k > len(after.Recent) {
			return nil, false
		}
		return after.Recent[len(after.Recent)-k:], true
	}
	if len(after.All) >= len(before.All) && sameMessages(after.All[:len(before.All)], before.All) {
		return after.All[len(before.All):], true
	}
	return nil, false
}

func CountMessage(ms []Message, m Message) int {
	n := 0
	for _, x := range ms {
		if x == m {
			n++
		}
	}
	return n
}

// GainedMessage says what is wrong with the log after an accepted message
// m: "" when m came, exactly one more and the newest (in a --parallel run,
// where other workers append too: when m is among the messages
// appended).
func (before Log) GainedMessage(after Log, m Message) string {
	if before.Shared {
		added, ok := before.Appended(after)
		if !ok || CountMessage(added, m) > 0 {
			return ""
		}
		return fmt.Sprintf("the message %s=%q is not among the %d message(s) the gateway received meanwhile", m.Type, m.Value, len(added))
	}
	if why := before.Gained(after); why != "" {
		if !before.Counted && after.Last != nil && *after.Last == m && CountMessage(after.All, m) == CountMessage(before.All, m)+1 {
			// Its own message came, the newest, once: messages accepted
			// earlier that landed meanwhile, or the oldest that a log
			// keeping only its last N dropped, are not this request's.
			return ""
		}
		return why
	}
	if after.Last == nil || *after.Last != m {
		return fmt.Sprintf("the newest message is %v, not the one sent (message_type %q, message_value %q)", after.Last, m.Type, m.Value)
	}
	return ""
}

// Indistinct says whether a log cannot show that m came: it did not grow,
// and its newest message before was m already (the same message sent
// again, in the other format): a log that keeps only its last N messages
// may have taken m and dropped its oldest, or not taken it at all.
func (before Log) Indistinct(after Log, m Message) bool {
	return !before.Counted && !before.Shared && before.Last != nil && *before.Last == m &&
		len(after.All) == len(before.All) && sameMessages(after.All, before.All)
}

// UnchangedBy says whether a refused message m left the log as it was
// (in a --parallel run: m is not among the messages appended).
func (before Log) UnchangedBy(after Log, m Message) bool {
	if before.Shared {
		added, ok := before.Appended(after)
		return !ok || CountMessage(added, m) == 0
	}
	// A message accepted earlier that lands late, or the oldest that a
	// capped log drops meanwhile, is not the refused request's doing: only
	// m itself coming is.
	return before.Same(after) || (!before.Counted && CountMessage(after.All, m) <= CountMessage(before.All, m))
}

// Change says in words how the log went from before to after: the
// counts, and the newest message after.
func (before Log) Change(after Log) string {
	s := fmt.Sprintf("%d before, %d after", before.Total, after.Total)
	if after.Last != nil {
		s += fmt.Sprintf("; the newest %s=%q", after.Last.Type, after.Last.Value)
	}
	return s
}

// Same says whether the log is unchanged.
func (before Log) Same(after Log) bool {
	if before.Counted && after.Counted {
		return before.Total == after.Total
	}
	return sameMessages(before.All, after.All)
}

func sameMessages(a, b []Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Probe is what ProbeAt found.
type Probe struct {
	// OK: the observer answers both reads of CONTRACT 7.
	OK bool
	// NeedsToken: it answered 401 (or 403) to the run's token or to none.
	NeedsToken bool
	// Counts: it has gwsim's additions on the messages (?limit=,
	// X-Total-Count).
	Counts bool
	// Why says, when not OK, in a few words what it answered.
	Why string
}

// ProbeAt reads a device of the tested gateway and its messages
// from base, as the effect checks will.
func ProbeAt(ctx context.Context, base, token, mac, sn string) Probe {
	denied := func(err error) bool {
		oe, ok := err.(*readError)
		return ok && (oe.status == http.StatusUnauthorized || oe.status == http.StatusForbidden)
	}
	if sn != "" {
		var d Device
		_, err := Get(ctx, base, token, DevicePath(mac, sn), &d)
		if err == nil && d.State == nil {
			err = fmt.Errorf("GET %s: the answer has no state object", DevicePath(mac, sn))
		}
		if err != nil {
			return Probe{NeedsToken: denied(err), Why: err.Error()}
		}
	}
	var all []Message
	if _, err := Get(ctx, base, token, MessagesPath(mac), &all); err != nil {
		return Probe{NeedsToken: denied(err), Why: err.Error()}
	}
	p := Probe{OK: true}
	var newest []Message
	h, err := Get(ctx, base, token, MessagesPath(mac)+"?limit=1", &newest)
	if err == nil && len(newest) <= 1 {
		if n, err := strconv.Atoi(h.Get("X-Total-Count")); err == nil && n >= len(all) {
			p.Counts = true
		}
	}
	return p
}
