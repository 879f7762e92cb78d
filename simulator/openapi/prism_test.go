package openapi_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/openapi"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var prismBin = flag.String("prism", "", "path of Prism's CLI (.ci/openapi/node_modules/.bin/prism): run TestPrismProxy (make openapi-check)")

// responseViolation is a line of Prism's log that reports an answer which
// breaks the document. Request violations (the suite sends invalid requests
// on purpose) are logged as "Violation: request..." and are not counted.
var responseViolation = regexp.MustCompile(`Violation: response`)

// TestPrismProxy runs the whole conformance suite through Prism's
// validating proxy in front of a real gwsim serve, and fails on any answer
// of gwsim's that Prism finds in breach of the document. It needs Prism,
// which make openapi-check installs with npm ci; without -prism (plain go
// test, make test) it skips: CI runs it through make openapi-check.
func TestPrismProxy(t *testing.T) {
	if *prismBin == "" {
		t.Skip("needs Prism from npm: run make openapi-check (CI does, from .ci/run)")
	}
	prism, err := filepath.Abs(*prismBin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	doc, err := openapi.GenerateForPrism(server.Codes())
	if err != nil {
		t.Fatal(err)
	}
	docFile := filepath.Join(dir, "openapi-prism.yaml")
	if err := os.WriteFile(docFile, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	sim := simtest.Serve(t, simtest.Binary(t, "gwsim"))

	// Prism on a free loopback port, its log in a file parsed at the end.
	port := freePort(t)
	logFile := filepath.Join(dir, "prism.log")
	logW, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logW.Close()
	// No --errors: with it Prism refuses requests to paths the document
	// does not have (the suite also probes unknown paths and other methods,
	// and reads gwsim's admin API) instead of passing them on. Violations
	// are logged either way; --validate-request=false keeps the suite's
	// deliberately invalid requests out of the log.
	cmd := exec.Command(prism, "proxy", "--validate-request=false", "--cors=false", "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--verboseLevel", "info", docFile, sim.URL)
	cmd.Stdout, cmd.Stderr = logW, logW
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // by PID, even when the test failed
		<-done
	})
	proxy := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, proxy+"/_sim/health", done, logFile)

	// The suite through the proxy. Transport checks may fail there (Prism
	// re-encodes bodies and headers), so its verdict is not this test's; an
	// exit of 2 (unreachable, bad arguments) is.
	gwconform := simtest.Binary(t, "gwconform")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, gwconform, "run", "--target", proxy, "--report-dir", filepath.Join(dir, "reports"))
	out, err := run.CombinedOutput()
	if code := run.ProcessState.ExitCode(); code != 0 && code != 1 {
		t.Fatalf("gwconform run through Prism: exit %d (%v)\n%s", code, err, tail(string(out), 40))
	}
	if !strings.Contains(string(out), "Reports:") {
		t.Fatalf("gwconform did not finish:\n%s", tail(string(out), 40))
	}

	logW.Sync()
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bad []string
	forwarded := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "Forwarding") {
			forwarded++
			last = line
		}
		if responseViolation.MatchString(line) {
			bad = append(bad, last+"\n    "+line)
		}
	}
	if forwarded < 100 {
		t.Fatalf("Prism forwarded only %d requests: the suite did not run through it", forwarded)
	}
	t.Logf("Prism forwarded %d requests; %d response violations", forwarded, len(bad))
	for i, b := range bad {
		if i == 20 {
			t.Errorf("... and %d more (log: %s)", len(bad)-20, logFile)
			break
		}
		t.Errorf("answer breaks docs/openapi.yaml:\n  %s", b)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitHTTP(t *testing.T, url string, exited <-chan struct{}, logFile string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			b, _ := os.ReadFile(logFile)
			t.Fatalf("prism exited:\n%s", tail(string(b), 30))
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(logFile)
	t.Fatalf("prism did not answer within 60 s:\n%s", tail(string(b), 30))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
