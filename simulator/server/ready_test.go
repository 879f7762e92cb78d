package server

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// /_sim/ready, the readiness answer, over real HTTP: 200 {"status":
// "ready","storage":"ok"} while the store serves; open without the admin
// token like /_sim/health (probes carry none), and behind it with
// HealthNeedsToken. Its storage field follows the last check's verdict
// (the store's states themselves are held with a real Redis in
// simulator/redisstore's TestHealthTellsWhenChangesWouldBeRefused).
func TestReadyAnswer(t *testing.T) {
	const token = "ready-test-admin-token-0123456789abcdef"
	get := func(url, auth string) (int, readyAnswer) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url+"/_sim/ready", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var a readyAnswer
		if res.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
		}
		return res.StatusCode, a
	}
	s, c := testServer(t, nil, Config{AdminToken: token}, nil)
	if code, a := get(c.Base, ""); code != http.StatusOK || a.Status != "ready" || a.Storage != "ok" {
		t.Errorf("without a token: %d %+v (want 200 ready, storage ok)", code, a)
	}
	s.storeUnwritable.Store(true)
	if code, a := get(c.Base, ""); code != http.StatusOK || a.Storage != "unavailable" {
		t.Errorf("with the store unwritable: %d %+v (want 200, storage unavailable)", code, a)
	}
	_, closed := testServer(t, nil, Config{AdminToken: token, HealthNeedsToken: true}, nil)
	if code, _ := get(closed.Base, ""); code != http.StatusUnauthorized {
		t.Errorf("HealthNeedsToken, no token: %d, want 401", code)
	}
	if code, a := get(closed.Base, token); code != http.StatusOK || a.Status != "ready" {
		t.Errorf("HealthNeedsToken, with the token: %d %+v", code, a)
	}
}
