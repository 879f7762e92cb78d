package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/deploy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// gwsimProcess starts the gwsim binary with env and args; it returns the
// banner's URL once it is out ("" and the output when gwsim exits first,
// with its exit code).
func gwsimProcess(t *testing.T, env []string, args ...string) (url, out string, code int) {
	t.Helper()
	cmd := exec.Command(simtest.Binary(t, "gwsim"), args...)
	cmd.Env = append(os.Environ(), append([]string{"GWSIM_ADMIN_TOKEN=", "GWSIM_ADMIN="}, env...)...)
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		select {
		case code := <-exited:
			exited <- code
			return "", buf.String(), code
		case <-time.After(20 * time.Millisecond):
		}
		if m := listening.FindStringSubmatch(buf.String()); m != nil && (strings.Contains(buf.String(), "admin:") || strings.Contains(buf.String(), `"admin":`)) {
			return m[1], buf.String(), -1
		}
	}
	t.Fatalf("gwsim %v: no banner and no exit:\n%s", args, buf.String())
	return "", "", 0
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestClosedAdminBeyondLoopback: gwsim serve on an address beyond loopback
// with no admin token refuses to start (exit 2, one line saying how to give
// a token or --admin open), before anything listens; on loopback, or with
// --admin open (the banner says so) or --admin off (no admin API at all),
// it starts. Real processes, real HTTP.
func TestClosedAdminBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		url, out, code := gwsimProcess(t, nil, "serve", "--addr", addr)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if url != "" || code != 2 || len(lines) != 1 || !strings.Contains(out, "$GWSIM_ADMIN_TOKEN") ||
			!strings.Contains(out, "--admin open") || strings.Contains(out, "listening") {
			t.Errorf("--addr %s without a token: exit %d, want 2 and one line naming $GWSIM_ADMIN_TOKEN and --admin open:\n%s", addr, code, out)
		}
	}
	// The same refusal from the environment's mode, and a mode that is
	// not one is named.
	if _, out, code := gwsimProcess(t, []string{"GWSIM_ADMIN=auto"}, "serve", "--addr", "0.0.0.0:0"); code != 2 || !strings.Contains(out, "--admin open") {
		t.Errorf("GWSIM_ADMIN=auto beyond loopback: exit %d:\n%s", code, out)
	}
	if _, out, code := gwsimProcess(t, nil, "serve", "--admin", "opne"); code != 2 || !strings.Contains(out, `--admin: "opne" is not auto, open or off`) {
		t.Errorf("--admin opne: exit %d:\n%s", code, out)
	}
	if _, out, code := gwsimProcess(t, []string{"GWSIM_ADMIN_TOKEN=" + testToken}, "serve", "--admin", "open", "--addr", "0.0.0.0:0"); code != 2 || !strings.Contains(out, "--admin open and an admin token") || strings.Contains(out, testToken) {
		t.Errorf("--admin open with a token: exit %d:\n%s", code, out)
	}

	// Loopback by address and by a name resolved to it: the admin API
	// opens without a token to this machine.
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		url, out, code := gwsimProcess(t, nil, "serve", "--addr", addr)
		if url == "" {
			t.Errorf("--addr %s: exit %d:\n%s", addr, code, out)
			continue
		}
		if st, _ := getStatus(t, url+"/_sim/state?limit=1"); st != http.StatusOK {
			t.Errorf("--addr %s: /_sim/state %d", addr, st)
		}
	}

	// --admin open, by flag and by $GWSIM_ADMIN: open to the network on
	// purpose, and the banner says so.
	for _, env := range [][]string{nil, {"GWSIM_ADMIN=open"}} {
		args := []string{"serve", "--addr", "0.0.0.0:0"}
		if env == nil {
			args = append(args, "--admin", "open")
		}
		url, out, code := gwsimProcess(t, env, args...)
		if url == "" {
			t.Fatalf("%v %v: exit %d:\n%s", env, args, code, out)
		}
		if !strings.Contains(out, "admin: OPEN TO THE NETWORK without a token, on purpose (--admin open)") {
			t.Errorf("%v %v: the banner does not say the admin API is open on purpose:\n%s", env, args, out)
		}
		if st, _ := getStatus(t, url+"/_sim/state?limit=1"); st != http.StatusOK {
			t.Errorf("--admin open: /_sim/state %d", st)
		}
	}

	// --admin off: no admin API, dashboard or metrics; health answers.
	url, out, code := gwsimProcess(t, nil, "serve", "--addr", "0.0.0.0:0", "--admin", "off")
	if url == "" {
		t.Fatalf("--admin off: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "admin: off (--admin off)") {
		t.Errorf("--admin off: banner:\n%s", out)
	}
	for _, path := range []string{"/_sim/state", "/_sim/journal", "/_sim/", "/metrics"} {
		st, body := getStatus(t, url+path)
		var e struct {
			Error struct{ Code, Field string }
		}
		json.Unmarshal([]byte(body), &e)
		if st != http.StatusNotFound || e.Error.Code != "admin_off" {
			t.Errorf("--admin off: %s answered %d %s", path, st, body)
		}
	}
	req, _ := http.NewRequest("POST", url+"/_sim/reset", bytes.NewReader(nil))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("--admin off: POST /_sim/reset: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if st, _ := getStatus(t, url+"/_sim/health"); st != http.StatusOK {
		t.Errorf("--admin off: /_sim/health %d", st)
	}
}

// TestRecipesKeepTheAdminAPIClosed: every gwsim serve of the image, the
// Compose files, the manifests, the CI recipes and the docs, read with the
// environment it is given there, keeps the admin API closed beyond
// loopback: a token, or --admin open or off said on purpose. The image's
// own default command, run as a real process with its arguments, refuses
// to start without a token and starts with one.
func TestRecipesKeepTheAdminAPIClosed(t *testing.T) {
	lines, err := deploy.All("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var image []string
	for _, l := range lines {
		if l.Program != "gwsim" || len(l.Args) == 0 || l.Args[0] != "serve" {
			continue
		}
		n++
		if strings.HasSuffix(l.Where, " ENTRYPOINT+CMD") {
			image = l.Args
			continue
		}
		if err := closedInRecipe(l.Args[1:], l.Env); err != nil {
			t.Errorf("%s (environment %v):\n    %v", l, l.Env, err)
		}
	}
	if n < 10 || image == nil {
		t.Fatalf("%d gwsim serve lines found, the image's default %v", n, image)
	}
	// The image's default command as a process (its port made free).
	args := append([]string{}, image...)
	for i := range args {
		if i > 0 && args[i-1] == "--addr" {
			host, _, _ := strings.Cut(args[i], ":")
			args[i] = host + ":0"
		}
	}
	if _, out, code := gwsimProcess(t, nil, args...); code != 2 || !strings.Contains(out, "--admin open") {
		t.Errorf("the image's default %v without a token: exit %d, want 2:\n%s", image, code, out)
	}
	if url, out, code := gwsimProcess(t, []string{"GWSIM_ADMIN_TOKEN=" + testToken}, args...); url == "" {
		t.Errorf("the image's default %v with a token: exit %d:\n%s", image, code, out)
	} else if st, _ := getStatus(t, url+"/_sim/state"); st != http.StatusUnauthorized {
		t.Errorf("the image's default with a token: /_sim/state without it answered %d", st)
	}
}

// TestBannerEscapesTheFleetsBytes: a fleet file whose device names carry
// ESC, BEL, CR, a C1 control or a bidirectional override is refused with
// a line that shows them escaped, or served with a banner that does: no
// raw control byte reaches the terminal either way. Real process.
func TestBannerEscapesTheFleetsBytes(t *testing.T) {
	demo, err := os.ReadFile("../../fixtures/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"\e]0;owned\a\e[31mred\e[2K\rCoffee"`, `"Coffee\u202eeM\u009b"`} {
		hostile := strings.Replace(string(demo), "name: Coffee Maker", "name: "+name, 1)
		if hostile == string(demo) {
			t.Fatal("the demo fleet has no Coffee Maker to rename")
		}
		file := t.TempDir() + "/fleet.yaml"
		os.WriteFile(file, []byte(hostile), 0o600)
		_, out, _ := gwsimProcess(t, nil, "serve", "--fleet", file)
		for _, c := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202e"} {
			if strings.Contains(out, c) {
				t.Errorf("device name %s: gwsim passes %q to the terminal:\n%q", name, c, out)
			}
		}
	}
	// A scenario's name is shown in the banner.
	sc := t.TempDir() + "/scenario.yaml"
	os.WriteFile(sc, []byte("name: \"\\e]0;owned\\a\\e[2K\\rcalm\\u202e\"\nautostart: false\nsteps:\n  - {at: 0s, latency: 1ms}\n"), 0o600)
	url, out, code := gwsimProcess(t, nil, "serve", "--scenario", sc)
	for _, c := range []string{"\x1b", "\x07", "\r", "\u202e"} {
		if strings.Contains(out, c) {
			t.Errorf("scenario name: gwsim passes %q to the terminal:\n%q", c, out)
		}
	}
	if url != "" && !strings.Contains(out, `\x1b]0;owned`) {
		t.Errorf("scenario name: not shown escaped (exit %d):\n%s", code, out)
	}
}

// TestProxyClosedBeyondLoopback: gwsim proxy follows the same rule: on an
// address beyond loopback without a token it refuses to start (exit 2,
// one line); with --admin open it starts and its live page answers.
func TestProxyClosedBeyondLoopback(t *testing.T) {
	up := "http://127.0.0.1:1"
	code, out, errOut := gwsimCmd(t, nil, "proxy", "--upstream", up, "--addr", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errOut, "--admin open") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("proxy on 0.0.0.0 without a token: exit %d, want 2 and one line:\n%s%s", code, out, errOut)
	}
	cmd := exec.Command(simtest.Binary(t, "gwsim"), "proxy", "--upstream", up, "--addr", "0.0.0.0:0", "--admin", "open")
	cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN=", "GWSIM_ADMIN=")
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	re := regexp.MustCompile(`gwsim proxy listening on (http://\S+),`)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && re.FindStringSubmatch(buf.String()) == nil; time.Sleep(20 * time.Millisecond) {
	}
	m := re.FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("proxy --admin open: no banner:\n%s", buf.String())
	}
	if st, _ := getStatus(t, m[1]+"/_sim/journal"); st != http.StatusOK {
		t.Errorf("proxy --admin open: /_sim/journal %d", st)
	}
	if !strings.Contains(buf.String(), "on purpose (--admin open)") {
		t.Errorf("proxy --admin open: not said:\n%s", buf.String())
	}
}
