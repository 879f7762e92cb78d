package link

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestNothingIsSentOnceTheTargetHasStoppedAnswering: requests waiting
// for their place among those in flight when the target stops answering
// are not sent. A target that answers 500 to everything gets at most
// MaxSilent requests and those already in flight, however many checks
// were queued behind them, in JSON and in XML.
func TestNothingIsSentOnceTheTargetHasStoppedAnswering(t *testing.T) {
	for _, format := range []device.Format{device.JSON, device.XML} {
		t.Run(format.String(), func(t *testing.T) {
			var got atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				time.Sleep(2 * time.Millisecond)
				w.WriteHeader(http.StatusInternalServerError)
			}))
			defer srv.Close()
			c, err := client.New(client.Config{BaseURL: srv.URL, Signer: client.FormatSigner{}})
			if err != nil {
				t.Fatal(err)
			}
			const inFlight = 4
			l := New(Config{Client: c, Concurrency: inFlight})
			req := client.Request{Path: device.SendCommand.Path(), Format: format, Fields: []client.Field{{Key: device.FieldMAC, Value: settleMAC}}}
			var wg sync.WaitGroup
			var refused atomic.Int64
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, err := l.RoundTrip(context.Background(), req)
					if errors.Is(err, stopped{"sent"}) {
						refused.Add(1)
					}
				}()
			}
			wg.Wait()
			if n := got.Load(); n > MaxSilent+inFlight {
				t.Errorf("the target got %d requests after it stopped answering; at most %d (MaxSilent and those in flight)", n, MaxSilent+inFlight)
			}
			if !l.Stopped() || refused.Load() < 200-MaxSilent-inFlight {
				t.Errorf("stopped %v, %d requests not sent, want at least %d", l.Stopped(), refused.Load(), 200-MaxSilent-inFlight)
			}
		})
	}
}

// TestSilenceCountsInTheOrderSent: a late answer to a request sent before
// the target began failing does not start the count again; an answer to
// one sent after the first failure does.
func TestSilenceCountsInTheOrderSent(t *testing.T) {
	var s silence
	before := s.next() // sent while the target still answered, answered last
	var fails []int64
	for range 3 {
		fails = append(fails, s.next())
	}
	for i, o := range fails {
		if n := s.answered(o, false); n != int64(i+1) {
			t.Fatalf("failure %d: a row of %d", i+1, n)
		}
	}
	if n := s.answered(before, true); n != 3 {
		t.Errorf("a late answer to a request sent before the failures: a row of %d, want 3", n)
	}
	after := s.next()
	if n := s.answered(after, true); n != 0 {
		t.Errorf("an answer to a request sent after the failures: a row of %d, want 0", n)
	}
	// Failures answered out of the order they were sent: the row begins at
	// the first sent.
	a, b, c := s.next(), s.next(), s.next()
	s.answered(b, false)
	s.answered(a, false)
	if n := s.answered(c, true); n != 0 {
		t.Errorf("an answer to a request sent after both failures: a row of %d, want 0", n)
	}
}
