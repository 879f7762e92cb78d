package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// ExpectedMessages is what an ack log says one gateway's message log must
// hold: each acknowledged message once, and in the order its worker sent
// them; each message sent without a sure answer at most once.
type ExpectedMessages struct {
	MAC string
	// Acked and Maybe are the message values (message_value), in the ack
	// log's order.
	Acked, Maybe []string
	// Untagged counts acknowledged messages without a tag (an ack log of
	// an older gwconform), which cannot be told apart and are not held.
	Untagged int
}

// messageTag reads a message value's tag (SETTING.TAG=NUMBER, TAG is
// rRUNsSHARDwWORKERnN): the worker that sent it ("rRUNsSHARDwWORKER") and
// its place in the worker's order.
func messageTag(v string) (worker string, n int64, ok bool) {
	name, _, _ := strings.Cut(v, "=")
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "", 0, false
	}
	tag := name[i+1:]
	j := strings.LastIndexByte(tag, 'n')
	if j < 0 || !strings.HasPrefix(tag, "r") || !strings.Contains(tag[:j], "w") {
		return "", 0, false
	}
	n, err := strconv.ParseInt(tag[j+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return tag[:j], n, true
}

// MessageExpectations reads the ack log's messages into what each
// gateway's log must hold, by MAC.
func MessageExpectations(entries []AckEntry) map[string]*ExpectedMessages {
	out := map[string]*ExpectedMessages{}
	for _, e := range entries {
		if e.Op != device.SendMessage.Name() {
			continue
		}
		x := out[e.MAC]
		if x == nil {
			x = &ExpectedMessages{MAC: e.MAC}
			out[e.MAC] = x
		}
		if _, _, ok := messageTag(e.MessageValue); !ok {
			if e.Status == AckAcknowledged {
				x.Untagged++
			}
			continue
		}
		if e.Status == AckAcknowledged {
			x.Acked = append(x.Acked, e.MessageValue)
		} else {
			x.Maybe = append(x.Maybe, e.MessageValue)
		}
	}
	return out
}

// MessageReport is what CheckMessages found.
type MessageReport struct {
	// Gateways and Messages are how many were checked; Evicted counts
	// acknowledged messages not found on a gateway whose capped log
	// dropped its oldest (they may have been among them); Untagged those
	// the log cannot tell apart.
	Gateways, Messages, Evicted, Untagged int
	Mismatches                            []Mismatch
}

// CheckMessages reads each gateway's message log through the admin API
// (GET /_sim/gateways/{mac}/messages, CONTRACT 7, with X-Total-Count) and
// holds it to the ack log: each acknowledged message present once, in its
// worker's order; a message sent without a sure answer at most once. An
// acknowledged message missing from a log that was capped (X-Total-Count
// above what it holds) counts as evicted when it is older, in its
// worker's order, than every message of that worker still held;
// otherwise it is lost.
func (c AckCheck) CheckMessages(ctx context.Context, want map[string]*ExpectedMessages) (*MessageReport, error) {
	base, err := url.Parse(strings.TrimSuffix(c.Target, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("target %q must be an http:// or https:// base URL", RedactURL(c.Target))
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	macs := make([]string, 0, len(want))
	for m := range want {
		macs = append(macs, m)
	}
	sort.Strings(macs)
	rep := &MessageReport{}
	for _, mac := range macs {
		x := want[mac]
		rep.Untagged += x.Untagged
		if len(x.Acked)+len(x.Maybe) == 0 {
			continue
		}
		got, total, err := c.readMessages(ctx, client, base, mac)
		if err != nil {
			return nil, err
		}
		rep.Gateways++
		rep.Messages += len(x.Acked)
		rep.Mismatches = append(rep.Mismatches, x.check(got, total, &rep.Evicted)...)
	}
	return rep, nil
}

// check holds one gateway's log (values in order, total ever received)
// to the expectations.
func (x *ExpectedMessages) check(got []string, total uint64, evicted *int) []Mismatch {
	var out []Mismatch
	bad := func(v, want, g string) {
		out = append(out, Mismatch{MAC: x.MAC, SN: "messages", Field: "message " + v, Expected: []string{want}, Got: g})
	}
	at := map[string][]int{} // value: its places in the log
	for i, v := range got {
		at[v] = append(at[v], i)
	}
	capped := total > uint64(len(got))
	// The oldest message of each worker still held, by its n.
	oldest := map[string]int64{}
	for _, v := range got {
		if w, n, ok := messageTag(v); ok {
			if o, seen := oldest[w]; !seen || n < o {
				oldest[w] = n
			}
		}
	}
	type placed struct {
		n   int64
		pos int
		v   string
	}
	byWorker := map[string][]placed{}
	for _, v := range x.Acked {
		w, n, _ := messageTag(v)
		switch places := at[v]; {
		case len(places) == 1:
			byWorker[w] = append(byWorker[w], placed{n, places[0], v})
		case len(places) > 1:
			bad(v, "present once", fmt.Sprintf("present %d times", len(places)))
		case capped && (oldest[w] == 0 || n < oldest[w]):
			*evicted++
		default:
			bad(v, "present once (acknowledged)", "(absent)")
		}
	}
	for _, v := range x.Maybe {
		w, n, _ := messageTag(v)
		switch places := at[v]; {
		case len(places) > 1:
			bad(v, "at most once (sent without a sure answer)", fmt.Sprintf("present %d times", len(places)))
		case len(places) == 1:
			byWorker[w] = append(byWorker[w], placed{n, places[0], v})
		}
	}
	workers := make([]string, 0, len(byWorker))
	for w := range byWorker {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	for _, w := range workers {
		ps := byWorker[w]
		sort.Slice(ps, func(i, j int) bool { return ps[i].n < ps[j].n })
		for i := 1; i < len(ps); i++ {
			if ps[i].pos < ps[i-1].pos {
				bad(ps[i].v, "after "+ps[i-1].v+" (sent after its answer)", "before it")
			}
		}
	}
	return out
}

// readMessages is GET /_sim/gateways/{mac}/messages: the values in order
// and X-Total-Count.
func (c AckCheck) readMessages(ctx context.Context, client *http.Client, base *url.URL, mac string) ([]string, uint64, error) {
	u := *base
	u.Path = base.Path + "/_sim/gateways/" + url.PathEscape(mac) + "/messages"
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	if c.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("%w: %s: %v", ErrAdmin, RedactURL(c.Target), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, 0, fmt.Errorf("%w: %s answered %d: give its --admin-token", ErrAdmin, RedactURL(c.Target), resp.StatusCode)
	default:
		return nil, 0, fmt.Errorf("%w: %s answered %d to %s: %s", ErrAdmin, RedactURL(c.Target), resp.StatusCode,
			u.Path, strings.TrimSpace(cut(body)))
	}
	var msgs []struct {
		Value string `json:"message_value"`
	}
	if err := json.Unmarshal(body, &msgs); err != nil {
		return nil, 0, fmt.Errorf("%w: %s: the messages of %s are not CONTRACT 7's JSON: %v", ErrAdmin, RedactURL(c.Target), mac, err)
	}
	got := make([]string, len(msgs))
	for i, m := range msgs {
		got[i] = m.Value
	}
	total := uint64(len(got))
	if h := resp.Header.Get("X-Total-Count"); h != "" {
		if n, err := strconv.ParseUint(h, 10, 64); err == nil && n > total {
			total = n
		}
	}
	return got, total, nil
}
