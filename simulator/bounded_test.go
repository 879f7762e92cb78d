package simulator_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

// These tests are not parallel: they read the heap, which other tests
// running at the same time would disturb.

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// serve sends one request straight to the handler (the same handler the
// listener serves; no sockets, so that 100k requests take seconds).
func serve(t *testing.T, h http.Handler, method, path, contentType string, body string) int {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

// TestMessageLogBounded sends 100,000 messages of about 250 bytes to one
// gateway: the first 2,000 through the handler, the rest straight to the
// store (the part that keeps them; through the handler they would take a
// minute under the race detector). Its log keeps the last
// store.DefaultMessageLimit, oldest first, counts all of them, and the
// heap does not grow with the 98,000 sent after the log was full (kept,
// they would be over 25 MB).
func TestMessageLogBounded(t *testing.T) {
	sim, c := start(t, simulator.Options{})
	h := sim.Server.Handler()
	const total, viaHTTP, limit = 100_000, 2_000, store.DefaultMessageLimit
	env := simtest.Body(device.JSON, c.Envelope())
	prefix := string(env[:len(env)-2]) // without "}}"
	pad := strings.Repeat("x", 200)
	for i := 0; i < viaHTTP; i++ {
		body := prefix + `,"message_type":"message","message_value":"n` + pad + `=` + strconv.Itoa(i) + `"}}`
		if code := serve(t, h, http.MethodPost, device.SendMessage.Path(), "application/json", body); code != http.StatusOK {
			t.Fatalf("message %d: status %d", i, code)
		}
	}
	before := heapAfterGC()
	for i := viaHTTP; i < total; i++ {
		m := store.Message{Time: time.Now().UTC(), Type: "message", Value: "n" + pad + "=" + strconv.Itoa(i)}
		if err := sim.Store.Message(simtest.AccountA, simtest.MACA, m); err != nil {
			t.Fatal(err)
		}
	}
	after := heapAfterGC()
	if after > before && after-before > 4<<20 {
		t.Errorf("the heap grew by %d bytes over %d messages to a log bounded at %d", after-before, total-viaHTTP, limit)
	}

	// Through real HTTP: the messages endpoint and the state say the same.
	msgs := c.Messages(simtest.MACA)
	if len(msgs) != limit {
		t.Fatalf("GET messages: %d messages, want the last %d", len(msgs), limit)
	}
	for i, m := range msgs {
		if want := "n" + pad + "=" + strconv.Itoa(total-limit+i); m.Value != want {
			t.Fatalf("message %d of the log is %.20s…, want the value of message %d, oldest first", i, m.Value, total-limit+i)
		}
	}
	_, hd, _ := c.Admin(http.MethodGet, "/_sim/gateways/"+simtest.MACA+"/messages", "")
	if got := hd.Get("X-Total-Count"); got != strconv.Itoa(total) {
		t.Errorf("X-Total-Count %s, want %d", got, total)
	}
	if g := gatewayOf(t, c.State(), simtest.MACA); len(g.Messages) != limit || g.MessagesTotal != total {
		t.Errorf("state: %d messages, %d in all; want %d and %d", len(g.Messages), g.MessagesTotal, limit, total)
	}
	// The journal is bounded too.
	var journal []server.Entry
	c.AdminJSON(http.MethodGet, "/_sim/journal?limit=0", "", &journal)
	if len(journal) > server.DefaultJournalSize {
		t.Errorf("the journal returns %d entries, more than its size %d", len(journal), server.DefaultJournalSize)
	}
}

// TestJournalBounded fills the journal twice over with requests whose
// paths and methods are 4 and 2 KB long: it keeps at most its size, each
// entry with the path and method cut short, and the heap does not hold the
// long ones (kept, its 1000 entries would hold 6 MB).
func TestJournalBounded(t *testing.T) {
	sim, c := start(t, simulator.Options{JournalSize: 1000})
	h := sim.Server.Handler()
	long := strings.Repeat("p", 4000)
	before := heapAfterGC()
	for i := 0; i < 2000; i++ {
		path := fmt.Sprintf("/%d/%s", i, long)
		method := "M" + long[:2000]
		if code := serve(t, h, method, path, "application/json", "{}"); code != http.StatusNotFound {
			t.Fatalf("request %d: status %d, want 404", i, code)
		}
	}
	after := heapAfterGC()
	if after > before && after-before > 2<<20 {
		t.Errorf("the heap grew by %d bytes over 2000 requests to a journal of 1000", after-before)
	}
	var journal []server.Entry
	_, hd, _ := c.Admin(http.MethodGet, "/_sim/journal?limit=100000", "")
	c.AdminJSON(http.MethodGet, "/_sim/journal?limit=100000", "", &journal)
	if len(journal) != 1000 {
		t.Errorf("the journal returns %d entries, want its size 1000", len(journal))
	}
	if hd.Get("X-Total-Count") != "2000" {
		t.Errorf("X-Total-Count %s, want 2000", hd.Get("X-Total-Count"))
	}
	for _, e := range journal {
		if len(e.Path) > 300 || len(e.Method) > 100 {
			t.Fatalf("a journal entry keeps a path of %d bytes and a method of %d", len(e.Path), len(e.Method))
		}
	}
}
