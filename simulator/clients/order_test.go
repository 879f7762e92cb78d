package clients_test

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
)

// TestResendAfterRefusalAcrossGoroutines: the Recorder folds requests off
// their path, from several stripes; a request sent after another was
// answered is still judged after it. Pairs of goroutines on one api_key,
// through gwsim on loopback, in JSON and XML: one sends a refused command
// and, once it is answered, the other sends the same request again (its
// fields, timestamp and sign). Every resend is told, and nothing else is.
//
// A client's resends are compared with its last 64 refused requests
// (refusedRing, a documented bound of the report), and each refusal and
// its resend take two places there: pairs × rounds stays at 32, so that
// no refusal leaves the ring before its resend however the goroutines are
// scheduled. With 80 (8 × 10), a pair held back while the others ran five
// rounds lost its refusal, and 78 of 80 resends were told (seen once in
// ten runs beside other packages' tests).
func TestResendAfterRefusalAcrossGoroutines(t *testing.T) {
	_, c := start(t, simulator.Options{})
	const pairs, rounds = 8, 4
	now := time.Now()
	var wg sync.WaitGroup
	for p := range pairs {
		f := []device.Format{device.JSON, device.XML}[p%2]
		refused := make(chan string)
		wg.Add(2)
		go func() { // sends each refused command, waits for its answer
			defer wg.Done()
			defer close(refused)
			for i := range rounds {
				level := strconv.Itoa(101 + p*rounds + i) // out of range, each once
				fields := dimmer(c, now.Add(-10*time.Second), level)
				c.Send(device.SendCommand, f, fields).Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
				refused <- level
			}
		}()
		go func() { // resends each one, once it was answered
			defer wg.Done()
			for level := range refused {
				c.Send(device.SendCommand, f, dimmer(c, now.Add(-10*time.Second), level)).Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
			}
		}()
	}
	wg.Wait()
	a := clientA(t, report(t, c))
	if a.Requests != 2*pairs*rounds {
		t.Errorf("requests %d, want %d", a.Requests, 2*pairs*rounds)
	}
	if j := a.Judgement(clients.JudgeResend400); j.Violations != pairs*rounds {
		t.Errorf("resent refused requests %d, want %d: %+v", j.Violations, pairs*rounds, j)
	}
	if j := a.Judgement(clients.JudgeNoReplay); !j.Passed {
		t.Errorf("no request was sent twice, yet %+v", j)
	}
	for _, cov := range a.Coverage {
		if cov.Sent != pairs*rounds || cov.Succeeded != 0 {
			t.Errorf("coverage %+v, want %d sent and none succeeded", cov, pairs*rounds)
		}
	}
}

// command is a signed send command of key at ts, dimming to level, as
// its body.
func command(key, secret, ts, level string) []byte {
	return []byte(`{"control":{"api_key":"` + key + `","timestamp":"` + ts + `","sign":"` + auth.Sign(key, secret, ts) +
		`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"` + level + `"}}`)
}

// TestReportHoldsEveryRequestObserved: requests of one api_key observed
// from many goroutines while others read the report: each report holds
// at least every request whose Observe had returned before it was asked
// for, and the last one holds them all, each judged: every resend of a
// refused request is told, though another goroutine observed it than the
// refusal, and whichever fold (a reader's, a full stripe's) took them.
func TestReportHoldsEveryRequestObserved(t *testing.T) {
	r := clients.New(clients.Config{})
	const goroutines, each = 8, 300
	ts1 := auth.Timestamp(time.Now().Add(-10*time.Second), time.UTC)
	ts2 := ts1 // a resend is the same request: its timestamp and sign too
	refusedAnswer := []byte(`{"status":"error","error":{"code":"invalid_field","field":"dimming","message":"dimming must be 0 to 100"}}`)
	h := http.Header{"Content-Type": {"application/json"}}
	var observed atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := uint64(observed.Load())
				c, _ := r.Report().Client(clients.Mask("demo-key"))
				if c.Requests < before || c.Requests > 2*goroutines*each {
					t.Errorf("a report holds %d requests; %d had been observed before it was asked for", c.Requests, before)
					return
				}
			}
		}()
	}
	// Each round, every goroutine sends a refused command; once all are
	// answered, each resends another goroutine's (so that
	// between a refusal and its resend there are fewer than the 64
	// refusals a client's resends are compared with).
	observe := func(ts, level string) {
		r.Observe(clients.Exchange{Time: time.Now(), Path: device.SendCommand.Path(), ContentType: "application/json",
			Body: command("demo-key", "demo-secret", ts, level), Status: 400, Header: h, Answer: refusedAnswer})
		observed.Add(1)
	}
	for i := range each {
		level := func(g int) string { return strconv.Itoa(101 + (g%goroutines)*each + i) }
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() { observe(ts1, level(g)) })
		}
		wg.Wait()
		for g := range goroutines {
			wg.Go(func() { observe(ts2, level(g+1)) })
		}
		wg.Wait()
	}
	close(stop)
	readers.Wait()
	c, _ := r.Report().Client(clients.Mask("demo-key"))
	if c.Requests != 2*goroutines*each {
		t.Errorf("requests %d, want %d", c.Requests, 2*goroutines*each)
	}
	if j := c.Judgement(clients.JudgeResend400); j.Violations != goroutines*each {
		t.Errorf("resends told %d, want %d", j.Violations, goroutines*each)
	}
	if j := c.Judgement(clients.JudgeValid); j.Violations != 2*goroutines*each {
		t.Errorf("invalid requests %d, want %d", j.Violations, 2*goroutines*each)
	}
	if len(c.Errors) != 1 || c.Errors[0].Count != 2*goroutines*each {
		t.Errorf("errors %+v", c.Errors)
	}
}

// TestResetWhileObserving: a Reset while requests are observed forgets
// what came before it and never breaks what follows: once the observers
// stop, a Reset and then N requests make a report of exactly N.
func TestResetWhileObserving(t *testing.T) {
	r := clients.New(clients.Config{Trusted: true})
	ts := auth.Timestamp(time.Now(), time.UTC)
	ok := []byte(`{"status":"success"}`)
	h := http.Header{"Content-Type": {"application/json"}}
	observe := func(key string, level int) {
		r.Observe(clients.Exchange{Time: time.Now(), Path: device.SendCommand.Path(), ContentType: "application/json",
			Body: command(key, "s", ts, strconv.Itoa(level%101)), Status: 200, Header: h, Answer: ok})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				observe("key-"+strconv.Itoa(g%2), i)
			}
		}()
	}
	for range 20 {
		time.Sleep(2 * time.Millisecond)
		r.Reset()
		r.Report()
	}
	close(stop)
	wg.Wait()
	r.Reset()
	if rep := r.Report(); len(rep.Clients) != 0 || r.Apps() != 0 {
		t.Fatalf("after Reset: %d clients, %d apps", len(rep.Clients), r.Apps())
	}
	for i := range 100 {
		observe("key-0", i)
	}
	rep := r.Report()
	if len(rep.Clients) != 1 || rep.Clients[0].Requests != 100 || r.Apps() != 1 {
		t.Errorf("after Reset and 100 requests: %+v, %d apps", rep.Clients, r.Apps())
	}
}
