package server

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/store"
)

// fuzzClock is the fixed time the seeds are signed for.
var fuzzClock = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// fuzzPaths and fuzzMethods are what the first argument of FuzzHandler
// picks from: its low three bits the path, the next three the method.
var (
	fuzzPaths = []string{
		device.SendCommand.Path(), device.SendMessage.Path(), device.UpdateName.Path(),
		device.SendCommand.Path(), device.SendMessage.Path(), device.UpdateName.Path(),
		"/v1/services/gateway/../gateway/command", "/v1/services/gateway/command/x",
	}
	fuzzMethods = []string{
		http.MethodPost, http.MethodPost, http.MethodPost, http.MethodPost,
		http.MethodGet, http.MethodPut, http.MethodDelete, "BREW",
	}
)

// FuzzHandler sends any body with any Content-Type to the whole handler,
// starting from the published examples filled in and signed for the fixed
// clock (testdata/fuzz/FuzzHandler), so that the fuzzer mutates requests
// that get all the way to the store. A newline in the Content-Type
// argument sends several Content-Type headers. Whatever it sends:
//
//   - the handler never panics and never answers 5xx;
//   - the answer's Content-Type is JSON or XML and its body parses as that,
//     with status success (200 only) or error with a code and a message
//     whose status is the code's;
//   - a request that is not answered 200 changes nothing in the store;
//   - a path with dot segments or an unknown path is 404, and a POST with
//     more than one Content-Type is 415.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(0), "application/json", []byte(`{"control":{}}`))
	fl := fleet.Demo()
	st := store.New(fl, 8)
	a := fl.Authenticator()
	a.Now = func() time.Time { return fuzzClock }
	s := New(Config{Store: st, Auth: a, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return fuzzClock }})
	h := s.Handler()
	f.Fuzz(func(t *testing.T, pick uint8, contentType string, body []byte) {
		path, method := fuzzPaths[pick&7], fuzzMethods[pick>>3&7]
		req := httptest.NewRequest(method, "http://gwsim.test"+path, bytes.NewReader(body))
		// A newline in contentType separates several Content-Type headers.
		cts := strings.Split(contentType, "\n")
		if contentType != "" {
			req.Header["Content-Type"] = cts
		}
		before, _ := st.Dump(0)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		res := w.Result()
		if res.StatusCode >= 500 || res.StatusCode < 200 {
			t.Fatalf("%s %s %q %q: %d %s", method, path, contentType, body, res.StatusCode, w.Body)
		}
		result, code := checkAnswer(t, res.Header.Get("Content-Type"), w.Body.Bytes())
		// Paths with dot segments and unknown paths are not found (no
		// redirect to a clean path); a Content-Type sent twice is refused.
		if pick&7 >= 6 && res.StatusCode != http.StatusNotFound {
			t.Fatalf("%s %s: %d, want 404", method, path, res.StatusCode)
		}
		if len(cts) > 1 && pick&7 < 6 && method == http.MethodPost && res.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("Content-Type %q sent %d times: %d, want 415", contentType, len(cts), res.StatusCode)
		}
		if res.StatusCode == http.StatusOK {
			if result != "success" || code != "" {
				t.Fatalf("200 with %s %s: %s", result, code, w.Body)
			}
			return
		}
		if result != "error" || StatusOf(code) != res.StatusCode {
			t.Fatalf("%d with %s %s: %s", res.StatusCode, result, code, w.Body)
		}
		if after, _ := st.Dump(0); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s %s %q %q answered %d %s and changed the state", method, path, contentType, body, res.StatusCode, code)
		}
	})
}

// checkAnswer reads an answer in the format its Content-Type names and
// returns its status and error code; it fails when the body does not parse
// as that format or lacks a message.
func checkAnswer(t *testing.T, contentType string, body []byte) (result, code string) {
	t.Helper()
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("Content-Type %q: %v", contentType, err)
	}
	var status, message string
	switch mt {
	case "application/json":
		var j struct {
			Status string `json:"status"`
			Error  *struct {
				Code, Field, Message string
			} `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&j); err != nil || dec.More() {
			t.Fatalf("JSON answer does not parse: %v\n%s", err, body)
		}
		status = j.Status
		if j.Error != nil {
			code, message = j.Error.Code, j.Error.Message
		}
	case "application/xml":
		var x struct {
			XMLName xml.Name `xml:"xml"`
			Status  string   `xml:"status"`
			Code    string   `xml:"error>code"`
			Message string   `xml:"error>message"`
		}
		if err := xml.Unmarshal(body, &x); err != nil {
			t.Fatalf("XML answer does not parse: %v\n%s", err, body)
		}
		status, code, message = x.Status, x.Code, x.Message
	default:
		t.Fatalf("answer Content-Type %q is neither JSON nor XML", contentType)
	}
	if status == "error" && (code == "" || message == "") {
		t.Fatalf("error answer without a code or message: %s", body)
	}
	return status, code
}
