package link

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// TestSentIsWorkedOutOnce: what a request touches and sends, as the link
// works it out before sending it: its chain (the first field named sn
// exactly, else the tested gateway's messages for a message), the devices
// it names (a field sn in any letter case), whether a body written by
// hand may name any, and the fields the target reads, by canonical name,
// those of a body written by hand first (unknown when it cannot be read,
// or the path is no operation's).
func TestSentIsWorkedOutOnce(t *testing.T) {
	const tested = "A4-C1-38-F0-E2-B1"
	sn := catalog.HexOnly(settleSN)
	l := New(Config{Observer: observer.Reader{Base: "http://observer.invalid"}, Settle: time.Second, Tested: func() string { return tested }})
	for _, tc := range []struct {
		name      string
		req       client.Request
		key       string
		devices   []string
		anyDevice bool
		fields    map[string]string
		known     bool
	}{
		{"a command", client.Request{Path: device.SendCommand.Path(), Fields: []client.Field{
			{Key: device.FieldMAC, Value: settleMAC}, {Key: device.FieldSN, Value: settleSN}, {Key: device.FieldType, Value: "Thermostat"},
			{Key: "heating point", Value: 21}, {Key: "heating_point", Value: 22}}},
			sn, []string{sn}, false,
			map[string]string{device.FieldMAC: settleMAC, device.FieldSN: settleSN, device.FieldType: "Thermostat", "heating_point": "21"}, true},
		{"a message", client.Request{Path: device.SendMessage.Path(), Fields: []client.Field{
			{Key: device.FieldMAC, Value: settleMAC}, {Key: device.FieldMessageType, Value: "message"}}},
			LogKey(tested), nil, false, map[string]string{device.FieldMAC: settleMAC, device.FieldMessageType: "message"}, true},
		{"sn in capitals", client.Request{Path: device.UpdateName.Path(), Fields: []client.Field{{Key: " SN", Value: settleSN}}},
			"", []string{sn}, false, map[string]string{" SN": settleSN}, true},
		{"a message's body written by hand", client.Request{Path: device.SendMessage.Path(), Format: device.JSON,
			RawBody: []byte(`{"control":{"mac":"A4C138F0E2B1","message_value":"a=1"}}`),
			Fields:  []client.Field{{Key: device.FieldMAC, Value: settleMAC}, {Key: device.FieldMessageType, Value: "message"}}},
			LogKey(tested), nil, true,
			map[string]string{device.FieldMAC: "A4C138F0E2B1", device.FieldMessageValue: "a=1", device.FieldMessageType: "message"}, true},
		{"a body that cannot be read", client.Request{Path: device.SendCommand.Path(), Format: device.JSON, RawBody: []byte(`{"control":`),
			Fields: []client.Field{{Key: device.FieldSN, Value: settleSN}}},
			sn, []string{sn}, false, nil, false},
		{"another path", client.Request{Path: "/v2/send_message", Fields: []client.Field{{Key: device.FieldMAC, Value: settleMAC}}},
			"", nil, false, nil, false},
	} {
		s := l.sentOf(tc.req, true)
		if s.key != tc.key || !reflect.DeepEqual(s.devices, tc.devices) || s.anyDevice != tc.anyDevice {
			t.Errorf("%s: key %q, devices %v, any device %v; want %q, %v, %v", tc.name, s.key, s.devices, s.anyDevice, tc.key, tc.devices, tc.anyDevice)
		}
		if s.known != tc.known || !reflect.DeepEqual(s.fields, tc.fields) {
			t.Errorf("%s: fields %v (known %v), want %v (%v)", tc.name, s.fields, s.known, tc.fields, tc.known)
		}
	}
}

// TestAnsweredIsToldTheKey: the answer's time goes with the chain the
// link keyed the request to before sending it.
func TestAnsweredIsToldTheKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success"}`))
	}))
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL, Signer: client.FormatSigner{}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var keys []string
	l := New(Config{Client: c, Tested: func() string { return settleMAC }, Answered: func(key string, ex client.Exchange) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, key)
	}})
	ctx := context.Background()
	for _, req := range []client.Request{
		{Path: device.SendCommand.Path(), Fields: []client.Field{{Key: device.FieldMAC, Value: settleMAC}, {Key: device.FieldSN, Value: settleSN}}},
		{Path: device.SendMessage.Path(), Fields: []client.Field{{Key: device.FieldMAC, Value: settleMAC}}},
	} {
		if _, _, err := l.RoundTrip(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{catalog.HexOnly(settleSN), LogKey(settleMAC)}; !reflect.DeepEqual(keys, want) {
		t.Errorf("Answered was told %q, want %q", keys, want)
	}
}
