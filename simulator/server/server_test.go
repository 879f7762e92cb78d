package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

func TestJournalRing(t *testing.T) {
	j := NewJournal(3)
	if got, total := j.Last(10); len(got) != 0 || total != 0 {
		t.Errorf("empty journal: %v %d", got, total)
	}
	paths := func(es []Entry) string {
		s := ""
		for _, e := range es {
			s += e.Path
		}
		return s
	}
	for i, want := range []string{"a", "ab", "abc", "bcd", "cde"} {
		j.Add(Entry{Path: string(rune('a' + i))})
		if got, total := j.Last(0); paths(got) != want || total != uint64(i+1) {
			t.Errorf("after %d adds: %q (total %d), want %q", i+1, paths(got), total, want)
		}
	}
	for n, want := range map[int]string{1: "e", 2: "de", 3: "cde", 9: "cde"} {
		if got, _ := j.Last(n); paths(got) != want {
			t.Errorf("Last(%d) = %q, want %q", n, paths(got), want)
		}
	}
	j.Clear()
	if got, total := j.Last(0); len(got) != 0 || total != 5 {
		t.Errorf("after Clear: %v %d", got, total)
	}
	if len(NewJournal(0).entries) != DefaultJournalSize {
		t.Error("default size")
	}
}

// TestStatusOf: every error code has its CONTRACT status, and only the
// two fault-injection codes and a state file failure are 5xx: bad input
// never is.
func TestStatusOf(t *testing.T) {
	want := map[string]int{
		device.CodeInvalidField: 400, device.CodeMissingField: 400, device.CodeUnexpectedField: 400,
		device.CodeMalformedBody: 400, device.CodeUnsupportedMediaType: 415, device.CodeBodyTooLarge: 413,
		device.CodeMethodNotAllowed: 405, device.CodeNotFound: 404, device.CodeUnknownAPIKey: 401,
		device.CodeAccountMismatch: 403, device.CodeBadSignature: 401, device.CodeStaleTimestamp: 401,
		device.CodeGatewayNotFound: 404, device.CodeDeviceNotFound: 404, device.CodeTypeMismatch: 409,
		device.CodeGatewayOffline: 504, device.CodeInjectedFault: 503, device.CodeUnauthorized: 401,
		device.CodeReplayedRequest: 401, device.CodeRateLimited: 429, device.CodeStorageFailed: 503,
		device.CodeStorageUnavailable: 503, device.CodeDeviceUnreachable: 504, "no_such_code": 400,
	}
	for code, status := range want {
		if got := StatusOf(code); got != status {
			t.Errorf("StatusOf(%s) = %d, want %d", code, got, status)
		}
	}
	for code, status := range statusOf {
		if status >= 500 && code != device.CodeGatewayOffline && code != device.CodeInjectedFault && code != device.CodeStorageFailed && code != device.CodeStorageUnavailable && code != device.CodeDeviceUnreachable {
			t.Errorf("%s is a %d", code, status)
		}
		if http.StatusText(status) == "" {
			t.Errorf("%s: %d is not a status", code, status)
		}
	}
}

func TestFaultsCheck(t *testing.T) {
	good := Faults{ErrorRate: 1, OfflineGateways: []string{" A4C138F0E2B1 "}}
	if err := good.check(); err != nil || good.OfflineGateways[0] != "a4c138f0e2b1" {
		t.Errorf("check: %v %v", err, good.OfflineGateways)
	}
	empty := Faults{}
	if err := empty.check(); err != nil || empty.OfflineGateways == nil {
		t.Errorf("empty: %v %#v", err, empty.OfflineGateways)
	}
	for i, f := range []Faults{
		{ErrorRate: 1.01}, {ErrorRate: -1}, {Latency: Duration{MaxLatency + 1}}, {Latency: Duration{-1}},
		{OfflineGateways: []string{"a4c138f0e2b"}}, {OfflineGateways: []string{"a4c138f0e2bg"}},
	} {
		if err := f.check(); err == nil {
			t.Errorf("case %d accepted: %+v", i, f)
		}
	}
	var d Duration
	for in, ok := range map[string]bool{`"150ms"`: true, `150`: true, `"soon"`: false, `true`: false} {
		err := d.UnmarshalJSON([]byte(in))
		if (err == nil) != ok {
			t.Errorf("Duration %s: %v", in, err)
		}
	}
	if d.UnmarshalJSON([]byte(`250`)); fmt.Sprint(d) != "250ms" {
		t.Errorf("a number is milliseconds: %s", d)
	}
}
