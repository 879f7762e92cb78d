package main

import (
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestServeLatitudes: gwsim serve takes each latitude of a faithful
// service its flag names, through real HTTP in both formats, and its
// banner names every one taken: changes shown at the admin reads only
// after --effect-delay's half and by its whole, the last --message-cap
// messages kept, Connection: close, answers over several lines, and its
// own code and field where no sentence states them.
func TestServeLatitudes(t *testing.T) {
	const delay = 600 * time.Millisecond
	url, stdout, _, _ := serve(t, "--effect-delay", delay.String(), "--message-cap", "2", "--connection-close", "--pretty", "--own-details")
	for _, want := range []string{"latitudes taken:", "--effect-delay", "300ms to 600ms", "the last 2 messages", "--connection-close", "--pretty", "--own-details"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the banner does not say %q:\n%s", want, stdout)
		}
	}
	tg, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC
	dimmer := tg.Devices["Light Dimmer"].SN
	// Every answer says Connection: close (the client reads it as
	// Response.Close), and no connection serves a second request.
	closes := &closeRecorder{base: http.DefaultTransport}
	c.HTTP.Transport = closes
	for i, f := range []device.Format{device.JSON, device.XML} {
		before := c.Device(tg.MAC, dimmer).State["dimming"]
		sent := time.Now()
		ok := c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", fmt.Sprint(61+i))))
		ok.OK(t, f)
		if strings.Count(strings.TrimSpace(string(ok.Body)), "\n") < 2 {
			t.Errorf("%s: want an answer over lines: %q", f, ok.Body)
		}
		for j := range 3 {
			msg := append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", fmt.Sprintf("cap.%d=%d", i, j)))
			c.Send(device.SendMessage, f, msg).OK(t, f)
		}
		if got := c.Device(tg.MAC, dimmer).State["dimming"]; time.Since(sent) < delay/2 && got != before {
			t.Errorf("%s: dimming %v shown %s after the answer, before half of --effect-delay", f, got, time.Since(sent))
		}
		time.Sleep(time.Until(sent.Add(delay + 300*time.Millisecond)))
		if got := c.Device(tg.MAC, dimmer).State["dimming"]; got != float64(61+i) {
			t.Errorf("%s: dimming %v once --effect-delay is over, want %d", f, got, 61+i)
		}
		if m := c.Messages(tg.MAC); len(m) != 2 || m[0].Value != fmt.Sprintf("cap.%d=1", i) || m[1].Value != fmt.Sprintf("cap.%d=2", i) {
			t.Errorf("%s: --message-cap 2 keeps %+v, want the last two sent", f, m)
		}
		get := c.Do(http.MethodGet, device.SendCommand.Path(), simtest.ContentType(f), nil)
		get.Fail(t, f, http.StatusMethodNotAllowed, "method_refused", "")
		ids := c.Command(dimmer, "Light Dimmer", simtest.S("dimming", "50"), simtest.S(device.FieldDeviceID, strings.Repeat("9", 32)))
		c.Send(device.SendCommand, f, ids).Fail(t, f, http.StatusBadRequest, "ids_disagree", device.FieldSN)
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", "0"))).
			Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
	}
	if closes.answers < 20 || closes.kept > 0 || closes.reused > 0 {
		t.Errorf("under --connection-close: %d answers, %d without Connection: close, %d on a connection used before",
			closes.answers, closes.kept, closes.reused)
	}
}

// closeRecorder counts the answers that do not say Connection: close, and
// the requests sent on a connection used before.
type closeRecorder struct {
	base                  http.RoundTripper
	answers, kept, reused int
}

func (r *closeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Reused {
			r.reused++
		}
	}}
	res, err := r.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err == nil {
		r.answers++
		if !res.Close {
			r.kept++
		}
	}
	return res, err
}

// TestLatitudeFlagsChecked: a latitude's flag out of range, or
// --effect-delay with the state kept elsewhere than in memory, stops
// gwsim serve with exit 2 and the flag's name.
func TestLatitudeFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--message-cap", "0"}, "--message-cap"},
		{[]string{"serve", "--effect-delay", "-1s"}, "--effect-delay"},
		{[]string{"serve", "--effect-delay", "2m"}, "--effect-delay"},
		{[]string{"serve", "--effect-delay", "50ms", "--state-file", t.TempDir() + "/state.db"}, "--effect-delay"},
	} {
		if code, _, stderr := run(tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("gwsim %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
