package deploy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// nginxConf is deploy/nginx.conf made to run here: the upstream is the
// test's gwsim instead of Docker's "gwsim" (and its resolver, which needs
// a newer nginx), nginx listens on a loopback port, and its pid, logs and
// temporary files go to dir. The locations, the part under test, are kept
// as they are; the test fails if the recipe's lines it replaces change.
func nginxConf(t *testing.T, dir, upstream string, port int) string {
	t.Helper()
	b, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for old, repl := range map[string]string{
		"worker_processes auto;":                      fmt.Sprintf("worker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log;", dir, dir),
		"    resolver 127.0.0.11 valid=10s ipv6=off;": fmt.Sprintf("    access_log %[1]s/access.log;\n    client_body_temp_path %[1]s/body;\n    proxy_temp_path %[1]s/proxy;\n    fastcgi_temp_path %[1]s/fastcgi;\n    uwsgi_temp_path %[1]s/uwsgi;\n    scgi_temp_path %[1]s/scgi;", dir),
		"server gwsim:8080 resolve;":                  "server " + upstream + ";",
		"listen 8080;":                                fmt.Sprintf("listen 127.0.0.1:%d;", port),
	} {
		if strings.Count(conf, old) != 1 {
			t.Fatalf("deploy/nginx.conf no longer has the line %q this test replaces", old)
		}
		conf = strings.Replace(conf, old, repl, 1)
	}
	return conf
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNginx runs the Debian package's nginx with the recipe's config in
// front of upstream, on loopback, until the test ends; it returns its URL.
func startNginx(t *testing.T, upstream string) string {
	t.Helper()
	bin := "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		bin = simtest.NeedTool(t, "nginx", "apt-get install -y nginx")
	}
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConf(t, dir, upstream, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if res, err := http.Get(url + "/_sim/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not answer at %s: %s %s", url, out, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func send(t *testing.T, method, url, body string, h map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range h {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestNginxRecipeKeepsTheDashboardWorking runs deploy/nginx.conf in a real
// nginx in front of gwsim (with an admin token, as in Compose). Through
// it: the dashboard in Chromium signs in, goes live and makes a change
// with its cookie (its Origin carries the port, which the recipe's
// Host $http_host keeps; $host would drop it and gwsim would refuse the
// change as cross-site); curl with the token works; a cross-site change
// gets 403 and a rebinding Host 421, as without nginx.
func TestNginxRecipeKeepsTheDashboardWorking(t *testing.T) {
	const token = "nginx-recipe-token"
	sim := simtest.Start(t, simulator.Options{AdminToken: token})
	lb := startNginx(t, strings.TrimPrefix(sim.Base, "http://"))
	bearer := map[string]string{"Authorization": "Bearer " + token}

	if status, body := send(t, "GET", lb+"/_sim/state", "", bearer); status != 200 {
		t.Fatalf("curl GET /_sim/state through nginx: %d %s", status, body)
	}
	if status, body := send(t, "PUT", lb+"/_sim/faults", `{"latency":"2ms"}`, map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}); status != 200 {
		t.Fatalf("curl PUT /_sim/faults through nginx: %d %s", status, body)
	}
	if status, body := send(t, "POST", lb+"/_sim/reset", "x", map[string]string{"Authorization": "Bearer " + token, "Content-Type": "text/plain", "Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}); status != 403 || !strings.Contains(body, "cross_site_request") {
		t.Errorf("a cross-site form through nginx: %d %s, want 403", status, body)
	}
	if status, body := send(t, "GET", lb+"/_sim/state", "", map[string]string{"Authorization": "Bearer " + token, "Host": "attacker.example"}); status != http.StatusMisdirectedRequest {
		t.Errorf("a rebinding Host through nginx: %d %s, want 421", status, body)
	}

	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	ctx := simtest.Chromium(t, 1200, 900)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(lb+"/_sim/"), chromedp.WaitVisible(chromedp.CSS("#signin-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS("#main")), chromedp.WaitVisible(chromedp.CSS("#live.on"))); err != nil {
		t.Fatalf("the dashboard through nginx did not sign in and go live: %v", err)
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`fetch("/_sim/faults", {method: "PUT", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({latency: "3ms"})}).then(r => r.status === 200)`, chromedp.EvalAwaitPromise))
	if err != nil || !ok {
		t.Fatalf("the dashboard's change with its cookie through nginx was refused (%v)", err)
	}
	var f struct{ Latency string }
	sim.Client.AdminJSON("GET", "/_sim/faults", "", &f)
	if f.Latency != "3ms" {
		t.Errorf("faults after the dashboard's change: %+v", f)
	}
}
