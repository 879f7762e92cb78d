package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	simtest "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
	"github.com/gwdmi/gwtools/simulator/store"
)

// TestPrettyAnswers: with Latitudes.Pretty every operation's answer,
// success or error, is laid out over indented lines in its format, and
// reads as the same answer.
func TestPrettyAnswers(t *testing.T) {
	_, c := testServer(t, nil, Config{Latitudes: Latitudes{Pretty: true}}, nil)
	for _, f := range []device.Format{device.JSON, device.XML} {
		ok := c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "41"))
		ok.OK(t, f)
		bad := c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "0"))
		bad.Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
		for _, r := range []*simtest.Response{ok, bad} {
			if lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n"); len(lines) < 3 || !strings.HasPrefix(lines[1], " ") && !strings.HasPrefix(lines[2], " ") {
				t.Errorf("%s answer not laid out over indented lines:\n%s", f, r.Body)
			}
		}
	}
	_, plain := testServer(t, nil, Config{}, nil)
	if r := plain.Send(device.SendCommand, device.JSON, dimmer(plain, plain.Envelope(), "41")); string(r.Body) != `{"status":"success"}` {
		t.Errorf("without Pretty: %s", r.Body)
	}
}

// TestOwnDetails: with Latitudes.OwnDetails the status codes and every
// detail a sentence states stay (an invalid dimming names its field,
// CONTRACT 4's example; the codes CONTRACT names), and the rest is
// gwsim's own: the wording, the code of a 405 and of device_id and sn
// differing, no field for a missing one or for credentials, the
// thermostat point named as the state names it.
func TestOwnDetails(t *testing.T) {
	_, c := testServer(t, nil, Config{Latitudes: Latitudes{OwnDetails: true}}, nil)
	_, plain := testServer(t, nil, Config{}, nil)
	for _, f := range []device.Format{device.JSON, device.XML} {
		r := c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "0"))
		r.Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
		if p := plain.Send(device.SendCommand, f, dimmer(plain, plain.Envelope(), "0")); p.Message == r.Message {
			t.Errorf("%s: the wording is gwsim's usual one: %q", f, r.Message)
		}
		r = c.Do(http.MethodGet, device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, dimmer(c, c.Envelope(), "41")))
		r.Fail(t, f, http.StatusMethodNotAllowed, ownMethodCode, "")
		if r.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s: 405 without Allow: POST: %v", f, r.Header)
		}
		ids := append(dimmer(c, c.Envelope(), "41"), simtest.S(device.FieldDeviceID, simtest.SN('b', 5)))
		c.Send(device.SendCommand, f, ids).Fail(t, f, http.StatusBadRequest, ownIDsCode, device.FieldSN)
		missing := append(c.Envelope(), simtest.S("sn", simtest.SN('a', 5)), simtest.S("type", "Light Dimmer"))
		c.Send(device.SendCommand, f, missing).Fail(t, f, http.StatusBadRequest, device.CodeMissingField, "")
		point := append(c.Envelope(), simtest.S("sn", simtest.SN('a', 3)), simtest.S("type", "Thermostat"), simtest.S("cooling_point", "500"))
		if f == device.JSON {
			point[len(point)-1].Key = "cooling point"
		}
		c.Send(device.SendCommand, f, point).Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "cooling_point")
		env := c.Envelope()
		env[2].Val = strings.Repeat("0", 32)
		c.Send(device.SendCommand, f, dimmer(c, env, "41")).Fail(t, f, http.StatusUnauthorized, device.CodeBadSignature, "")
	}
}

// TestConnectionClose: with ConnectionClose every answer says
// Connection: close and the server closes the connection after it; a
// second request on it finds it closed.
func TestConnectionClose(t *testing.T) {
	f := simtest.Fleet()
	s := New(Config{Store: store.New(f, 0), Auth: f.Authenticator(), Logger: slog.New(slog.DiscardHandler), ConnectionClose: true})
	if err := s.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := simtest.NewClient(t, s.URL())
	for _, fm := range []device.Format{device.JSON, device.XML} {
		conn, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		body := simtest.Body(fm, dimmer(c, c.Envelope(), "42"))
		req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			device.SendCommand.Path(), s.Addr(), simtest.ContentType(fm), len(body), body)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, req+req); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !res.Close || !bytes.Contains(b, []byte("success")) {
			t.Errorf("%s: %d, Connection: %q, %s; want 200 success and Connection: close", fm, res.StatusCode, res.Header.Get("Connection"), b)
		}
		if rest, _ := io.ReadAll(br); len(rest) != 0 {
			t.Errorf("%s: the connection answered a second request: %q", fm, rest)
		}
		conn.Close()
	}
}

// TestEffectDelay: behind a LaggingState every answer is as ever, and a
// change shows at the admin reads between half the delay and the delay
// after it, in the order the changes were made; a reset is at once.
func TestEffectDelay(t *testing.T) {
	const delay = 600 * time.Millisecond
	f := simtest.Fleet()
	truth := store.New(f, 0)
	lag := NewLaggingState(MemoryState(truth), store.New(f, 0), delay)
	defer lag.Stop()
	_, c := testServer(t, f, Config{Backend: Backend{State: lag}}, nil)
	sn := simtest.SN('a', 5)
	for i, fm := range []device.Format{device.JSON, device.XML} {
		before := c.Device(simtest.MACA, sn).State["dimming"]
		msgs := len(c.Messages(simtest.MACA))
		sent := time.Now()
		c.Send(device.SendCommand, fm, dimmer(c, c.Envelope(), fmt.Sprint(60+i))).OK(t, fm)
		c.Send(device.SendCommand, fm, dimmer(c, c.Envelope(), fmt.Sprint(70+i))).OK(t, fm)
		msg := append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", fmt.Sprintf("lag=%d", i)))
		c.Send(device.SendMessage, fm, msg).OK(t, fm)
		// An answer is as ever, even one the state refuses.
		c.Send(device.SendCommand, fm, append(c.Envelope(), simtest.S("sn", simtest.SN('f', 9)), simtest.S("type", "Light Dimmer"), simtest.S("dimming", "5"))).
			Fail(t, fm, http.StatusNotFound, device.CodeDeviceNotFound, device.FieldSN)
		if got := c.Device(simtest.MACA, sn).State["dimming"]; time.Since(sent) < delay/2 && got != before {
			t.Errorf("%s: dimming %v shown %s after the answer, before half the delay", fm, got, time.Since(sent))
		}
		if got := len(c.Messages(simtest.MACA)); time.Since(sent) < delay/2 && got != msgs {
			t.Errorf("%s: the message shown %s after the answer, before half the delay", fm, time.Since(sent))
		}
		time.Sleep(time.Until(sent.Add(delay + 200*time.Millisecond)))
		if got := c.Device(simtest.MACA, sn).State["dimming"]; got != float64(70+i) {
			t.Errorf("%s: dimming %v after the delay, want %d (the later command last)", fm, got, 70+i)
		}
		if m := c.Messages(simtest.MACA); len(m) != msgs+1 || m[len(m)-1].Value != fmt.Sprintf("lag=%d", i) {
			t.Errorf("%s: messages after the delay: %+v", fm, m)
		}
	}
	c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), "80")).OK(t, device.JSON)
	c.Reset()
	time.Sleep(delay + 100*time.Millisecond)
	if got, want := c.Device(simtest.MACA, sn).State["dimming"], truthDimming(truth, sn); fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(got) == "80" {
		t.Errorf("after a reset the change made before it showed: dimming %v, the state's %v", got, want)
	}
}

func truthDimming(s *store.Store, sn string) any {
	d, _ := s.Device(simtest.MACA, sn)
	return d.State["dimming"]
}

// TestHTTP10AnsweredInHTTP10: an HTTP/1.0 request is answered in HTTP/1.0
// (a latitude CONTRACT's preamble grants), success and error alike, in
// both formats.
func TestHTTP10AnsweredInHTTP10(t *testing.T) {
	f := simtest.Fleet()
	s := New(Config{Store: store.New(f, 0), Auth: f.Authenticator(), Logger: slog.New(slog.DiscardHandler)})
	if err := s.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := simtest.NewClient(t, s.URL())
	for _, fm := range []device.Format{device.JSON, device.XML} {
		for _, dimming := range []string{"43", "0"} {
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			body := simtest.Body(fm, dimmer(c, c.Envelope(), dimming))
			fmt.Fprintf(conn, "POST %s HTTP/1.0\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
				device.SendCommand.Path(), s.Addr(), simtest.ContentType(fm), len(body), body)
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			want := map[string]string{"43": "HTTP/1.0 200 ", "0": "HTTP/1.0 400 "}[dimming]
			if err != nil || !strings.HasPrefix(line, want) {
				t.Errorf("%s, dimming %s: status line %q (%v), want %q…", fm, dimming, line, err, want)
			}
		}
	}
}
