package main

import (
	"crypto/md5"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The faithful-double matrix (docs/latitudes.md): the independent
// implementation taking each freedom the preamble of docs/CONTRACT.md
// gives a faithful service, alone and all together, passes a whole run
// at --fail-on should, checks sent together (the default) and one at a
// time (--concurrency 1), through real HTTP and its observer.

// indepLatitudeRows are the rows of the matrix: each latitude alone, then
// all of them together. proof shows, through real HTTP, that the double
// really takes it, so that a row cannot pass by a latitude left out.
var indepLatitudeRows = []struct {
	name  string
	lat   indepLatitudes
	proof func(t *testing.T, api, reads string)
}{
	{"refuses replays", indepLatitudes{rejectReplays: true}, proveRefusesReplays},
	{"effects visible 20-120 ms after the answer", indepLatitudes{lag: true}, proveLag},
	{"keeps the last message", indepLatitudes{messageCap: 1}, proveCap(1)},
	{"keeps the last 3 messages", indepLatitudes{messageCap: 3}, proveCap(3)},
	{"keeps the last 20 messages", indepLatitudes{messageCap: 20}, proveCap(20)},
	{"Connection: close after every answer", indepLatitudes{connClose: true}, proveConnClose},
	{"HTTP/1.0 answers to HTTP/1.0 requests", indepLatitudes{http10: true}, proveHTTP10},
	{"pretty, reordered, escaped JSON and XML", indepLatitudes{pretty: true}, provePretty},
	{"its own wording and reason phrases", indepLatitudes{ownWording: true}, proveWording},
	{"codes and fields no text names", indepLatitudes{ownCodes: true}, proveOwnCodes},
	{"rate-limits with 429 and Retry-After", indepLatitudes{rateLimit: 300}, proveRateLimit},
	{"checks a bad request's faults in another order", indepLatitudes{faultOrder: true}, proveFaultOrder},
	{"all of them together", indepLatitudes{rejectReplays: true, lag: true, messageCap: 3, connClose: true, http10: true,
		pretty: true, ownWording: true, ownCodes: true, rateLimit: 300, faultOrder: true}, nil},
	// The same but codes and fields no text names, whose checks are
	// judged apart (which expectation a sentence states): this row shows
	// the rest holding together whatever those checks say.
	{"all of them together but codes and fields", indepLatitudes{rejectReplays: true, lag: true, messageCap: 1, connClose: true, http10: true,
		pretty: true, ownWording: true, rateLimit: 300, faultOrder: true}, nil},
}

func TestIndependentLatitudesPass(t *testing.T) {
	simtest.Heavy(t)
	for _, row := range indepLatitudeRows {
		row := row
		t.Run(row.name, func(t *testing.T) {
			for _, conc := range []string{"32", "1"} {
				conc := conc
				t.Run("concurrency "+conc, func(t *testing.T) {
					if row.proof != nil {
						// On a double of its own, so that the run starts
						// from the fleet as the file has it.
						proved := newIndepTarget(indepDeviation{})
						proved.lat = row.lat
						pa, pr := proved.serve(t)
						row.proof(t, pa, pr)
					}
					target := newIndepTarget(indepDeviation{})
					target.lat = row.lat
					api, reads := target.serve(t)
					r := runGwconformFor(t, 5*time.Minute, bins.gwconform, nil, "--target", api, "--observer", reads,
						"--fleet", indepFleetFile(t, indepKey, indepSecret), "--fail-on", "should", "--concurrency", conc)
					d := readIndepDoc(t, r.dir)
					var failed, inconclusive []string
					for _, res := range d.Results {
						switch res.Outcome {
						case "failed":
							failed = append(failed, res.Level+" "+res.ID+": "+strings.SplitN(res.Failure, "\n", 2)[0])
						case "inconclusive":
							inconclusive = append(inconclusive, res.ID+": "+res.Reason)
						}
					}
					if r.code != 0 || d.Verdict != "PASS" {
						t.Errorf("exit %d, verdict %s, %d failed:\n%s\n%s", r.code, d.Verdict, len(failed),
							strings.Join(first(failed, 30), "\n"), tail(r.stdout))
					}
					if len(inconclusive) > 0 {
						t.Logf("%d inconclusive:\n%s", len(inconclusive), strings.Join(first(inconclusive, 10), "\n"))
					}
				})
			}
		})
	}
}

// ---- proofs that the double takes each latitude ----

// indepSend sends one signed request of op in a format with the given
// extra fields and gives the answer's status and body.
func indepSend(t *testing.T, api, op, format string, ts time.Time, fields ...[2]string) (int, http.Header, string) {
	t.Helper()
	stamp := ts.UTC().Format("20060102150405")
	all := [][2]string{{"api_key", indepKey}, {"timestamp", stamp}, {"sign", indepSignOf(indepKey, indepSecret, stamp)},
		{"myservice_id", indepAccount}, {"mac", indepMAC}}
	// A field of the envelope given again replaces it.
	for _, f := range fields {
		replaced := false
		for i := range all {
			if all[i][0] == f[0] {
				all[i], replaced = f, true
			}
		}
		if !replaced {
			all = append(all, f)
		}
	}
	var body, ct string
	if format == "xml" {
		var b strings.Builder
		b.WriteString("<xml><control>")
		for _, f := range all {
			fmt.Fprintf(&b, "<%s>%s</%s>", f[0], f[1], f[0])
		}
		b.WriteString("</control></xml>")
		body, ct = b.String(), "application/xml"
	} else {
		parts := make([]string, len(all))
		for i, f := range all {
			parts[i] = fmt.Sprintf("%q:%q", f[0], f[1])
		}
		body, ct = `{"control":{`+strings.Join(parts, ",")+`}}`, "application/json"
	}
	path := map[string]string{"command": "/v1/services/gateway/command", "message": "/v1/services/gateway/message", "update_name": "/v1/services/device/update_name"}[op]
	resp, err := http.Post(api+path, ct, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func indepSignOf(key, secret, ts string) string {
	return fmt.Sprintf("%x", md5.Sum([]byte(key+secret+ts)))
}

func indepGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

const indepDimmer = "111111111111111111111111111ab106"

func dimmerCommand(v string) [][2]string {
	return [][2]string{{"sn", indepDimmer}, {"type", "Light Dimmer"}, {"dimming", v}}
}

func proveRefusesReplays(t *testing.T, api, _ string) {
	now := time.Now()
	if code, _, body := indepSend(t, api, "command", "json", now, dimmerCommand("41")...); code != 200 {
		t.Fatalf("the first request: %d %s", code, body)
	}
	// The same fields in the other format, the same second: a replay.
	if code, _, body := indepSend(t, api, "command", "xml", now, dimmerCommand("41")...); code != 401 || !strings.Contains(body, "replayed_request") {
		t.Fatalf("the same request again in XML: %d %s, want 401 replayed_request", code, body)
	}
	// Another request in the same second is not one.
	if code, _, body := indepSend(t, api, "command", "xml", now, dimmerCommand("42")...); code != 200 {
		t.Fatalf("another request in the same second: %d %s", code, body)
	}
}

func proveLag(t *testing.T, api, reads string) {
	if code, _, body := indepSend(t, api, "command", "json", time.Now(), dimmerCommand("43")...); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if got := indepGet(t, reads+"/_sim/gateways/"+indepMAC+"/devices/"+indepDimmer); strings.Contains(got, `"dimming":43`) {
		t.Fatalf("the change showed at once: %s", got)
	}
	time.Sleep(150 * time.Millisecond)
	if got := indepGet(t, reads+"/_sim/gateways/"+indepMAC+"/devices/"+indepDimmer); !strings.Contains(got, `"dimming":43`) {
		t.Fatalf("the change did not show after 150 ms: %s", got)
	}
}

func proveCap(n int) func(t *testing.T, api, reads string) {
	return func(t *testing.T, api, reads string) {
		for i := 0; i <= n; i++ {
			if code, _, body := indepSend(t, api, "message", "json", time.Now(), [2]string{"message_type", "proof"}, [2]string{"message_value", fmt.Sprintf("proof_%d=1", i)}); code != 200 {
				t.Fatalf("%d %s", code, body)
			}
		}
		got := indepGet(t, reads+"/_sim/gateways/"+indepMAC+"/messages")
		if strings.Count(got, "message_value") != n || strings.Contains(got, "proof_0=") || !strings.Contains(got, fmt.Sprintf("proof_%d=", n)) {
			t.Fatalf("after %d messages, the log keeps: %s", n+1, got)
		}
	}
}

func proveConnClose(t *testing.T, api, _ string) {
	resp, err := http.Get(api + "/v1/services/gateway/command")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !resp.Close {
		t.Fatal("the answer does not close the connection")
	}
}

func proveHTTP10(t *testing.T, api, _ string) {
	c, err := net.Dial("tcp", strings.TrimPrefix(api, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	body := `{"control":{}}`
	fmt.Fprintf(c, "POST /v1/services/gateway/command HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	b, _ := io.ReadAll(c)
	head, _, _ := strings.Cut(string(b), "\r\n")
	if !strings.HasPrefix(head, "HTTP/1.0 400 ") || strings.Contains(strings.ToLower(string(b)), "content-length") {
		t.Fatalf("answer to an HTTP/1.0 request:\n%s", b)
	}
}

func provePretty(t *testing.T, api, _ string) {
	for _, f := range []string{"json", "xml"} {
		_, _, body := indepSend(t, api, "command", f, time.Now(), [2]string{"sn", indepDimmer}, [2]string{"type", "Light Dimmer"}, [2]string{"dimming", "0"})
		if !strings.Contains(body, "\n    ") || strings.Contains(body, "invalid_field") || strings.Index(body, "status") < strings.Index(body, "code") {
			t.Fatalf("%s answer not laid out, escaped and ordered its own way:\n%s", f, body)
		}
	}
}

func proveWording(t *testing.T, api, _ string) {
	resp, err := http.Get(api + "/v1/services/gateway/command")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Status != "405 Only POST Here" || !strings.Contains(string(b), "Anfrage abgelehnt") {
		t.Fatalf("status %q, body %s", resp.Status, b)
	}
}

func proveOwnCodes(t *testing.T, api, _ string) {
	resp, err := http.Get(api + "/v1/services/gateway/command")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || !strings.Contains(string(b), "bad_method") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	_, _, body := indepSend(t, api, "command", "json", time.Now(), [2]string{"sn", "111111111111111111111111111ab104"}, [2]string{"type", "Thermostat"})
	if !strings.Contains(body, `"field":"fan"`) {
		t.Fatalf("a thermostat command without fields: %s", body)
	}
}

func proveRateLimit(t *testing.T, api, _ string) {
	// Bursts of one second's worth and more: one of them is refused with
	// 429 and Retry-After.
	for i := 0; i < 2*300+1; i++ {
		code, h, _ := indepSend(t, api, "command", "json", time.Now(), [2]string{"sn", indepDimmer}, [2]string{"type", "Light Dimmer"}, [2]string{"dimming", "0"})
		if code == 429 {
			if h.Get("Retry-After") != "1" {
				t.Fatalf("429 with Retry-After %q", h.Get("Retry-After"))
			}
			time.Sleep(time.Second) // the run starts with a fresh second
			return
		}
	}
	t.Fatal("601 requests, none refused with 429")
}

func proveFaultOrder(t *testing.T, api, _ string) {
	// A command with a mac of the wrong length and an unexpected field:
	// the unexpected field is answered.
	_, _, body := indepSend(t, api, "command", "json", time.Now(), [2]string{"mac", "0a1b"}, [2]string{"sn", indepDimmer},
		[2]string{"type", "Light Dimmer"}, [2]string{"bogus", "1"})
	if !strings.Contains(body, "unexpected_field") {
		t.Fatalf("%s", body)
	}
	// A thermostat command with two bad fields: the last is answered.
	_, _, body = indepSend(t, api, "command", "xml", time.Now(), [2]string{"sn", "111111111111111111111111111ab104"}, [2]string{"type", "Thermostat"},
		[2]string{"mode", "Sideways"}, [2]string{"fan", "Sideways"})
	if !strings.Contains(body, "<field>fan</field>") {
		t.Fatalf("%s", body)
	}
}
