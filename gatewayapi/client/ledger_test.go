package client

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// ledgerTarget records the timestamp and sign of every request, read
// from the body in either format.
func ledgerTarget(t *testing.T) (string, func() [][2]string) {
	var mu sync.Mutex
	var got [][2]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var f struct {
			Control struct {
				Timestamp string `json:"timestamp" xml:"timestamp"`
				Sign      string `json:"sign" xml:"sign"`
				Dimming   any    `json:"dimming" xml:"dimming"`
			} `json:"control" xml:"control"`
		}
		if strings.Contains(r.Header.Get("Content-Type"), "xml") {
			xml.Unmarshal(b, &f)
		} else {
			json.Unmarshal(b, &f)
		}
		mu.Lock()
		got = append(got, [2]string{f.Control.Timestamp, f.Control.Sign})
		mu.Unlock()
		if fmt.Sprint(f.Control.Dimming) == "0" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"status":"error","error":{"code":"invalid_field","field":"dimming"}}`)
			return
		}
		io.WriteString(w, `{"status":"success"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() [][2]string { mu.Lock(); defer mu.Unlock(); return append([][2]string(nil), got...) }
}

func ledgerRequest(ts time.Time, f device.Format, dimming string) Request {
	stamp := func(shift int) []Field {
		return []Field{{Key: "api_key", Value: "k"}, {Key: "timestamp", Value: ts.Add(time.Duration(shift) * time.Second).Format(timestampLayout)},
			{Key: "sign", Value: ""}, {Key: "sn", Value: "AB01"}, {Key: "dimming", Value: json.Number(dimming)}}
	}
	return Request{Path: "/v1/services/gateway/command", Format: f, Fields: stamp(0), Vary: stamp}
}

func TestLedgerVariesARepeatAndNothingElse(t *testing.T) {
	url, got := ledgerTarget(t)
	c, err := New(Config{BaseURL: url, Signer: MD5Signer{APIKey: "k", Secret: "s"}, Ledger: NewLedger(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	send := func(r Request) {
		if _, _, err := c.Do(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	send(ledgerRequest(ts, device.JSON, "40"))
	// The same fields in XML, the number as text: a repeat, moved a second.
	r := ledgerRequest(ts, device.XML, "40.0")
	send(r)
	// The same again: the next free second is the one before.
	send(ledgerRequest(ts, device.JSON, "40"))
	// Another value in the same second: not a repeat, sent as it is.
	send(ledgerRequest(ts, device.JSON, "41"))
	// A pinned request (no Vary) repeating one: sent as it is.
	pinned := ledgerRequest(ts, device.JSON, "40")
	pinned.Vary = nil
	send(pinned)
	// On purpose: sent as it is.
	again := ledgerRequest(ts, device.XML, "40")
	again.Repeat = true
	send(again)
	// A refused request is no replay's source: the same again in that
	// second is sent as it is.
	send(ledgerRequest(ts, device.JSON, "0"))
	send(ledgerRequest(ts, device.XML, "0"))
	want := []string{"20260102030405", "20260102030406", "20260102030404", "20260102030405", "20260102030405", "20260102030405",
		"20260102030405", "20260102030405"}
	g := got()
	if len(g) != len(want) {
		t.Fatalf("%d requests, want %d", len(g), len(want))
	}
	for i, w := range want {
		if g[i][0] != w || g[i][1] != fmt.Sprintf("%x", md5.Sum([]byte("k"+"s"+w))) {
			t.Errorf("request %d: timestamp %s sign %s, want %s signed afresh", i+1, g[i][0], g[i][1], w)
		}
	}
	if n := c.ledger.Varied(); n != 2 {
		t.Errorf("varied %d, want 2", n)
	}
}

func TestLedgerWorkersWriteTheirOwnSeconds(t *testing.T) {
	url, got := ledgerTarget(t)
	ts := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC) // a second divisible by 3
	for w := 0; w < 3; w++ {
		l := NewLedger(10 * time.Second)
		l.Share(w, 3)
		c, err := New(Config{BaseURL: url, Signer: MD5Signer{APIKey: "k", Secret: "s"}, Ledger: l})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Do(context.Background(), ledgerRequest(ts, device.JSON, "40")); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, g := range got() {
		when, _ := time.Parse(timestampLayout, g[0])
		if seen[g[0]] || when.Sub(ts).Abs() > 3*time.Second {
			t.Errorf("timestamps %v: each worker's own, near the clock", got())
		}
		seen[g[0]] = true
	}
}

// TestLedgerSendsAgainWhatAnotherSenderUsed: a service that was sent the
// same fields in the same second by another sender (an earlier run, another
// client) refuses the request as a replay. The ledger keeps that second as
// used and the Client sends the request again in another, signed afresh;
// the refusal stays in the exchange's Earlier. A request whose timestamp
// is pinned, or one repeated on purpose, is not sent again: its refusal is
// the answer.
func TestLedgerSendsAgainWhatAnotherSenderUsed(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	usedElsewhere := ts.Format(timestampLayout)
	var mu sync.Mutex
	var stamps []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var f struct {
			Control struct {
				Timestamp string `json:"timestamp"`
				Sign      string `json:"sign"`
			} `json:"control"`
		}
		json.NewDecoder(r.Body).Decode(&f)
		mu.Lock()
		stamps = append(stamps, f.Control.Timestamp)
		mu.Unlock()
		if want := fmt.Sprintf("%x", md5.Sum([]byte("k"+"s"+f.Control.Timestamp))); f.Control.Sign != want {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"status":"error","error":{"code":"invalid_sign"}}`)
			return
		}
		if f.Control.Timestamp == usedElsewhere {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"status":"error","error":{"code":"replayed_request","message":"seen before"}}`)
			return
		}
		io.WriteString(w, `{"status":"success"}`)
	}))
	t.Cleanup(srv.Close)
	sent := func() []string { mu.Lock(); defer mu.Unlock(); s := stamps; stamps = nil; return s }
	c, err := New(Config{BaseURL: srv.URL, Signer: MD5Signer{APIKey: "k", Secret: "s"}, Ledger: NewLedger(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	resp, ex, err := c.Do(context.Background(), ledgerRequest(ts, device.JSON, "40"))
	if err != nil || !resp.Success() {
		t.Fatalf("movable request: %v %+v", err, resp)
	}
	got := sent()
	if len(got) != 2 || got[0] != usedElsewhere || got[1] == usedElsewhere || len(ex.Earlier) != 1 || ex.Earlier[0].Status != 401 {
		t.Fatalf("sent %v with %d earlier exchange(s), want the refused second, then another (one earlier exchange)", got, len(ex.Earlier))
	}
	// The used second stays used: the same fields go elsewhere at once.
	if _, _, err := c.Do(context.Background(), ledgerRequest(ts, device.JSON, "40")); err != nil {
		t.Fatal(err)
	}
	if got := sent(); len(got) != 1 || got[0] == usedElsewhere {
		t.Fatalf("sent %v, want one request outside the used second", got)
	}
	for _, r := range []Request{
		{Path: "/v1/services/gateway/command", Format: device.JSON, Fields: ledgerRequest(ts, device.JSON, "41").Fields},
		func() Request { r := ledgerRequest(ts, device.JSON, "42"); r.Repeat = true; return r }(),
	} {
		resp, ex, err := c.Do(context.Background(), r)
		if err != nil || resp.Status != 401 || resp.ErrorCode != device.CodeReplayedRequest || len(ex.Earlier) != 0 || len(sent()) != 1 {
			t.Errorf("pinned or repeated request: %v %+v, %d earlier: want its refusal as the answer, sent once", err, resp, len(ex.Earlier))
		}
	}
}

// TestLedgerKeysAPathAsAServiceMayRouteIt: the forms of a path a service
// may route to the same operation are one key; another path is another.
func TestLedgerKeysAPathAsAServiceMayRouteIt(t *testing.T) {
	l := NewLedger(0)
	fields := []Field{{Key: "api_key", Value: "k"}, {Key: "timestamp", Value: "20260102030405"}, {Key: "io", Value: "On"}}
	plain := l.key(Request{Path: "/v1/services/gateway/command"}, fields)
	for _, p := range []string{"/v1/services/gateway/command?x=1", "/v1/services/gateway/comman%64", "/v1//services/gateway/command",
		"/v1/services/gateway/./command", "/v1/services/gateway/x/../command", "/v1/services/gateway/command/", "/V1/SERVICES/GATEWAY/COMMAND",
		"/v1/services/gateway%2Fcommand", "/v1/services/gateway/command#top"} {
		if got := l.key(Request{Path: p}, fields); got != plain {
			t.Errorf("%s: keyed apart from the plain path", p)
		}
	}
	for _, p := range []string{"/v1/services/gateway/message", "/v2/services/gateway/command", "/v1/services/gateway/commands"} {
		if got := l.key(Request{Path: p}, fields); got == plain {
			t.Errorf("%s: keyed as the command path", p)
		}
	}
}
