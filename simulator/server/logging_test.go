package server_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// logBuffer collects a server's log lines while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, "msg="+msg+" ") || strings.HasSuffix(line, "msg="+msg) {
			out = append(out, line)
		}
	}
	return out
}

// startLogged serves the test fleet on loopback with a text logger at
// level into a buffer.
func startLogged(t *testing.T, level slog.Level, o simulator.Options) (*simtest.Client, *logBuffer) {
	t.Helper()
	buf := &logBuffer{}
	o.Fleet = simtest.Fleet()
	o.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level}))
	return simtest.Start(t, o).Client, buf
}

// sendBoth sends a good command in each format and a bad one (wrong
// sign) in each format, and returns the signs sent.
func sendBoth(t *testing.T, c *simtest.Client) []string {
	var signs []string
	for _, format := range []device.Format{device.JSON, device.XML} {
		fields := c.Command(dimmerSN(), "Light Dimmer", simtest.S("dimming", "42"))
		for _, f := range fields {
			if f.Key == device.FieldSign {
				signs = append(signs, f.Val)
			}
		}
		c.Send(device.SendCommand, format, fields).OK(t, format)
		bad := simtest.Set(fields, simtest.S(device.FieldSign, strings.Repeat("0", 32)))
		c.Send(device.SendCommand, format, bad).Fail(t, format, http.StatusUnauthorized, device.CodeBadSignature, device.FieldSign)
	}
	return signs
}

// By default (info, no --access-log) a request writes no line of its
// own, and the journal still has it.
func TestDefaultLogHasNoRequestLines(t *testing.T) {
	c, buf := startLogged(t, slog.LevelInfo, simulator.Options{})
	sendBoth(t, c)
	if got := buf.lines("request"); len(got) != 0 {
		t.Errorf("default logging wrote request lines:\n%s", strings.Join(got, "\n"))
	}
	var j []struct {
		Status int `json:"status"`
	}
	c.AdminJSON("GET", "/_sim/journal", "", &j)
	if len(j) != 4 || j[0].Status != 200 || j[1].Status != 401 {
		t.Errorf("journal %+v, want the 4 requests", j)
	}
}

// With the access log, each request has one line at info naming its
// format, status and error, and no line holds a sign or a secret.
func TestAccessLog(t *testing.T) {
	c, buf := startLogged(t, slog.LevelInfo, simulator.Options{AccessLog: true})
	signs := sendBoth(t, c)
	got := buf.lines("request")
	if len(got) != 4 {
		t.Fatalf("%d request lines, want 4:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, want := range []string{"status=200 .*format=json", "status=401 .*format=json", "status=200 .*format=xml", "status=401 .*format=xml"} {
		parts := strings.SplitN(want, " .*", 2)
		if !strings.Contains(got[i], "level=INFO") || !strings.Contains(got[i], parts[0]) || !strings.Contains(got[i], parts[1]) {
			t.Errorf("line %d: want %s: %s", i, want, got[i])
		}
	}
	if !strings.Contains(got[1], "error_code=bad_signature") || !strings.Contains(got[1], "sn="+dimmerSN()) {
		t.Errorf("the failed request's line lacks its code or sn: %s", got[1])
	}
	all := strings.Join(got, "\n")
	for _, secret := range append(signs, simtest.SecretA, auth.Sign(simtest.KeyA, simtest.SecretA, "x")[:8]) {
		if strings.Contains(all, secret) {
			t.Errorf("a log line holds a sign or secret %q", secret)
		}
	}
}

// At debug, request lines are written at debug without --access-log.
func TestDebugLogHasRequestLines(t *testing.T) {
	c, buf := startLogged(t, slog.LevelDebug, simulator.Options{})
	sendBoth(t, c)
	got := buf.lines("request")
	if len(got) != 4 || !strings.Contains(got[0], "level=DEBUG") {
		t.Errorf("want 4 debug request lines, got:\n%s", strings.Join(got, "\n"))
	}
}

// The summary line counts the requests of its interval by class and is
// not written for an idle interval.
func TestSummaryLine(t *testing.T) {
	c, buf := startLogged(t, slog.LevelInfo, simulator.Options{SummaryEvery: 50 * time.Millisecond})
	time.Sleep(150 * time.Millisecond)
	if got := buf.lines("summary"); len(got) != 0 {
		t.Errorf("idle intervals wrote summaries: %v", got)
	}
	sendBoth(t, c)
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for time.Now().Before(deadline) {
		if got = buf.lines("summary"); len(got) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) == 0 {
		t.Fatal("no summary line")
	}
	// The four requests may fall into two intervals; the last line's total
	// has them all once they are all in.
	time.Sleep(120 * time.Millisecond)
	got = buf.lines("summary")
	last := got[len(got)-1]
	if !strings.Contains(last, "total=4") || !strings.Contains(last, "level=INFO") {
		t.Errorf("summary lacks total=4: %s", last)
	}
	var ok, client int
	for _, l := range got {
		ok += field(l, "ok")
		client += field(l, "client_errors")
	}
	if ok != 2 || client != 2 {
		t.Errorf("summaries count %d ok and %d client errors, want 2 and 2:\n%s", ok, client, strings.Join(got, "\n"))
	}
	if n := len(buf.lines("request")); n != 0 {
		t.Errorf("%d request lines by default", n)
	}
}

func dimmerSN() string {
	t, _ := device.LookupType("Light Dimmer")
	return simtest.SN('a', int(t.ID))
}

func field(line, key string) int {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			n := 0
			for _, ch := range v {
				n = n*10 + int(ch-'0')
			}
			return n
		}
	}
	return 0
}
