package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Target is the implementation under test and the observer that shows
// its state (CONTRACT 7 reads), reached over HTTP.
type Target struct {
	BaseURL string
	// Observer is the base URL of the CONTRACT 7 reads; empty: none, and
	// no state is checked.
	Observer   string
	AdminToken string
	// Reset sends POST /_sim/reset to the observer before each sequence,
	// when it answers it, so a sequence runs from the fleet as loaded.
	Reset bool

	fleet   *fleet.Fleet
	rules   Rules
	signer  client.Signer
	clients []*client.Client
	bases   []string
	turn    atomic.Int64 // the replica of the next sequential operation
	http    *http.Client
	noReset bool // the observer answered the reset with anything but 2xx
	// via, when set, sends every request and read instead of the
	// target's own clients (NewVia).
	via Via
	// unsettled: reads through via show the state as it is, without
	// waiting for accepted changes to appear (while shrinking: the
	// shrunk sequence is run once more with settling, and says whether
	// it still disagrees).
	unsettled atomic.Bool
	// quiet: the model expects no change at the place the next read
	// reads, which is read as it is.
	quiet atomic.Bool
	// sent holds each POST sent, by operation, fields and timestamp
	// (either format): one sent again in the same second is a replay.
	sentMu sync.Mutex
	sent   map[string]bool
	// renewReplays sends a request refused as a replay of one it was not
	// sent before again in the next second (Config.Latitudes).
	renewReplays bool
}

// again notes req, op's request, as sent and says whether it was sent
// before.
func (t *Target) again(op Op, req client.Request) bool {
	var ts string
	for _, f := range req.Fields {
		if f.Key == device.FieldTimestamp {
			ts, _ = f.Value.(string)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%s|%s|%s", op.Kind, ts, op.Key, strings.ToLower(op.Account), strings.ToLower(op.MAC), strings.ToLower(op.SN), op.Type, op.Wire)
	for _, kv := range op.Fields {
		fmt.Fprintf(&b, "|%s=%s", kv.Key, kv.Value)
	}
	t.sentMu.Lock()
	defer t.sentMu.Unlock()
	if t.sent == nil {
		t.sent = map[string]bool{}
	}
	k := b.String()
	seen := t.sent[k]
	t.sent[k] = true
	return seen
}

// Via is another way to a target: the path the requests of gwconform
// run's checks take (its link: the run's bound of requests in flight,
// its retries, its settling of accepted changes before a read). Send
// sends one signed request; ReadDevice and ReadMessages are the CONTRACT
// 7 reads, the messages oldest first (the newest only, or a window of
// them, where that is all the observer shows).
type Via interface {
	Send(ctx context.Context, req client.Request) (*client.Response, client.Exchange, error)
	ReadDevice(ctx context.Context, mac, sn string, settle bool) (DeviceState, error)
	ReadMessages(ctx context.Context, mac string, settle bool) ([]Msg, error)
}

// NewVia is a target reached through via: observed says via reads an
// observer. It never resets the target: a sequence starts from the state
// the observer shows.
func NewVia(name string, f *fleet.Fleet, rules Rules, via Via, observed bool) *Target {
	if rules == nil {
		rules = OracleRules()
	}
	t := &Target{BaseURL: name, fleet: f, rules: rules, via: via, bases: []string{name},
		http: &http.Client{Timeout: client.DefaultTimeout}}
	if observed {
		t.Observer = name
	}
	return t
}

// NewTarget prepares a target for the fleet's credentials; signer signs
// for schemes other than md5 (nil: md5 with the secret of each api_key).
// base may list several URLs separated by commas: replicas of one
// implementation sharing one state. Concurrent client i then sends to
// replica i modulo their number, and sequential operations go to each in
// turn, so a state that one replica wrote and another did not see shows.
func NewTarget(base string, f *fleet.Fleet, signer client.Signer, rules Rules, timeout time.Duration) (*Target, error) {
	if signer == nil {
		signer = keyedSigner{f}
	}
	if rules == nil {
		rules = OracleRules()
	}
	t := &Target{fleet: f, rules: rules, signer: signer}
	for _, u := range strings.Split(base, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		c, err := client.New(client.Config{BaseURL: u, Signer: signer, Timeout: timeout, RetryBudget: -1})
		if err != nil {
			return nil, err
		}
		t.clients = append(t.clients, c)
		t.bases = append(t.bases, u)
	}
	if timeout == 0 {
		timeout = client.DefaultTimeout
	}
	t.BaseURL = strings.Join(t.bases, ",")
	t.http = &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return t, nil
}

// Bases are the target's base URLs (several for replicas).
func (t *Target) Bases() []string { return t.bases }

// Close releases idle connections.
func (t *Target) Close() {
	for _, c := range t.clients {
		c.CloseIdleConnections()
	}
	t.http.CloseIdleConnections()
}

// clientFor is the replica op goes to.
func (t *Target) clientFor(op Op) *client.Client {
	if len(t.clients) == 1 {
		return t.clients[0]
	}
	if op.Client > 0 {
		return t.clients[op.Client%len(t.clients)]
	}
	return t.clients[int(t.turn.Add(1))%len(t.clients)]
}

// keyedSigner signs by the md5 scheme with the secret of the api_key the
// request carries, so one client speaks for every account of the fleet;
// an unknown key is signed with an empty secret. Its signs are the
// client's (client.MD5Signer), which every report masks by value.
type keyedSigner struct{ f *fleet.Fleet }

// FleetSigner signs each request by md5 with the secret of the api_key it
// carries.
func FleetSigner(f *fleet.Fleet) client.Signer { return keyedSigner{f} }

func (s keyedSigner) Sign(ctx context.Context, fields []client.Field) (string, error) {
	var key string
	for _, f := range fields {
		if f.Key == device.FieldAPIKey {
			key, _ = f.Value.(string)
		}
	}
	secret, _ := s.f.Secret(key)
	return client.MD5Signer{Secret: secret}.Sign(ctx, fields)
}

// Result is what one operation got: an answer, an observed device or log,
// or a transport error; with the exchange for the report.
type Result struct {
	Answer   Answer       `json:"answer"`
	Device   *DeviceState `json:"device,omitempty"`
	Messages []Msg        `json:"messages,omitempty"`
	Err      string       `json:"error,omitempty"`
	// Call and Return are when the operation was sent and answered, in
	// nanoseconds since the sequence started (concurrent runs).
	Call, Return int64 `json:"-"`
	// Exchange is the request and answer as sent, sign included: only
	// curl shows it, without the sign when redact says so.
	Exchange client.Exchange `json:"-"`
	redact   bool
	known    bool // the api_key is the fleet's
	// Again: the same operation and fields with the same timestamp were
	// sent to the target before (a replay, CONTRACT 1).
	Again bool `json:"-"`
}

// Do sends one operation. Reads go to the observer.
func (t *Target) Do(ctx context.Context, op Op) Result {
	r := t.do(ctx, op)
	if t.renewReplays && !op.IsRead() && !r.Again && r.Err == "" && r.Answer.Status == 401 && r.Answer.Code == device.CodeReplayedRequest {
		// Refused as a replay of a request this target was not sent by
		// explore: another sender (the run's other checks, another
		// client of a shared service) sent the same in the same second.
		// Sent again in the next second, it is no replay.
		select {
		case <-ctx.Done():
			return r
		case <-time.After(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond))):
		}
		r = t.do(ctx, op)
	}
	return r
}

// do is Do without renewing a refused replay.
func (t *Target) do(ctx context.Context, op Op) Result {
	if t.via != nil {
		return t.doVia(ctx, op)
	}
	switch op.Kind {
	case ReadDevice:
		var raw struct {
			Name  string         `json:"name"`
			State map[string]any `json:"state"`
		}
		ex, err := t.get(ctx, "/_sim/gateways/"+op.MAC+"/devices/"+op.SN, &raw)
		if err != nil {
			return Result{Err: err.Error(), Exchange: ex}
		}
		d := DeviceState{Name: raw.Name, State: make(map[string]string, len(raw.State))}
		for k, v := range raw.State {
			d.State[k] = valueText(v)
		}
		return Result{Device: &d, Exchange: ex}
	case ReadMessages:
		var msgs []Msg
		ex, err := t.get(ctx, "/_sim/gateways/"+op.MAC+"/messages", &msgs)
		if err != nil {
			return Result{Err: err.Error(), Exchange: ex}
		}
		if msgs == nil {
			msgs = []Msg{}
		}
		return Result{Messages: msgs, Exchange: ex}
	}
	op.Key = t.keyOf(op)
	req := t.request(ctx, op)
	again := t.again(op, req)
	resp, ex, err := t.clientFor(op).Do(ctx, req)
	// A sign that authenticates is never shown (curl removes it and the
	// line signs afresh). A request meant to fail authentication keeps its
	// sign, which authenticates nothing.
	_, known := t.fleet.Secret(op.Key)
	redact := known && !op.BadSign
	if err != nil {
		return Result{Err: err.Error(), Exchange: ex, redact: redact, known: known, Again: again}
	}
	return Result{Answer: Answer{Status: resp.Status, Code: resp.ErrorCode, Field: resp.ErrorField, Success: resp.Success()}, Exchange: ex, redact: redact, known: known, Again: again}
}

// doVia is Do through t.via.
func (t *Target) doVia(ctx context.Context, op Op) Result {
	switch op.Kind {
	case ReadDevice:
		d, err := t.via.ReadDevice(ctx, op.MAC, op.SN, !t.unsettled.Load() && !t.quiet.Load())
		if err != nil {
			return Result{Err: err.Error()}
		}
		return Result{Device: &d}
	case ReadMessages:
		msgs, err := t.via.ReadMessages(ctx, op.MAC, !t.unsettled.Load() && !t.quiet.Load())
		if err != nil {
			return Result{Err: err.Error()}
		}
		if msgs == nil {
			msgs = []Msg{}
		}
		return Result{Messages: msgs}
	}
	op.Key = t.keyOf(op)
	req := t.request(ctx, op)
	again := t.again(op, req)
	resp, ex, err := t.via.Send(ctx, req)
	// The way's ledger (the run's link) sent it as it is though the run
	// had sent the same, accepted, before: a replay of the run's own.
	again = again || ex.Repeated
	_, known := t.fleet.Secret(op.Key)
	redact := known && !op.BadSign
	if err != nil {
		return Result{Err: err.Error(), Exchange: ex, redact: redact, known: known, Again: again}
	}
	return Result{Answer: Answer{Status: resp.Status, Code: resp.ErrorCode, Field: resp.ErrorField, Success: resp.Success()}, Exchange: ex, redact: redact, known: known, Again: again}
}

// DeviceFromValues is an observed device as the model keeps it: each
// state value as text, numbers in their shortest form.
func DeviceFromValues(name string, state map[string]any) DeviceState {
	d := DeviceState{Name: name, State: make(map[string]string, len(state))}
	for k, v := range state {
		d.State[k] = valueText(v)
	}
	return d
}

// keyOf is the api_key op sends: a key a report masked (its first four
// characters and client.MaskSuffix) is the fleet's key that starts so.
func (t *Target) keyOf(op Op) string {
	prefix, masked := strings.CutSuffix(op.Key, client.MaskSuffix)
	if !masked {
		return op.Key
	}
	if k, ok := t.fleet.KeyWithPrefix(strings.ToLower(op.Account), prefix); ok {
		return k
	}
	return op.Key
}

// Unmask is ops with each masked api_key replaced by the fleet's key
// (keyOf): a sequence read from explore.json, judged and sent again.
func (t *Target) Unmask(ops []Op) []Op {
	out := make([]Op, len(ops))
	for i, op := range ops {
		op.Key = t.keyOf(op)
		out[i] = op
	}
	return out
}

// request builds op's request: the envelope, then the op's fields with
// their names in op's format; in op's wire form when it has one.
func (t *Target) request(ctx context.Context, op Op) client.Request {
	format := device.JSON
	if op.Format == "xml" {
		format = device.XML
	}
	var path string
	switch op.Kind {
	case Command:
		path = device.SendCommand.Path()
	case Message:
		path = device.SendMessage.Path()
	default:
		path = device.UpdateName.Path()
	}
	ts := auth.Timestamp(time.Now(), t.fleet.Location())
	fields := requestFields(op, t.rules, ts, client.SignPlaceholder)
	sign := client.SignAuto
	if op.BadSign {
		// A well-formed sign with a secret nobody has.
		fields[2].Value = auth.Sign(op.Key, "explore-wrong-secret", ts)
		sign = client.SignKeep
	}
	req := client.Request{Path: path, Format: format, Fields: fields, Sign: sign}
	if f := wireOf(op); f != nil {
		req = t.wire(ctx, op, f, req)
	}
	return req
}

// requestFields are op's plain fields: the envelope with timestamp ts
// and sign, then the op's own.
func requestFields(op Op, rules Rules, ts, sign string) []client.Field {
	json := op.Format != "xml"
	fields := make([]client.Field, 0, 8+len(op.Fields))
	fields = append(fields,
		client.Field{Key: device.FieldAPIKey, Value: op.Key},
		client.Field{Key: device.FieldTimestamp, Value: ts},
		client.Field{Key: device.FieldSign, Value: sign},
		client.Field{Key: device.FieldAccount, Value: op.Account},
		client.Field{Key: device.FieldMAC, Value: op.MAC})
	if op.SN != "" {
		fields = append(fields, client.Field{Key: device.FieldSN, Value: op.SN})
	}
	if op.Kind == Command {
		fields = append(fields, client.Field{Key: device.FieldType, Value: op.Type})
	}
	for _, kv := range op.Fields {
		key := kv.Key
		if json && op.Kind == Command {
			key = rules.Wire(op.Type, kv.Key, "json")
		}
		var v any = kv.Value
		if kv.Number && json {
			v = jsonNumber(kv.Value)
		}
		fields = append(fields, client.Field{Key: key, Value: v})
	}
	return fields
}

// readers bounds the reads readAll sends at once.
const readers = 8

// readAll sends reads of the observer, several at once: they are
// independent of one another, and on a loopback target the simulator and
// explore then keep both cores busy instead of taking turns. Each result
// is at its read's index; Call and Return are when it was sent and
// answered, in nanoseconds since start.
func (t *Target) readAll(ctx context.Context, reads []Op) []Result {
	return t.readAllSince(ctx, reads, time.Now())
}

func (t *Target) readAllSince(ctx context.Context, reads []Op, start time.Time) []Result {
	res := make([]Result, len(reads))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(readers, len(reads)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reads) {
					return
				}
				call := time.Since(start).Nanoseconds()
				r := t.Do(ctx, reads[i])
				r.Call, r.Return = call, time.Since(start).Nanoseconds()
				res[i] = r
			}
		}()
	}
	wg.Wait()
	return res
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// valueText is a JSON state value as text; numbers in their shortest form.
func valueText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// get reads one observer path as JSON into dst.
func (t *Target) get(ctx context.Context, path string, dst any) (client.Exchange, error) {
	ex := client.Exchange{Method: http.MethodGet, URL: t.Observer + path}
	if t.AdminToken != "" {
		ex.RequestHeaders = map[string]string{"Authorization": "Bearer <REDACTED>"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ex.URL, nil)
	if err != nil {
		return ex, err
	}
	if t.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+t.AdminToken)
	}
	start := time.Now()
	resp, err := t.http.Do(req)
	ex.Duration = time.Since(start)
	if err != nil {
		return ex, fmt.Errorf("observer: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	ex.Status, ex.ResponseBody = resp.StatusCode, string(b)
	if len(ex.ResponseBody) > 4096 {
		ex.ResponseBody = ex.ResponseBody[:4096] + "…"
	}
	if err != nil {
		return ex, fmt.Errorf("observer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return ex, fmt.Errorf("observer answered %d to GET %s", resp.StatusCode, path)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return ex, fmt.Errorf("observer: GET %s: %v", path, err)
	}
	return ex, nil
}

// ProbeObserver reports whether base answers the CONTRACT 7 device read
// for a device of the world.
func (t *Target) ProbeObserver(ctx context.Context, w *World, base string) bool {
	saved := t.Observer
	t.Observer = strings.TrimRight(base, "/")
	d := w.Devices()[0]
	var raw map[string]any
	_, err := t.get(ctx, "/_sim/gateways/"+d.MAC+"/devices/"+d.SN, &raw)
	if err != nil {
		t.Observer = saved
		return false
	}
	return true
}

// reset puts the target back to its fleet when the observer can.
func (t *Target) reset(ctx context.Context) error {
	if !t.Reset || t.Observer == "" || t.noReset {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Observer+"/_sim/reset", nil)
	if err != nil {
		return err
	}
	if t.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+t.AdminToken)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return fmt.Errorf("observer: reset: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.noReset = true // a plain CONTRACT 7 observer: start from what it shows
	}
	return nil
}

// ResetState sends POST /_sim/reset to the observer when the target was
// told to (Reset) and it answers it.
func (t *Target) ResetState(ctx context.Context) error { return t.reset(ctx) }

// Resets reports whether ResetState puts the target back to its fleet:
// it was told to reset and its observer answered the last reset with 2xx.
func (t *Target) Resets() bool { return t.Reset && t.Observer != "" && !t.noReset }

// ReadAll sends observer reads, several at once; each result at its
// read's index.
func (t *Target) ReadAll(ctx context.Context, reads []Op) []Result { return t.readAll(ctx, reads) }

// Curl is the shell line that sends op again, as explore's reports write
// it: signed afresh, the api_key masked.
func Curl(op Op, r Result) string { return curl(op, r) }

// Describe is what an operation got, as one line.
func Describe(r Result) string { return describe(r) }

// Partition names the device or log op reads or may change.
func Partition(op Op) string { return partitionOf(op) }
