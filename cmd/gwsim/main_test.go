package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// syncBuffer is an io.Writer that a running command and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"bogus"},
		{"serve", "--bogus"},
		{"serve", "--addr"},
		{"serve", "extra"},
		{"serve", "--fleet", "x.yaml", "--seed", "1"},
		{"serve", "--seed", "1", "--gateways", "0"},
		{"serve", "--seed", "1", "--devices-per-gateway", "-1"},
		{"serve", "--seed", "x"},
		{"serve", "--log-level", "loud"},
		{"serve", "--log-format", "xml"},
		{"serve", "--journal-size", "0"},
		{"fleet", "--bogus"},
		{"fleet", "--gateways", "0"},
		{"fleet", "--devices-per-gateway", "-1"},
		{"fleet", "extra"},
	} {
		if code, _, stderr := run(args...); code != 2 || stderr == "" {
			t.Errorf("gwsim %q: exit %d, stderr %q; want 2 and a reason", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"serve", "-h"}, {"fleet", "-h"}} {
		if code, _, _ := run(args...); code != 0 {
			t.Errorf("gwsim %q: exit %d, want 0", args, code)
		}
	}
}

func TestUnreadableFleet(t *testing.T) {
	dir := t.TempDir()
	unknownKey := filepath.Join(dir, "unknown-key.yaml")
	os.WriteFile(unknownKey, []byte("accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    bogus: 1\n    other: 2\n"), 0o644)
	badHex := filepath.Join(dir, "bad-hex.yaml")
	os.WriteFile(badHex, []byte("accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2z\n"), 0o644)
	notYAML := filepath.Join(dir, "not-yaml.yaml")
	os.WriteFile(notYAML, []byte("accounts: [\n  {\n"), 0o644)
	for _, p := range []string{filepath.Join(dir, "missing.yaml"), dir, unknownKey, badHex, notYAML} {
		code, stdout, stderr := run("serve", "--addr", "127.0.0.1:0", "--fleet", p)
		if code != 2 {
			t.Errorf("--fleet %s: exit %d, want 2", p, code)
		}
		if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(stderr, filepath.Base(p)) {
			t.Errorf("--fleet %s: want a one-line reason naming the file, got %q", p, stderr)
		}
		if stdout != "" {
			t.Errorf("--fleet %s: printed %q", p, stdout)
		}
	}
}

func TestPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := run("serve", "--addr", ln.Addr().String())
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
		t.Errorf("taken port: exit %d, stderr %q", code, stderr)
	}
}

func TestFleetCommand(t *testing.T) {
	args := []string{"fleet", "--seed", "7", "--gateways", "2", "--devices-per-gateway", "9"}
	code1, out1, err1 := run(args...)
	code2, out2, _ := run(args...)
	if code1 != 0 || code2 != 0 || err1 != "" {
		t.Fatalf("exit %d/%d: %s", code1, code2, err1)
	}
	if out1 != out2 {
		t.Error("the same seed printed different fleets")
	}
	f, err := fleet.Parse([]byte(out1))
	if err != nil {
		t.Fatalf("fleet.Parse refuses the output: %v\n%s", err, out1)
	}
	if len(f.Accounts[0].Gateways) != 2 || f.DeviceCount() != 18 {
		t.Errorf("generated %s", f.Describe())
	}
	if _, other, _ := run("fleet", "--seed", "8", "--gateways", "2", "--devices-per-gateway", "9"); other == out1 {
		t.Error("seeds 7 and 8 gave the same fleet")
	}
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if code, stdout, _ := run(append(args, "--out", p)...); code != 0 || stdout != "" {
		t.Fatalf("--out: exit %d, stdout %q", code, stdout)
	}
	if b, _ := os.ReadFile(p); string(b) != out1 {
		t.Error("--out wrote something else than stdout shows")
	}
	if code, _, stderr := run(append(args, "--out", filepath.Join(p, "sub", "x.yaml"))...); code != 1 || stderr == "" {
		t.Errorf("unwritable --out: exit %d %q", code, stderr)
	}
}

var listening = regexp.MustCompile(`gwsim listening on (http://[^\s"]+)`)

// serve runs gwsim serve through Run until the returned cancel is called;
// it returns the URL from the banner and a channel with the exit code.
func serve(t *testing.T, args ...string) (string, *syncBuffer, context.CancelFunc, <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	exit, done := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(done)
		exit <- Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}, args...), stdout, stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listening.FindStringSubmatch(stdout.String()); m != nil {
			t.Cleanup(func() {
				cancel()
				<-done
			})
			return m[1], stdout, cancel, exit
		}
		select {
		case code := <-exit:
			t.Fatalf("gwsim serve exited %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q %q", stdout.String(), stderr.String())
		}
	}
}

// TestGracefulShutdown: a request in flight when the context ends (the
// signal) still gets its answer, and Run exits 0.
func TestGracefulShutdown(t *testing.T) {
	url, stdout, cancel, exit := serve(t)
	c := simtest.NewClient(t, url)
	tg, _ := fleet.Demo().Target()
	// Without a fleet: the demo fleet, its credentials and devices printed.
	for _, want := range []string{tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, stdout)
		}
	}
	for _, typ := range device.Types {
		if !strings.Contains(stdout.String(), tg.Devices[typ.Name].SN) {
			t.Errorf("banner lacks the demo %s", typ.Name)
		}
	}
	c.APIKey, c.Secret, c.Account, c.MAC = tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC
	c.AdminJSON("PUT", "/_sim/faults", `{"latency":"300ms"}`, nil)

	sn := tg.Devices["Light Dimmer"].SN
	body := simtest.Body(device.JSON, c.Command(sn, "Light Dimmer", simtest.S("dimming", "61")))
	req, _ := http.NewRequest("POST", url+device.SendCommand.Path(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	written := make(chan struct{})
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(written) },
	}))
	type answer struct {
		status int
		err    error
	}
	answered := make(chan answer, 1)
	began := time.Now()
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		res.Body.Close()
		answered <- answer{status: res.StatusCode}
	}()
	<-written
	time.Sleep(100 * time.Millisecond) // the server has read it and is inside the injected latency
	cancel()
	a := <-answered
	if a.err != nil || a.status != 200 {
		t.Fatalf("request in flight during shutdown: %d %v", a.status, a.err)
	}
	if d := time.Since(began); d < 300*time.Millisecond {
		t.Errorf("answered after %s, before the latency", d)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit %d after a graceful shutdown", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the context ended")
	}
	if _, err := http.Get(url + "/_sim/health"); err == nil {
		t.Error("still serving after shutdown")
	}
}

// TestServeFleetFileAndToken: gwsim serve with a fleet file and an admin
// token serves that fleet, prints its credentials, and guards /_sim/.
func TestServeFleetFileAndToken(t *testing.T) {
	b, err := simtest.Fleet().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(p, b, 0o644)
	url, stdout, _, _ := serve(t, "--fleet", p, "--admin-token", testToken)
	// Where the credentials come from, never the secret or the whole key.
	for _, want := range []string{"credentials (from the fleet file " + p + ")", "api_key:      " + client.MaskAPIKey(simtest.KeyA) + "\n",
		"secret:       not shown", simtest.AccountA, simtest.MACA, "2 accounts, 3 gateways"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout.String(), simtest.SecretA) || strings.Contains(stdout.String(), simtest.KeyA) {
		t.Errorf("the banner shows the fleet's secret or whole api_key:\n%s", stdout)
	}
	c := simtest.NewClient(t, url)
	if status, _, _ := c.Admin("GET", "/_sim/state", ""); status != 401 {
		t.Errorf("admin without the token: %d", status)
	}
	c.AdminToken = testToken
	c.AdminJSON("GET", "/_sim/health", "", nil)
	c.Send(device.SendCommand, device.XML, c.Command(simtest.SN('a', 5), "Light Dimmer", simtest.S("dimming", "3"))).OK(t, device.XML)
	if got := c.Device(simtest.MACA, simtest.SN('a', 5)).State["dimming"]; got != 3.0 {
		t.Errorf("dimming %v", got)
	}
}

func TestServeSeed(t *testing.T) {
	url, stdout, _, _ := serve(t, "--seed", "7", "--gateways", "2", "--devices-per-gateway", "3")
	f := fleet.Generate(7, 2, 3)
	tg, _ := f.Target()
	if strings.Contains(stdout.String(), tg.Key.Secret) || !strings.Contains(stdout.String(), tg.MAC) || !strings.Contains(stdout.String(), "gwsim fleet --seed 7") {
		t.Errorf("banner: want the generated fleet's mac and how to get its secrets, not a secret:\n%s", stdout)
	}
	c := simtest.NewClient(t, url)
	var state struct {
		Accounts []struct {
			ID string `json:"myservice_id"`
		} `json:"accounts"`
	}
	c.AdminJSON("GET", "/_sim/state", "", &state)
	if len(state.Accounts) != 1 || state.Accounts[0].ID != tg.AccountID {
		t.Errorf("serving %+v, want the generated fleet", state)
	}
}

// TestStoreFlags: --store-durability and --store are checked before
// anything starts, with a message naming the flag and never a password.
func TestStoreFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--store-durability", "always"}, "--store-durability must be primary or replicated"},
		{[]string{"serve", "--store-durability", "replicated"}, "--store-durability replicated needs a Redis --store"},
		{[]string{"serve", "--store", "redis+sentinel://127.0.0.1:1/"}, "MASTER"},
		{[]string{"serve", "--store", "redis+sentinel://gw:s3cretpw@127.0.0.1:x/m"}, "HOST:PORT"},
		{[]string{"serve", "--store", "redis+sentinel://gw:s3cretpw@127.0.0.1:1/m/x"}, "database"},
		{[]string{"serve", "--store", "memcached://127.0.0.1:1"}, "redis+sentinel://"},
	} {
		code, _, stderr := run(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cretpw") {
			t.Errorf("gwsim %q: exit %d, stderr %q; want 2 and %q, no password", tc.args, code, stderr, tc.want)
		}
	}
}

// TestStoreByURL: --store memory: is the default, --store file:PATH is
// --state-file PATH (a change survives a restart with either), and
// combinations that make no sense are refused.
func TestStoreByURL(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--store", "file:"}, "needs the state file's path"},
		{[]string{"serve", "--store", "file:a.db", "--state-file", "b.db"}, "two different files"},
		{[]string{"serve", "--store", "memory:", "--state-file", "b.db"}, "exclude each other"},
		{[]string{"serve", "--store", "memory:", "--store-reset"}, "--store-reset needs a Redis --store"},
		{[]string{"serve", "--store", "file:x.db", "--store-durability", "replicated"}, "needs a Redis --store"},
	} {
		code, _, stderr := run(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("gwsim %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	p := filepath.Join(t.TempDir(), "state.db")
	url, out, cancel, exit := serve(t, "--store", "file:"+p)
	if !strings.Contains(out.String(), "store: state file "+p) {
		t.Errorf("the banner does not name the state file:\n%s", out.String())
	}
	tg, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = tg.Key.Key, tg.Key.Secret, tg.AccountID, tg.MAC
	sn := tg.Devices["Light Dimmer"].SN
	c.Send(device.SendCommand, device.XML, c.Command(sn, "Light Dimmer", simtest.S("dimming", "23"))).OK(t, device.XML)
	cancel()
	<-exit
	url, _, cancel, exit = serve(t, "--state-file", p)
	if d := simtest.NewClient(t, url).Device(tg.MAC, sn); fmt.Sprint(d.State["dimming"]) != "23" {
		t.Errorf("after a restart with --state-file on the file --store file: wrote: %v", d.State)
	}
	cancel()
	<-exit
	url, _, _, _ = serve(t, "--store", "memory:")
	if d := simtest.NewClient(t, url).Device(tg.MAC, sn); fmt.Sprint(d.State["dimming"]) == "23" {
		t.Errorf("--store memory: read the state file")
	}
}
