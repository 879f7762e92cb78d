package gwsimtest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The scratch app: a module of its own, outside this repository, that
// requires gwtools as any app would (with a replace to this checkout) and
// tests its own HTTP client against gwsimtest.
const (
	appCode = `// Package lightapp is a tiny app that dims lights through a gateway.
package lightapp

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// App talks to one gateway.
type App struct {
	Base, APIKey, Secret, Account, MAC string
	// Extra is sent with every command: a bug switch for the tests.
	Extra map[string]any
}

// Dim sets a dimmer's level and says what the gateway answered.
func (a *App) Dim(sn string, level int) error {
	ts := time.Now().UTC().Format("20060102150405")
	sum := md5.Sum([]byte(a.APIKey + a.Secret + ts))
	control := map[string]any{"api_key": a.APIKey, "timestamp": ts, "sign": hex.EncodeToString(sum[:]),
		"myservice_id": a.Account, "mac": a.MAC, "sn": sn, "type": "Light Dimmer", "dimming": level}
	for k, v := range a.Extra {
		control[k] = v
	}
	body, _ := json.Marshal(map[string]any{"control": control})
	res, err := http.Post(a.Base+"/v1/services/gateway/command", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var answer struct {
		Status string
		Error  struct{ Code, Message string }
	}
	json.NewDecoder(res.Body).Decode(&answer)
	if answer.Status != "success" {
		return fmt.Errorf("%d %s", res.StatusCode, answer.Error.Code)
	}
	return nil
}
`
	appTest = `package lightapp

import (
	"os"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

const hall = "0123456789abcdef0123456789abcd06"

func app(sim *gwsimtest.Server) *App {
	c := sim.Credentials()
	return &App{Base: sim.URL, APIKey: c.APIKey, Secret: c.Secret, Account: c.AccountID, MAC: c.MAC}
}

func TestDim(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	if err := app(sim).Dim(hall, 30); err != nil {
		t.Fatal(err)
	}
	if d, _ := sim.Device(sim.Credentials().MAC, hall); d.State["dimming"] != 30.0 {
		t.Errorf("dimming %v", d.State["dimming"])
	}
	sim.AssertClean(t)
}

func TestOffline(t *testing.T) {
	t.Parallel()
	sim := gwsimtest.Start(t)
	if err := sim.GatewayOffline(sim.Credentials().MAC); err != nil {
		t.Fatal(err)
	}
	if err := app(sim).Dim(hall, 30); err == nil || !strings.Contains(err.Error(), "gateway_offline") {
		t.Errorf("offline: %v", err)
	}
	sim.AssertJudgement(t, gwsimtest.ValidRequests)
}

// TestBuggyApp sends a field of another device type; it runs only when
// the repository's test asks it to, and must then fail.
func TestBuggyApp(t *testing.T) {
	if os.Getenv("LIGHTAPP_BUGGY") == "" {
		t.Skip("the repository's test runs it, expecting it to fail")
	}
	sim := gwsimtest.Start(t)
	a := app(sim)
	a.Extra = map[string]any{"Relay2": "On"}
	a.Dim(hall, 30)
	sim.AssertJudgement(t, gwsimtest.ValidRequests)
}
`
)

// myappCode is the myapp package the docs' snippets call: New gives the
// scratch app.
const myappCode = `// Package myapp stands for an app's own package in the docs' snippets.
package myapp

import "example.com/lightapp"

// New is the app, talking to one gateway.
func New(base, apiKey, secret, account, mac string) *lightapp.App {
	return &lightapp.App{Base: base, APIKey: apiKey, Secret: secret, Account: account, MAC: mac}
}
`

// docSnippets is a test file of the scratch module holding the Go
// snippets the docs show an app team, as written: the package
// documentation's TestDimmer and docs/app-testing.md's first Go block
// (its import line aside). A snippet that no longer compiles against the
// package fails TestAppModuleUsesGwsimtest.
func docSnippets(root string) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, "simulator", "gwsimtest", "gwsimtest.go"))
	if err != nil {
		return "", err
	}
	var pkgDoc []string
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "//\tfunc TestDimmer") {
			in = true
		}
		if in {
			pkgDoc = append(pkgDoc, strings.TrimPrefix(l, "//\t"))
			if l == "//\t}" {
				break
			}
		}
	}
	if len(pkgDoc) == 0 {
		return "", errors.New("the package documentation shows no func TestDimmer")
	}
	md, err := os.ReadFile(filepath.Join(root, "docs", "app-testing.md"))
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(md), "```go\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		return "", errors.New("docs/app-testing.md shows no Go block")
	}
	var doc []string
	for _, l := range strings.Split(block, "\n") {
		if !strings.HasPrefix(l, "import ") {
			doc = append(doc, l)
		}
	}
	return `package lightapp_test

import (
	"testing"

	"example.com/lightapp/myapp"
	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

const hallSN = "0123456789abcdef0123456789abcd06"

// From the package documentation of gwsimtest.
` + strings.Join(pkgDoc, "\n") + `

// From docs/app-testing.md.
` + strings.Join(doc, "\n") + "\n", nil
}

// TestAppModuleUsesGwsimtest builds the scratch app module in a temporary
// directory (go.mod with a replace to this checkout, this checkout's go.sum
// so that nothing is fetched that the module cache lacks; GOFLAGS=-mod=mod
// and GOPROXY as the environment has them) and runs its tests: they pass,
// and its buggy app fails AssertJudgement, naming the rule. It compiles a
// module, so it is one of make test-heavy's tests.
func TestAppModuleUsesGwsimtest(t *testing.T) {
	simtest.Heavy(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(goMod)
	dir := t.TempDir()
	snippets, err := docSnippets(root)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":           "module example.com/lightapp\n\n" + string(goLine) + "\n\nrequire github.com/gwdmi/gwtools v0.0.0\n\nreplace github.com/gwdmi/gwtools => " + root + "\n",
		"lightapp.go":      appCode,
		"lightapp_test.go": appTest,
		"myapp/myapp.go":   myappCode,
		"docs_test.go":     snippets,
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	os.Mkdir(filepath.Join(dir, "myapp"), 0o755)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) (string, error) {
		cmd := exec.Command(goTool, "test", "-count=1", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -trimpath", "GOWORK=off")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err != nil {
		t.Fatalf("the app module's tests fail: %v\n%s", err, out)
	}
	if !strings.Contains(out, "ok  \texample.com/lightapp") {
		t.Errorf("go test printed:\n%s", out)
	}
	out, err = run("LIGHTAPP_BUGGY=1")
	if err == nil || !strings.Contains(out, "--- FAIL: TestBuggyApp") || !strings.Contains(out, `broke "app sent only valid requests" 1 time`) {
		t.Errorf("the buggy app's test should fail naming the rule: %v\n%s", err, out)
	}
}
