package clients_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Judgements at any pace. The apps here are the tests' own (see app in
// faithful_test.go); the buggy ones hammer at 100 ms, faster than any
// grace, on one connection, on a new connection each time, and without
// reading their answers; the faithful ones wait out Retry-After or back
// off exponentially with jitter, and N of them send together.

// unreachable is the faults body that makes dimmer a5 of MACA answer 504
// device_unreachable, with the given Retry-After ("" for the default).
func unreachable(retryAfter string) string {
	ra := ""
	if retryAfter != "" {
		ra = `,"retry_after":"` + retryAfter + `"`
	}
	return `{"unreachable_devices":[{"mac":"` + simtest.MACA + `","sn":"` + simtest.SN('a', 5) + `"}]` + ra + `}`
}

// hammer sends n commands to dimmer a5, one every 100 ms whatever the
// answers said, each signed when sent; read false: the answers are never
// read (each request on its own connection, left open until the end).
func hammer(t *testing.T, a *app, n int, read bool) []int {
	t.Helper()
	var statuses []int
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := range n {
		body := a.body(timestamp(time.Now()), simtest.MACA, dimming(simtest.SN('a', 5), strconv.Itoa(10+i))...)
		if read {
			statuses = append(statuses, a.post(pathCommand, body).status)
		} else {
			c := dial(t, a.base)
			open = append(open, c)
			if _, err := c.Write(rawRequest(a, pathCommand, body)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return statuses
}

func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rawRequest is body as an HTTP/1.1 POST in the app's format.
func rawRequest(a *app, path string, body []byte) []byte {
	ct := "application/json"
	if a.format == "xml" {
		ct = "application/xml; charset=utf-8"
	}
	return fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: gwsim\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", path, ct, len(body), body)
}

// failsAtLeast fails the test unless judgement id failed at least n
// times for account A's app, its latest breach saying each of texts.
func failsAtLeast(t *testing.T, c *simtest.Client, id string, n uint64, texts ...string) {
	t.Helper()
	j := clientA(t, report(t, c)).Judgement(id)
	if j.Violations < n {
		t.Fatalf("%s: %d violations, want at least %d (%s)", id, j.Violations, n, j.Latest)
	}
	for _, s := range texts {
		if !strings.Contains(j.Latest, s) {
			t.Errorf("%s: %q does not say %q", id, j.Latest, s)
		}
	}
}

// TestHammeringIsJudgedAtAnyPace: an app that sends every 100 ms whatever
// its answers said fails the judgement its answers called for, in both
// formats: on one connection, on a new connection each time, and without
// reading its answers at all; against a Retry-After (an unreachable
// device, a rate limit) and against the back-off floor (no Retry-After).
func TestHammeringIsJudgedAtAnyPace(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format+"/retry-after", func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", unreachable(""), nil)
			for _, s := range hammer(t, newApp(t, sim.URL(), format), 6, true) {
				if s != http.StatusGatewayTimeout {
					t.Fatalf("answer %d, want 504", s)
				}
			}
			// Each request after the first came 100 ms after a 504 with
			// Retry-After: 1 had reached the app.
			failsAtLeast(t, sim.Client, clients.JudgeRetryAfter, 5, "504 device_unreachable", "before its Retry-After ended")
		})
		t.Run(format+"/no-retry-after/new-connections", func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", unreachable("none"), nil)
			a := newApp(t, sim.URL(), format)
			a.http = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
			hammer(t, a, 5, true)
			failsAtLeast(t, sim.Client, clients.JudgeBackoff, 4, "504 device_unreachable answer without Retry-After", "back-off floor")
		})
		t.Run(format+"/rate-limit/unread", func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok", RateLimit: 4})
			hammer(t, newApp(t, sim.URL(), format), 15, false)
			r := clientA(t, report(t, sim.Client))
			if r.Requests != 15 {
				t.Fatalf("%d requests judged, want 15", r.Requests)
			}
			// At 10/s against 4/s, at least 5 are refused 429; every
			// request sent after the first 429 reached the app, before
			// its Retry-After ended, is early.
			failsAtLeast(t, sim.Client, clients.JudgeRetryAfter, 4, "429", "before its Retry-After ended")
		})
	}
	t.Run("retry at once on a new connection", func(t *testing.T) {
		t.Parallel()
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1,"retry_after":"none"}`, nil)
		a := newApp(t, sim.URL(), "json")
		a.http = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		for i := range 3 {
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, dimming(simtest.SN('a', 5), strconv.Itoa(20+i))...)), 503)
		}
		failsAtLeast(t, sim.Client, clients.JudgeBackoff, 2, "503 injected_fault answer without Retry-After")
	})
}

// TestFaithfulBackoffPassesAtAnyPace: apps that wait as they are told
// pass, in both formats: one that sleeps out each Retry-After (plus
// jitter) and one that backs off exponentially with jitter from the
// floor when no Retry-After came, both reading every answer.
func TestFaithfulBackoffPassesAtAnyPace(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			c := sim.Client
			a := newApp(t, sim.URL(), format)
			send := func(level int) answer {
				return a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, dimming(simtest.SN('a', 5), strconv.Itoa(level))...))
			}
			// No Retry-After: 500 ms, 1 s, … each plus up to 100 ms of jitter.
			c.AdminJSON(http.MethodPut, "/_sim/faults", unreachable("none"), nil)
			for i := range 3 {
				a.want(send(30+i), http.StatusGatewayTimeout)
				time.Sleep(clients.BackoffFloor<<i + rand.N(100*time.Millisecond))
			}
			// With Retry-After: its seconds plus jitter.
			c.AdminJSON(http.MethodPut, "/_sim/faults", unreachable("1"), nil)
			for i := range 2 {
				ans := send(40 + i)
				a.want(ans, http.StatusGatewayTimeout)
				time.Sleep(ans.retryAfter + rand.N(100*time.Millisecond))
			}
			c.AdminJSON(http.MethodPut, "/_sim/faults", `{}`, nil)
			a.want(send(50), 200)
			cleanReport(t, c, 6)
		})
	}
}

// together sends one request per connection, all sent together: every
// request's first line is written first, on every connection, and the
// rest once all are written, one connection 3 ms after the other (a slow
// link), so that no answer can leave before every request was on its
// way, while gwsim reads each request whole after the one before it was
// answered. It returns the answers, read once all are sent.
func together(t *testing.T, base string, reqs [][]byte) []*http.Response {
	t.Helper()
	conns := make([]net.Conn, len(reqs))
	for i := range reqs {
		conns[i] = dial(t, base)
		t.Cleanup(func() { conns[i].Close() })
		if _, err := conns[i].Write(reqs[i][:16]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the first line is read on every connection
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range reqs {
		wg.Go(func() {
			<-start
			time.Sleep(time.Duration(i) * 3 * time.Millisecond)
			conns[i].Write(reqs[i][16:])
		})
	}
	close(start)
	wg.Wait()
	out := make([]*http.Response, len(reqs))
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		out[i] = res
	}
	return out
}

// TestRequestsSentTogetherAreNoRetries: 8 threads of one app send the
// same command at one instant, retries off, under each fault and under a
// rate limit, three rounds, each round once the longest wait the last
// round's answers asked for has passed: judged clean, in both formats.
// Sent together, no request is another's retry, whatever their fields,
// however long gwsim takes to answer each (the device's requests wait on
// each other).
func TestRequestsSentTogetherAreNoRetries(t *testing.T) {
	const threads, rounds = 8, 3
	for _, tc := range []struct {
		name, faults string
		rateLimit    int
		want         int
	}{
		{"unreachable with Retry-After", unreachable(""), 0, http.StatusGatewayTimeout},
		{"unreachable without Retry-After", unreachable("none"), 0, http.StatusGatewayTimeout},
		{"injected errors", `{"error_rate":1}`, 0, http.StatusServiceUnavailable},
		{"slow and failing", `{"error_rate":1,"retry_after":"none","latency":"30ms"}`, 0, http.StatusServiceUnavailable},
		{"rate limit", "", 3, http.StatusTooManyRequests},
	} {
		for _, format := range []string{"json", "xml"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				sim := simtest.Start(t, simulator.Options{AdminToken: "tok", RateLimit: tc.rateLimit})
				if tc.faults != "" {
					sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", tc.faults, nil)
				}
				a := newApp(t, sim.URL(), format)
				refused := 0
				for round := range rounds {
					ts := timestamp(time.Now())
					reqs := make([][]byte, threads)
					for i := range reqs {
						level := "60" // the same command from every thread
						if tc.rateLimit > 0 {
							// Those the limit lets through are accepted: the
							// same bytes twice would be a replay.
							level = strconv.Itoa(61 + round*threads + i)
						}
						reqs[i] = rawRequest(a, pathCommand, a.body(ts, simtest.MACA, dimming(simtest.SN('a', 5), level)...))
					}
					wait := clients.BackoffFloor
					for _, res := range together(t, sim.URL(), reqs) {
						if res.StatusCode == tc.want {
							refused++
						} else if res.StatusCode != 200 {
							t.Fatalf("answer %d, want %d or 200", res.StatusCode, tc.want)
						}
						if v := res.Header.Get("Retry-After"); v != "" {
							secs, _ := strconv.Atoi(v)
							wait = max(wait, time.Duration(secs)*time.Second)
						}
					}
					if round < rounds-1 {
						time.Sleep(wait + rand.N(50*time.Millisecond))
					}
				}
				if refused == 0 {
					t.Fatalf("no request was answered %d: the fault was not exercised", tc.want)
				}
				cleanReport(t, sim.Client, threads*rounds)
			})
		}
	}
}

// TestRetryAfterAsAnHTTPDate: gwsim sends Retry-After as an HTTP date
// when asked (retry_after_date), the moment the wait ends; an app that
// reads it and waits passes, one that sends again at once fails
// waits_out_retry_after, in both formats.
func TestRetryAfterAsAnHTTPDate(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1,"retry_after":"2","retry_after_date":true}`, nil)
			a := newApp(t, sim.URL(), format)
			body := a.body(timestamp(time.Now()), simtest.MACA, dimming(simtest.SN('a', 5), "44")...)
			req, _ := http.NewRequest(http.MethodPost, sim.URL()+pathCommand, strings.NewReader(string(body)))
			req.Header.Set("Content-Type", map[string]string{"json": "application/json", "xml": "application/xml"}[format])
			sent := time.Now()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			until, err := http.ParseTime(res.Header.Get("Retry-After"))
			if res.StatusCode != 503 || err != nil {
				t.Fatalf("answer %d, Retry-After %q (%v): want 503 and an HTTP date", res.StatusCode, res.Header.Get("Retry-After"), err)
			}
			if wait := until.Sub(sent); wait < 2*time.Second || wait > 4*time.Second {
				t.Errorf("Retry-After %s is %s after the request, want 2 to 3 s", res.Header.Get("Retry-After"), wait)
			}
			// Faithful: waits until the date, then sends again.
			sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"retry_after":"2","retry_after_date":true}`, nil)
			time.Sleep(time.Until(until))
			a.want(a.post(pathCommand, body), 200)
			cleanReport(t, sim.Client, 2)
			// Buggy: at once after a dated Retry-After.
			sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1,"retry_after":"2","retry_after_date":true}`, nil)
			for _, level := range []string{"45", "46"} {
				a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA, dimming(simtest.SN('a', 5), level)...)), 503)
			}
			failsAtLeast(t, sim.Client, clients.JudgeRetryAfter, 1, "503 injected_fault", "before its Retry-After ended")
		})
	}
}
