package conformance

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

// The observer is any service that answers the two reads of CONTRACT 7
// about the target's devices and messages:
//
//	GET /_sim/gateways/{mac}/devices/{sn}  {"sn","type","name","state":{…}}
//	GET /_sim/gateways/{mac}/messages      [{"message_type","message_value",…}, …] oldest first
//
// By default it is the target itself when the target answers them (gwsim
// does); a vendor's service is observed through a small adapter over its
// own device store (docs/observer.md). gwsim's additions (?limit= and
// X-Total-Count on the messages) are used when present, never required.

// NotObservedPrefix starts the one line a run says when it did not observe
// effects: the summary, report.json, the bundle's manifest and gwconform
// verify all carry it.
const NotObservedPrefix = "effects not observed"

// Reasons effects are not observed.
const (
	// NoObserverFlag: the run was told not to observe (--no-observer).
	NoObserverFlag = NotObservedPrefix + ": --no-observer (the certificate records it)"
)

// observerHTTP follows no redirect: a hostile observer must not lead the
// harness, bearer token included, to another host.
var observerHTTP = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// deviceState is a device as GET /_sim/gateways/{mac}/devices/{sn} shows it.
type deviceState struct {
	SN    string         `json:"sn"`
	Type  string         `json:"type"`
	Name  string         `json:"name"`
	State map[string]any `json:"state"`
}

// message is one entry of GET /_sim/gateways/{mac}/messages; an observer
// may add other members (gwsim adds the time), which are not compared.
type message struct {
	Type  string `json:"message_type"`
	Value string `json:"message_value"`
}

// observerError is an observer answer other than 200.
type observerError struct {
	path   string
	status int
	body   string
}

func (e *observerError) Error() string {
	body := e.body
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	return fmt.Sprintf("GET %s: HTTP %d %s", e.path, e.status, strings.Join(strings.Fields(body), " "))
}

// observeGet reads a path of the observer into v and returns the answer's
// headers. An answer 429 or 503 with a short Retry-After is waited out and
// the read made again, twice at most: an observer behind the same load
// shedding as the target is no reason to fail a check.
func observeGet(ctx context.Context, base, token, path string, v any) (http.Header, error) {
	for attempt := 0; ; attempt++ {
		h, wait, err := observeOnce(ctx, base, token, path, v)
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

// observeOnce is one read; wait is how long the observer asked to wait
// before reading again (negative: it did not).
func observeOnce(ctx context.Context, base, token, path string, v any) (_ http.Header, wait time.Duration, _ error) {
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
		return nil, wait, &observerError{path: path, status: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, wait, fmt.Errorf("GET %s: the answer is not the JSON of CONTRACT 7: %v", path, err)
	}
	return resp.Header, wait, nil
}

func devicePath(mac, sn string) string {
	return "/_sim/gateways/" + url.PathEscape(mac) + "/devices/" + url.PathEscape(sn)
}

func messagesPath(mac string) string { return "/_sim/gateways/" + url.PathEscape(mac) + "/messages" }

// readDevice reads a device from the observer once the changes accepted
// for it have appeared, or --settle has passed (awaitDevice).
func (env *Env) readDevice(ctx context.Context, mac, sn string) (deviceState, error) {
	return env.awaitDevice(ctx, mac, sn)
}

// readDeviceNow reads a device from the observer.
func (env *Env) readDeviceNow(ctx context.Context, mac, sn string) (deviceState, error) {
	var d deviceState
	release := env.slot()
	_, err := observeGet(ctx, env.Observer, env.AdminToken, devicePath(mac, sn), &d)
	release()
	if err == nil && d.State == nil {
		err = fmt.Errorf("GET %s: the answer has no state object", devicePath(mac, sn))
	}
	return d, err
}

// msgLog is what the observer shows of a gateway's messages: all of them,
// or with gwsim's additions the newest one and how many were ever received.
type msgLog struct {
	// Total is X-Total-Count when the observer gives it, else len(All).
	Total int
	// All is every message, oldest first (without gwsim's additions).
	All []message
	// Last is the newest message, if any.
	Last    *message
	counted bool
	// Recent are the newest messages (with gwsim's additions), newest
	// last: one in a serial run, logWindow in a --parallel one.
	Recent []message
	// shared: other workers of a --parallel run append to the same log
	// meanwhile; a check then looks for its own messages among those
	// appended, not at the count.
	shared bool
}

// logWindow is how many of the newest messages a --parallel worker reads:
// enough to hold what the other workers append while a check sends one.
const logWindow = 64

// readLog reads a gateway's messages from the observer once the newest
// accepted message has appeared, or --settle has passed (awaitLog).
func (env *Env) readLog(ctx context.Context, mac string) (msgLog, error) {
	return env.awaitLog(ctx, mac)
}

// readLogNow reads a gateway's messages from the observer: only the newest
// and the count where the observer has gwsim's additions (the log may
// hold a thousand entries, too many to read twice a check), else all.
func (env *Env) readLogNow(ctx context.Context, mac string) (msgLog, error) {
	defer env.slot()()
	var msgs []message
	shared := env.Workers > 1
	if env.ObserverCounts {
		limit := 1
		if shared {
			limit = logWindow
		}
		h, err := observeGet(ctx, env.Observer, env.AdminToken, messagesPath(mac)+"?limit="+strconv.Itoa(limit), &msgs)
		if err != nil {
			return msgLog{}, err
		}
		total, err := strconv.Atoi(h.Get("X-Total-Count"))
		if err != nil {
			return msgLog{}, fmt.Errorf("the observer gave no count of messages (X-Total-Count %q)", h.Get("X-Total-Count"))
		}
		l := msgLog{Total: total, counted: true, Recent: msgs, shared: shared}
		if len(msgs) > 0 {
			l.Last = &msgs[len(msgs)-1]
		}
		return l, nil
	}
	if _, err := observeGet(ctx, env.Observer, env.AdminToken, messagesPath(mac), &msgs); err != nil {
		return msgLog{}, err
	}
	l := msgLog{Total: len(msgs), All: msgs, Recent: msgs, shared: shared}
	if len(msgs) > 0 {
		l.Last = &msgs[len(msgs)-1]
	}
	return l, nil
}

// gained says what the log after shows beyond before: "" when exactly one
// message came, the newest; else what is wrong. A log that keeps only
// its newest entries (a ring) may have dropped its oldest.
func (before msgLog) gained(after msgLog) string {
	if before.counted && after.counted {
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

// appended are the messages after shows beyond before, newest last; ok
// is false when the observer's window cannot tell.
func (before msgLog) appended(after msgLog) (_ []message, ok bool) {
	if before.counted && after.counted {
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

func countMessage(ms []message, m message) int {
	n := 0
	for _, x := range ms {
		if x == m {
			n++
		}
	}
	return n
}

// gainedMessage says what is wrong with the log after an accepted message
// m: "" when m came, exactly one more and the newest (in a --parallel run,
// where other workers append too: when m is among the messages
// appended).
func (before msgLog) gainedMessage(after msgLog, m message) string {
	if before.shared {
		added, ok := before.appended(after)
		if !ok || countMessage(added, m) > 0 {
			return ""
		}
		return fmt.Sprintf("the message %s=%q is not among the %d message(s) the gateway received meanwhile", m.Type, m.Value, len(added))
	}
	if why := before.gained(after); why != "" {
		return why
	}
	if after.Last == nil || *after.Last != m {
		return fmt.Sprintf("the newest message is %v, not the one sent (message_type %q, message_value %q)", after.Last, m.Type, m.Value)
	}
	return ""
}

// unchangedBy says whether a refused message m left the log as it was
// (in a --parallel run: m is not among the messages appended).
func (before msgLog) unchangedBy(after msgLog, m message) bool {
	if before.shared {
		added, ok := before.appended(after)
		return !ok || countMessage(added, m) == 0
	}
	return before.same(after)
}

// same says whether the log is unchanged.
func (before msgLog) same(after msgLog) bool {
	if before.counted && after.counted {
		return before.Total == after.Total
	}
	return sameMessages(before.All, after.All)
}

func sameMessages(a, b []message) bool {
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

// ObserverProbe is what ProbeObserver found.
type ObserverProbe struct {
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

// ProbeObserver reads a device of the tested gateway and its messages
// from base, as the effect checks will.
func ProbeObserver(ctx context.Context, base, token, mac, sn string) ObserverProbe {
	denied := func(err error) bool {
		oe, ok := err.(*observerError)
		return ok && (oe.status == http.StatusUnauthorized || oe.status == http.StatusForbidden)
	}
	if sn != "" {
		var d deviceState
		_, err := observeGet(ctx, base, token, devicePath(mac, sn), &d)
		if err == nil && d.State == nil {
			err = fmt.Errorf("GET %s: the answer has no state object", devicePath(mac, sn))
		}
		if err != nil {
			return ObserverProbe{NeedsToken: denied(err), Why: err.Error()}
		}
	}
	var all []message
	if _, err := observeGet(ctx, base, token, messagesPath(mac), &all); err != nil {
		return ObserverProbe{NeedsToken: denied(err), Why: err.Error()}
	}
	p := ObserverProbe{OK: true}
	var newest []message
	h, err := observeGet(ctx, base, token, messagesPath(mac)+"?limit=1", &newest)
	if err == nil && len(newest) <= 1 {
		if n, err := strconv.Atoi(h.Get("X-Total-Count")); err == nil && n >= len(all) {
			p.Counts = true
		}
	}
	return p
}

// observeSkip is why an effect check cannot run, or "" when it can.
func (env *Env) observeSkip() string {
	if env.Observer != "" {
		return ""
	}
	if env.NotObserved != "" {
		return env.NotObserved
	}
	return NotObservedPrefix + ": no observer (--observer URL; docs/observer.md)"
}

// AnyDeviceSN is the serial number of a device of the tested gateway, the
// one the observer is first asked about ("" when the fleet has none).
func (env *Env) AnyDeviceSN() string {
	d, _ := env.anyDevice()
	return d.SN
}

// CloseIdleConnections closes the connections the run keeps for reuse,
// to the target and to the observer. Run it before stopping a server the
// run talked to: a connection dialed for a request that another one
// served sits unused in the pool, and net/http's Shutdown waits 5 s for
// such a connection before it counts it idle.
func (env *Env) CloseIdleConnections() {
	if env.Client != nil {
		env.Client.CloseIdleConnections()
	}
	observerHTTP.CloseIdleConnections()
}
