package deploy

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// chartAppVersion is the chart's appVersion: the version of the image
// every recipe runs.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion: *(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return string(m[1])
}

// TestImageVersionsAgree: the image make image builds is tagged with the
// chart's appVersion (its VERSION default reads it), which is the tag
// deploy/k8s-image gives every kustomization and the chart's default
// image tag; the Makefile passes VERSION and COMMIT to the Dockerfile,
// which stamps them into both programs.
func TestImageVersionsAgree(t *testing.T) {
	v := chartAppVersion(t)
	if tag := imageTag(t); tag != v {
		t.Errorf("deploy/k8s-image's newTag %s, the chart's appVersion %s: make image builds the latter", tag, v)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VERSION ?= $(shell sed -n 's/^appVersion: *//p' deploy/helm/gwsim/Chart.yaml)",
		"--build-arg VERSION=$(VERSION)", "--build-arg COMMIT=", "-t $(IMAGE):$(VERSION)", "IMAGE   ?= ghcr.io/gwdmi/gwtools"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("the Makefile's image target lacks %q", want)
		}
	}
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if stampFlags(t, string(df), "v1", "c") == "" {
		t.Error("the Dockerfile stamps no version")
	}
}

// stampFlags is the Dockerfile's -X flags with VERSION and COMMIT set.
func stampFlags(t *testing.T, dockerfile, version, commit string) string {
	t.Helper()
	m := regexp.MustCompile(`stamp="([^"]*)"`).FindStringSubmatch(dockerfile)
	if m == nil || !strings.Contains(m[1], "${VERSION}") || !strings.Contains(m[1], "${COMMIT}") {
		t.Fatalf("the Dockerfile's build stage sets no stamp with ${VERSION} and ${COMMIT}: %v", m)
	}
	for _, arg := range []string{"ARG VERSION", "ARG COMMIT"} {
		if !strings.Contains(dockerfile, arg) {
			t.Errorf("the Dockerfile has no %s", arg)
		}
	}
	return strings.NewReplacer("${VERSION}", version, "${COMMIT}", commit).Replace(m[1])
}

// TestStampedVersionIsReported: gwsim built with the Dockerfile's own
// -ldflags (VERSION and COMMIT as make image passes them) reports that
// version and commit in --version and in gwsim_build_info, as the image
// does; gwconform --version too.
func TestStampedVersionIsReported(t *testing.T) {
	simtest.Heavy(t)
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	const version, commit = "v9.8.7", "0123456789abcdef0123456789abcdef01234567"
	flags := stampFlags(t, string(df), version, commit)
	dir := t.TempDir()
	abs, _ := filepath.Abs(root)
	for _, prog := range []string{"gwsim", "gwconform"} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", flags, "-o", filepath.Join(dir, prog), "./cmd/"+prog)
		cmd.Dir = abs
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", prog, err, out)
		}
		out, err := exec.Command(filepath.Join(dir, prog), "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), prog+" "+version+" (commit "+commit[:12]+",") {
			t.Errorf("%s --version: %v %q (want %s, commit %s)", prog, err, out, version, commit[:12])
		}
	}
	p := simtest.Serve(t, filepath.Join(dir, "gwsim"))
	res, err := http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !regexp.MustCompile(`gwsim_build_info\{[^}]*version="`+version+`"`).Match(b) || !strings.Contains(string(b), `commit="`+commit) {
		t.Errorf("gwsim_build_info does not give %s and %s:\n%s", version, commit, regexp.MustCompile(`(?m)^gwsim_build_info.*$`).Find(b))
	}
}
