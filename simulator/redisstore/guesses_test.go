package redisstore_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestBearerGuessesCountOnEveryReplica: wrong admin tokens sent to two
// replicas of one Redis are counted together: after ten across both, each
// replica holds the client back (429); the right token is never held back.
func TestBearerGuessesCountOnEveryReplica(t *testing.T) {
	t.Parallel()
	const token = "replica-admin-token-0123456789abcdef0123"
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 2, "--admin-token", token)
	send := func(base, tok string) int {
		req, _ := http.NewRequest("GET", base+"/_sim/faults", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	for i := 0; i < 10; i++ {
		if code := send(ps[i%2].URL, "guess"); code != http.StatusUnauthorized {
			t.Fatalf("guess %d to replica %d: %d, want 401", i, i%2, code)
		}
	}
	for i, p := range ps {
		if code := send(p.URL, "guess"); code != http.StatusTooManyRequests {
			t.Errorf("replica %d after 10 guesses across both: %d, want 429", i, code)
		}
		if code := send(p.URL, token); code != http.StatusOK {
			t.Errorf("replica %d, the right token from a held-back client: %d, want 200 (never held back)", i, code)
		}
	}
}
