package proxy_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestProxyJudgesAtAnyPace: behind gwsim proxy too, a request is judged
// by when its connection shows it was sent: an app of the test's own
// (its own bodies, md5 and net/http) that sends a refused command again
// at once, on its keep-alive connection, fails the back-off judgement,
// and one that backs off past the floor passes; in both formats.
func TestProxyJudgesAtAnyPace(t *testing.T) {
	target, _ := fleet.Demo().Target()
	body := func(format string, level int) ([]byte, string) {
		ts := time.Now().UTC().Format("20060102150405")
		sum := md5.Sum([]byte(target.Key.Key + target.Key.Secret + ts))
		f := [][2]string{{"api_key", target.Key.Key}, {"timestamp", ts}, {"sign", hex.EncodeToString(sum[:])},
			{"myservice_id", target.AccountID}, {"mac", target.MAC}, {"sn", target.Devices["Light Dimmer"].SN},
			{"type", "Light Dimmer"}, {"dimming", fmt.Sprint(level)}}
		var b bytes.Buffer
		if format == "json" {
			b.WriteString(`{"control":{`)
			for i, kv := range f {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%q:%q", kv[0], kv[1])
			}
			b.WriteString("}}")
			return b.Bytes(), "application/json"
		}
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><xml><control>`)
		for _, kv := range f {
			fmt.Fprintf(&b, "<%s>%s</%s>", kv[0], kv[1], kv[0])
		}
		b.WriteString("</control></xml>")
		return b.Bytes(), "application/xml"
	}
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			up := simtest.Start(t, simulator.Options{Fleet: fleet.Demo(), AdminToken: "tok"})
			up.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1,"retry_after":"none"}`, nil)
			p := start(t, proxy.Config{Upstream: up.URL(), Fleet: fleet.Demo()})
			app := &http.Client{Timeout: 10 * time.Second}
			post := func(level int) int {
				b, ct := body(format, level)
				res, err := app.Post(p.URL()+"/v1/services/gateway/command", ct, bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res.StatusCode
			}
			// Faithful: the floor, and more, between the attempts.
			for i := range 2 {
				if s := post(10 + i); s != 503 {
					t.Fatalf("answer %d, want 503", s)
				}
				time.Sleep(clients.BackoffFloor + 50*time.Millisecond)
			}
			if f := failedOf(t, p.Clients().Report()); len(f) != 0 {
				t.Fatalf("a faithful app fails %v", f)
			}
			// Buggy: again at once, three times.
			for i := range 3 {
				post(20 + i)
			}
			c, _ := p.Clients().Report().Client(clients.Mask(target.Key.Key))
			if j := c.Judgement(clients.JudgeBackoff); j.Violations < 2 {
				t.Errorf("retries at once behind the proxy: %+v", j)
			}
		})
	}
}
