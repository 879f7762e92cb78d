package clients

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// pending is how many records each stripe holds now.
func (r *Recorder) pending() []int {
	out := make([]int, len(r.stripes))
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		out[i] = len(st.recs)
		st.mu.Unlock()
	}
	return out
}

// TestStripesAreBoundedAndDropNothing: while the fold cannot run (a
// reader holds the reports for long), the stripes take requests up to
// mostPending each and then make the requests wait, rather than grow
// without bound or drop any; once the fold runs, the report holds every
// request, each in order (every resend of a refused command told).
func TestStripesAreBoundedAndDropNothing(t *testing.T) {
	r := New(Config{})
	const goroutines = 4
	each := len(r.stripes) * mostPending / goroutines // together, more than the stripes hold
	once := auth.Timestamp(time.Now().Add(-10*time.Second), time.UTC)
	ts := [2]string{once, once} // a resend is the same request: its timestamp and sign too
	refused := []byte(`{"status":"error","error":{"code":"invalid_field","field":"dimming","message":"dimming must be 0 to 100"}}`)
	h := http.Header{"Content-Type": {"application/json"}}
	r.mu.Lock() // as a long fold or report would
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each / 2 {
				level := strconv.Itoa(101 + g*each + i)
				key := "k" + strconv.Itoa(g) + "-demo-key" // its own refusals only in its ring
				for _, ts := range ts {                    // refused, then resent
					body := `{"control":{"api_key":"` + key + `","timestamp":"` + ts + `","sign":"` + auth.Sign(key, "secret", ts) +
						`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"` + level + `"}}`
					r.Observe(Exchange{Time: time.Now(), Path: device.SendCommand.Path(), ContentType: "application/json",
						Body: []byte(body), Status: 400, Header: h, Answer: refused})
				}
			}
		})
	}
	// Wait until the stripes stop growing: every goroutine waits.
	var last, steady int
	for steady < 20 {
		time.Sleep(5 * time.Millisecond)
		total := 0
		for i, n := range r.pending() {
			if n > mostPending+goroutines {
				t.Errorf("stripe %d holds %d records, beyond %d", i, n, mostPending+goroutines)
			}
			total += n
		}
		if total == last {
			steady++
		} else {
			steady, last = 0, total
		}
	}
	if last >= goroutines*each {
		t.Errorf("the stripes took all %d requests while the fold could not run", last)
	}
	r.mu.Unlock()
	wg.Wait()
	rep := r.Report()
	want := uint64(each / 2)
	for g := range goroutines {
		c, ok := rep.Client(Mask("k" + strconv.Itoa(g) + "-demo-key"))
		if !ok || c.Requests != 2*want {
			t.Errorf("%s: requests %d, want %d", c.Client, c.Requests, 2*want)
		}
		if j := c.Judgement(JudgeResend400); j.Violations != want {
			t.Errorf("resends told %d, want %d", j.Violations, want)
		}
	}
	for i, n := range r.pending() {
		if n != 0 {
			t.Errorf("stripe %d still holds %d records after the report", i, n)
		}
	}
}

// TestSkewIsAgainstArrival: on the wall clock (Config.Now unset) a
// timestamp is compared with the time its request arrived (Exchange.Time),
// not with when Observe ran; report.go: "Skew is its timestamps less the
// clock of gwsim at arrival". A request that arrived an hour ago, stamped
// with its arrival second, has no skew; with a clock set, Observe reads it.
func TestSkewIsAgainstArrival(t *testing.T) {
	arrived := time.Now().Add(-time.Hour).Truncate(time.Second)
	ts := auth.Timestamp(arrived, time.UTC)
	body := []byte(`{"control":{"api_key":"demo-key","timestamp":"` + ts + `","sign":"` + auth.Sign("demo-key", "demo-secret", ts) +
		`","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","sn":"0123456789abcdef0123456789abcd06","type":"Light Dimmer","dimming":"55"}}`)
	ex := Exchange{Time: arrived, Path: device.SendCommand.Path(), ContentType: "application/json", Body: body, Status: http.StatusOK,
		Header: http.Header{"Content-Type": {"application/json"}}, Answer: []byte(`{"status":"success"}`)}
	for _, tc := range []struct {
		name string
		now  func() time.Time
		want int64
	}{
		{"wall clock", nil, 0},
		{"clock set", func() time.Time { return arrived.Add(time.Hour) }, -3599}, // a timestamp names a whole second
	} {
		r := New(Config{Now: tc.now})
		r.Observe(ex)
		rep := r.Report()
		if len(rep.Clients) != 1 || rep.Clients[0].Skew == nil {
			t.Fatalf("%s: report %+v, want one client with its skew", tc.name, rep)
		}
		if got := rep.Clients[0].Skew.LastSeconds; got != tc.want {
			t.Errorf("%s: skew %+d s, want %+d s", tc.name, got, tc.want)
		}
	}
}

// TestRecordSize keeps a record on two cache lines: the fold reads the
// records another processor wrote, so their size is what moves between
// the caches on every request (records.go).
func TestRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(record{}); n > 128 {
		t.Fatalf("a record is %d bytes, more than two cache lines (128)", n)
	}
}
