package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// startSim starts the embedded target as gwconform does.
func startSim(t *testing.T, f *fleet.Fleet) Embedded {
	t.Helper()
	sim, err := startSimulator(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

// gwconform load takes --target repeated and comma-separated, writes the
// ack log, and names the flag of each bad value.
func TestLoadTargetsAndAckLog(t *testing.T) {
	f := fleet.Generate(1, 1, 4)
	sim := startSim(t, f)
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	fh, err := os.Create(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteYAML(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	ackFile := filepath.Join(dir, "acks.jsonl")
	var out, errOut bytes.Buffer
	code := loadCmd(context.Background(), []string{"--target", sim.URL(), "--target", sim.URL() + "," + sim.URL(), "--fleet", fleetFile,
		"--requests", "60", "--ack-log", ackFile, "--quiet", "--json"}, &out, &errOut)
	if code != report.ExitPass || !strings.Contains(out.String(), `"acknowledged": 60`) || strings.Count(out.String(), `"requests": 20`) != 3 {
		t.Errorf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	b, err := os.ReadFile(ackFile)
	if err != nil || bytes.Count(b, []byte("\n")) != 60 {
		t.Errorf("ack log: %v, %d lines", err, bytes.Count(b, []byte("\n")))
	}
	// --ack-log makes its folder, as --report-dir does.
	nested := filepath.Join(dir, "new", "folder", "acks.jsonl")
	if code := loadCmd(context.Background(), []string{"--target", sim.URL(), "--fleet", fleetFile, "--requests", "4", "--ack-log", nested, "--quiet"}, &out, &errOut); code != report.ExitPass {
		t.Errorf("--ack-log in a folder to make: exit %d\n%s", code, errOut.String())
	}
	if b, err := os.ReadFile(nested); err != nil || bytes.Count(b, []byte("\n")) != 4 {
		t.Errorf("--ack-log in a folder to make: %v, %q", err, b)
	}
	sign := auth.Sign(f.Accounts[0].APIKeys[0].Key, f.Accounts[0].APIKeys[0].Secret, auth.Timestamp(time.Now(), f.Location()))
	if bytes.Contains(b, []byte(f.Accounts[0].APIKeys[0].Key)) || bytes.Contains(b, []byte(sign[:16])) {
		t.Error("the ack log holds the api key or a sign")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "ftp://x", "--requests", "1"}, `--target "ftp://x"`},
		{[]string{"--target", sim.URL() + ",", "--requests", "1"}, "-target"},
		{[]string{"--target", sim.URL(), "--target", "http://127.0.0.1:1", "--requests", "1"}, "--target http://127.0.0.1:1 unreachable"},
		{[]string{"--target", sim.URL(), "--requests", "1", "--ack-log", filepath.Join(fleetFile, "acks.jsonl")}, "--ack-log"},
		{[]string{"--target", sim.URL(), "--fleet", fleetFile, "--requests", "1", "--ack-log", ackFile, "--concurrency", "5"}, "--concurrency 5 with --ack-log"},
	} {
		errOut.Reset()
		if code := loadCmd(context.Background(), c.args, &out, &errOut); code != report.ExitConfig || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want 2 and %q in:\n%s", c.args, code, c.want, errOut.String())
		}
	}
}

func TestLoadExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{
		{"--concurrency", "0"},
		{"--format", "yaml"},
		{"--mix", "command=x"},
		{"--mix", "command=0"},
		{"--via", "carrier-pigeon"},
		{"--duration", "0"},
		{"--fleet", "/nonexistent.yaml"},
		{"--target", "http://127.0.0.1:1", "--requests", "1"},
		{"extra"},
	} {
		if code := loadCmd(context.Background(), args, &out, &errOut); code != report.ExitConfig {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	if code := loadCmd(context.Background(), []string{"-h"}, &out, &errOut); code != report.ExitPass {
		t.Errorf("-h: exit %d", code)
	}
	// Every answer but success is an error: exit 1.
	rejecter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"status":"error","error":{"code":"bad_signature","field":"sign","message":"no"}}`)
	}))
	defer rejecter.Close()
	out.Reset()
	if code := loadCmd(context.Background(), []string{"--target", rejecter.URL, "--requests", "30", "--quiet"}, &out, &errOut); code != report.ExitFail || !strings.Contains(out.String(), "401 bad_signature") {
		t.Errorf("a target that refuses everything: exit %d, want 1\n%s", code, out.String())
	}
	out.Reset()
	errOut.Reset()
	code := loadCmd(context.Background(), []string{"--requests", "50", "--json"}, &out, &errOut)
	if code != report.ExitPass || !strings.Contains(out.String(), `"requests": 50`) || !strings.Contains(errOut.String(), "in-process") {
		t.Errorf("embedded: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// runLoad runs the gwconform binary with args and returns its exit code,
// stdout and stderr.
func runLoad(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.gwconform, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("gwconform %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// Four shards of one load, each a gwconform process, against one gwsim:
// they share no device, each writes its result and ack log, load merge
// combines the results (counts add up; the merged percentiles lie within
// the shards'; every shard a series), and check-acks finds every
// acknowledged change in place, and a change made behind the load's back.
func TestLoadFourShardsMergedAndAcksChecked(t *testing.T) {
	t.Parallel()
	const token = "shard-admin-token-5b1-0a1b2c3d4e5f6789"
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	fh, err := os.Create(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.Fleet().WriteYAML(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	sim := simtest.Serve(t, bins.gwsim, "--fleet", fleetFile, "--admin-token", token)

	type shardRun struct {
		code        int
		out, stderr string
	}
	runs := make([]shardRun, 4)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"load", "--target", sim.URL, "--fleet", fleetFile, "--rate", "400", "--duration", "2s",
				"--concurrency", "2", "--quiet", "--mix", "command=2,rename=1,message=1",
				"--ack-log", filepath.Join(dir, fmt.Sprintf("acks-%d.jsonl", i)), "--report-dir", filepath.Join(dir, "results", fmt.Sprintf("shard-%d", i))}
			var env []string
			if i == 3 { // the last as a Kubernetes Indexed Job would start it
				env = []string{"JOB_COMPLETION_INDEX=3", "GWCONFORM_SHARDS=4"}
			} else {
				args = append(args, "--shard", fmt.Sprintf("%d/4", i))
			}
			runs[i].code, runs[i].out, runs[i].stderr = runLoad(t, env, args...)
		}()
	}
	wg.Wait()
	shards := make([]load.Result, 4)
	owner := map[string]int{}
	for i, r := range runs {
		if r.code != report.ExitPass {
			t.Fatalf("shard %d: exit %d\n%s%s", i, r.code, r.out, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, "results", fmt.Sprintf("shard-%d", i), load.ReportJSON))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &shards[i]); err != nil {
			t.Fatal(err)
		}
		if shards[i].Shard != fmt.Sprintf("%d/4", i) || shards[i].Rate != 100 || shards[i].Requests < 100 {
			t.Errorf("shard %d: %q, rate %v, %d requests", i, shards[i].Shard, shards[i].Rate, shards[i].Requests)
		}
		fh, err := os.Open(filepath.Join(dir, fmt.Sprintf("acks-%d.jsonl", i)))
		if err != nil {
			t.Fatal(err)
		}
		entries, err := load.ReadAckLog(fh)
		fh.Close()
		if err != nil || int64(len(entries)) != shards[i].Acknowledged {
			t.Fatalf("ack log %d: %d lines, %v", i, len(entries), err)
		}
		for _, e := range entries {
			if e.SN == "" {
				continue
			}
			if o, ok := owner[e.MAC+"/"+e.SN]; ok && o != i {
				t.Fatalf("device %s/%s sent to by shards %d and %d", e.MAC, e.SN, o, i)
			}
			owner[e.MAC+"/"+e.SN] = i
		}
	}

	code, out, stderr := runLoad(t, nil, "load", "merge", "--report-dir", filepath.Join(dir, "merged"), filepath.Join(dir, "results"))
	if code != report.ExitPass || !strings.Contains(out, "shard 3/4") {
		t.Fatalf("merge: exit %d\n%s%s", code, out, stderr)
	}
	var merged load.Result
	b, err := os.ReadFile(filepath.Join(dir, "merged", load.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &merged); err != nil {
		t.Fatal(err)
	}
	var requests, answered int64
	minP99, maxP99 := time.Duration(1<<62), time.Duration(0)
	for _, s := range shards {
		requests += s.Requests
		answered += s.Series[load.SeriesAll].Latency.Count()
		minP99, maxP99 = min(minP99, s.Latency.P99), max(maxP99, s.Latency.P99)
	}
	if merged.Requests != requests || merged.Series[load.SeriesAll].Latency.Count() != answered || len(merged.Shards) != 4 {
		t.Errorf("merged: %d requests, %d latencies, %d shards; the shards: %d, %d", merged.Requests,
			merged.Series[load.SeriesAll].Latency.Count(), len(merged.Shards), requests, answered)
	}
	// A percentile of all the requests lies between the shards' own.
	if p := merged.Latency.P99; p < minP99 || p > maxP99 {
		t.Errorf("merged p99 %s outside the shards' %s to %s", p, minP99, maxP99)
	}
	for i := range 4 {
		if s := merged.Series[fmt.Sprintf("shard:%d/4", i)]; s == nil || s.Requests != shards[i].Requests {
			t.Errorf("series of shard %d/4: %+v", i, s)
		}
	}
	if h, err := os.ReadFile(filepath.Join(dir, "merged", load.ReportHTML)); err != nil || !bytes.Contains(h, []byte("shard:3/4")) {
		t.Errorf("merged report.html: %v", err)
	}
	// Merged again with the merge inside the directory: the merge is left out.
	code, out, stderr = runLoad(t, nil, "load", "merge", "--report-dir", filepath.Join(dir, "results", "merged"), filepath.Join(dir, "results"))
	code2, out2, stderr2 := runLoad(t, nil, "load", "merge", filepath.Join(dir, "results"))
	if code != report.ExitPass || code2 != report.ExitPass || out2 != strings.ReplaceAll(out, "\n  report      "+filepath.Join(dir, "results", "merged", load.ReportHTML), "") ||
		!strings.Contains(stderr2, "is a merge, not a shard: left out") {
		t.Errorf("merged twice: exit %d then %d\n%s%s\n%s%s", code, code2, out, stderr, out2, stderr2)
	}
	// Three of the four: merged, but it says a shard is missing (exit 1).
	code, _, stderr = runLoad(t, nil, "load", "merge", filepath.Join(dir, "results", "shard-0"), filepath.Join(dir, "results", "shard-1"),
		filepath.Join(dir, "results", "shard-2", load.ReportJSON))
	if code != report.ExitFail || !strings.Contains(stderr, "shard 3/4 of the load missing") {
		t.Errorf("three shards: exit %d\n%s", code, stderr)
	}

	// Every acknowledged change is in place.
	for i := range 4 {
		code, out, stderr := runLoad(t, []string{"GWSIM_ADMIN_TOKEN=" + token}, "load", "check-acks",
			filepath.Join(dir, fmt.Sprintf("acks-%d.jsonl", i)), "--target", sim.URL, "--fleet", fleetFile)
		if code != report.ExitPass || !strings.Contains(out, "every acknowledged change is there") {
			t.Errorf("check-acks %d: exit %d\n%s%s", i, code, out, stderr)
		}
		if strings.Contains(out+stderr, token) {
			t.Error("check-acks shows the admin token")
		}
	}
	// Uncertain (503) and unanswered lines are counted apart, and neither
	// is a mismatch: the last acknowledged line repeated with each status.
	{
		log0 := filepath.Join(dir, "acks-0.jsonl")
		b, err := os.ReadFile(log0)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var e load.AckEntry
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
			t.Fatal(err)
		}
		for _, st := range []string{load.AckUncertain, load.AckNoAnswer, load.AckUncertain} {
			e.Seq++
			e.Status, e.Error = st, "503 storage_unavailable"
			l, _ := json.Marshal(e)
			lines = append(lines, string(l))
		}
		mixed := filepath.Join(dir, "mixed.jsonl")
		os.WriteFile(mixed, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		code, out, stderr := runLoad(t, nil, "load", "check-acks", mixed, "--target", sim.URL, "--admin-token", token)
		want := fmt.Sprintf("(%d acknowledged, 2 uncertain (503), 1 sent without an answer)", len(lines)-3)
		if code != report.ExitPass || !strings.Contains(out, want) {
			t.Errorf("check-acks of a log with uncertain and unanswered lines: exit %d, want %q in\n%s%s", code, want, out, stderr)
		}
	}
	// A rename behind the load's back is a lost change: exit 1, naming
	// the device, what was expected and what is there.
	var renamed string
	for key, i := range owner {
		mac, sn, _ := strings.Cut(key, "/")
		if mac != simtest.MACA {
			continue
		}
		c := simtest.NewClient(t, sim.URL)
		c.Send(device.UpdateName, device.JSON, append(c.Envelope(), simtest.S(device.FieldSN, sn), simtest.S(device.FieldName, "Renamed elsewhere"))).OK(t, device.JSON)
		code, out, _ := runLoad(t, nil, "load", "check-acks", filepath.Join(dir, fmt.Sprintf("acks-%d.jsonl", i)), "--target", sim.URL, "--admin-token", token)
		if code != report.ExitFail || !strings.Contains(out, "MISMATCH "+key+" name: expected ") || !strings.Contains(out, `got "Renamed elsewhere"`) {
			t.Errorf("a device renamed behind the load's back: exit %d\n%s", code, out)
		}
		renamed = key
		break
	}
	if renamed == "" {
		t.Fatal("no device of gateway MACA in the ack logs")
	}
}

// check-acks: exit 2 when the check cannot be made, naming why.
func TestCheckAcksArguments(t *testing.T) {
	const token = "acks-admin-token-77-0a1b2c3d4e5f6789"
	sim := simtest.Serve(t, bins.gwsim, "--admin-token", token)
	dir := t.TempDir()
	acks := filepath.Join(dir, "acks.jsonl")
	line := `{"seq":1,"status":"acked","op":"update_name","format":"json","target":"x","account":"a","mac":"m1","sn":"s1","name":"N","time":"2026-01-01T00:00:00Z"}` + "\n"
	if err := os.WriteFile(acks, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{not json\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{acks}, "--target URL is required"},
		{[]string{"--target", sim.URL}, "name the ack log"},
		{[]string{acks, "--target", "ftp://x"}, `--target "ftp://x"`},
		{[]string{acks, "--target", sim.URL + "," + sim.URL}, "one URL"},
		{[]string{filepath.Join(dir, "none.jsonl"), "--target", sim.URL}, "none.jsonl"},
		{[]string{bad, "--target", sim.URL}, "ack log line 1"},
		{[]string{acks, "--target", "http://127.0.0.1:1", "--admin-token", token}, "connection refused"},
		{[]string{acks, "--target", sim.URL}, "answered 401: give its --admin-token"},
		{[]string{acks, "--target", sim.URL, "--admin-token", "wrong-token-123"}, "answered 401"},
		{[]string{acks, "--target", sim.URL, "--admin-token", token, "--fleet", "../../fixtures/demo-fleet.yaml"}, "device m1/s1, which the fleet"},
		{[]string{acks, "extra", "--target", sim.URL}, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		code := loadCmd(context.Background(), append([]string{"check-acks"}, c.args...), &out, &errOut)
		if code != report.ExitConfig || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want 2 and %q in:\n%s%s", c.args, code, c.want, out.String(), errOut.String())
		}
		if strings.Contains(errOut.String(), "wrong-token-123") || strings.Contains(errOut.String(), token) {
			t.Errorf("%v: the token is shown", c.args)
		}
	}
	// A device the target does not know is a mismatch, not an error.
	var out, errOut bytes.Buffer
	code := loadCmd(context.Background(), []string{"check-acks", acks, "--target", sim.URL, "--admin-token", token}, &out, &errOut)
	if code != report.ExitFail || !strings.Contains(out.String(), `MISMATCH m1/s1 device: expected "present", got "(no such device)"`) {
		t.Errorf("unknown device: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// Without --shard, the Indexed Job's variables set it; one without the
// other is an error naming the missing one.
func TestLoadShardFromJobEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, nil, "$GWCONFORM_SHARDS is not set"},
		{map[string]string{"GWCONFORM_SHARDS": "4"}, nil, "$JOB_COMPLETION_INDEX is not set"},
		{map[string]string{"JOB_COMPLETION_INDEX": "4", "GWCONFORM_SHARDS": "4"}, nil, "0 <= I < N"},
		{nil, []string{"--shard", "2"}, "--shard"},
		{nil, []string{"--shard", "-1/3"}, "--shard"},
		{nil, []string{"--shard", "0/9"}, "9 shards, 8 devices"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		code := loadCmd(context.Background(), append([]string{"--requests", "10", "--quiet"}, c.args...), &out, &errOut)
		if code != report.ExitConfig || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v %v: exit %d, want 2 and %q in:\n%s", c.env, c.args, code, c.want, errOut.String())
		}
		for k := range c.env {
			os.Unsetenv(k)
		}
	}
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	t.Setenv("GWCONFORM_SHARDS", "2")
	var out, errOut bytes.Buffer
	if code := loadCmd(context.Background(), []string{"--requests", "11", "--quiet", "--json"}, &out, &errOut); code != report.ExitPass ||
		!strings.Contains(out.String(), `"shard": "1/2"`) || !strings.Contains(out.String(), `"requests": 5,`) {
		t.Errorf("from the Job's variables: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// load merge --expect, started beside the shards, waits for their results
// and leaves out an earlier load's left on the volume.
func TestLoadMergeExpectWaitsForThisLoad(t *testing.T) {
	t.Parallel()
	f := fleet.Generate(1, 1, 4)
	sim := startSim(t, f)
	dir := t.TempDir()
	shard := func(i int, requests int64) *load.Result {
		res, err := load.Run(context.Background(), load.Config{Target: sim.URL(), Fleet: f, Requests: requests, Shard: i, Shards: 2})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// An earlier load's shard 0, written an hour ago, in a directory of its own.
	old := filepath.Join(dir, "earlier", "shard-0")
	if err := load.WriteReport(old, shard(0, 50)); err != nil {
		t.Fatal(err)
	}
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(old, load.ReportJSON), hourAgo, hourAgo)

	done := make(chan int)
	var out, errOut bytes.Buffer
	go func() {
		done <- loadCmd(context.Background(), []string{"merge", "--expect", "2", "--wait", "20s", "--json", dir, filepath.Join(dir, "earlier")}, &out, &errOut)
	}()
	for i := range 2 {
		if err := load.WriteReport(filepath.Join(dir, fmt.Sprintf("shard-%d", i)), shard(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if code := <-done; code != report.ExitPass {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	var merged load.Result
	if err := json.Unmarshal(out.Bytes(), &merged); err != nil || merged.Requests != 10 || len(merged.Shards) != 2 {
		t.Errorf("merged %d requests of %d shards (want 10 of 2): %v", merged.Requests, len(merged.Shards), err)
	}
	// Not there in time: exit 2, saying how many came.
	out.Reset()
	errOut.Reset()
	if code := loadCmd(context.Background(), []string{"merge", "--expect", "1", "--wait", "1s", filepath.Join(dir, "earlier")}, &out, &errOut); code != report.ExitConfig ||
		!strings.Contains(errOut.String(), "0 of the 1 results expected") {
		t.Errorf("exit %d\n%s", code, errOut.String())
	}
}

// A shard that cannot run (here: 16 workers with an ack log over 4 shards
// of the demo fleet's 8 devices, as the Kubernetes load Job met the stack's
// fleet)
// exits 2 and writes load.failed in its --report-dir; a merge waiting for
// the shards (--expect 4 --wait 30m, as the merge Job waits) ends at once
// with exit 1 and that reason, not after half an hour. With
// --concurrency-fit the same shards run, one worker per device they own,
// and the merge of their results passes.
func TestLoadShardFailureEndsTheMergesWait(t *testing.T) {
	t.Parallel()
	f := fleet.Demo()
	sim := startSim(t, f)
	dir := t.TempDir()
	shardArgs := func(i int, fit bool) []string {
		args := []string{"--target", sim.URL(), "--shard", fmt.Sprintf("%d/4", i), "--concurrency", "16", "--requests", "40", "--quiet",
			"--ack-log", filepath.Join(dir, fmt.Sprintf("acks-%d.jsonl", i)), "--report-dir", filepath.Join(dir, fmt.Sprintf("shard-%d", i))}
		if fit {
			args = append(args, "--concurrency-fit")
		}
		return args
	}
	done := make(chan int)
	var mergeOut, mergeErr bytes.Buffer
	began := time.Now()
	go func() {
		done <- loadCmd(context.Background(), []string{"merge", "--expect", "4", "--wait", "30m", dir}, &mergeOut, &mergeErr)
	}()
	var out, errOut bytes.Buffer
	if code := loadCmd(context.Background(), shardArgs(2, false), &out, &errOut); code != report.ExitConfig ||
		!strings.Contains(errOut.String(), "no more workers than devices") {
		t.Fatalf("a shard of 16 workers on 7 devices: exit %d (want 2, and why)\n%s", code, errOut.String())
	}
	if strings.Count(errOut.String(), "gwconform load:") != 1 {
		t.Errorf("the reason said more than once (or an error writing load.failed):\n%s", errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "shard-2", "load.failed"))
	if err != nil || !strings.Contains(string(b), "--concurrency 16 with --ack-log over 4 shards") {
		t.Errorf("shard-2/load.failed: %q %v", b, err)
	}
	select {
	case code := <-done:
		if code != report.ExitFail || !strings.Contains(mergeErr.String(), "shard-2: the shard could not run: --concurrency 16") {
			t.Errorf("the merge: exit %d (want 1, naming the shard and why)\n%s", code, mergeErr.String())
		}
		t.Logf("the merge ended %s after it started", time.Since(began).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the merge still waits 10 s after a shard failed")
	}

	// Sized to the fleet: the same shards run, and merge (a later load:
	// the failure above is an hour old).
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "shard-2", "load.failed"), hourAgo, hourAgo)
	go func() {
		mergeOut.Reset()
		mergeErr.Reset()
		done <- loadCmd(context.Background(), []string{"merge", "--expect", "4", "--wait", "1m", "--json", dir}, &mergeOut, &mergeErr)
	}()
	time.Sleep(50 * time.Millisecond)
	for i := range 4 {
		out.Reset()
		errOut.Reset()
		if code := loadCmd(context.Background(), append(shardArgs(i, true), "--json"), &out, &errOut); code != report.ExitPass {
			t.Fatalf("shard %d with --concurrency-fit: exit %d\n%s%s", i, code, out.String(), errOut.String())
		}
		var res load.Result
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Concurrency != 2 || res.Acknowledged != res.Requests {
			t.Errorf("shard %d: %d workers (want 2: 8 devices over 4 shards), %d of %d acknowledged, %v", i, res.Concurrency, res.Acknowledged, res.Requests, err)
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("shard-%d", i), "load.failed")); err == nil {
			t.Errorf("shard %d: an earlier run's load.failed left beside its result", i)
		}
	}
	if code := <-done; code != report.ExitPass {
		t.Errorf("the merge of the fitted shards: exit %d\n%s", code, mergeErr.String())
	}
}

// pausable is a target that stops answering while paused, without
// refusing connections (a process stopped with SIGSTOP, a partition): the
// requests wait, then are answered when it resumes.
type pausable struct {
	mu     sync.Mutex
	resume chan struct{} // closed when not paused
}

func (p *pausable) wait() {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	<-ch
}

func (p *pausable) pause() {
	p.mu.Lock()
	p.resume = make(chan struct{})
	p.mu.Unlock()
}

func (p *pausable) unpause() {
	p.mu.Lock()
	close(p.resume)
	p.mu.Unlock()
}

// A target stalled for 2 s of a 4 s load at 100/s answers every request
// in the end, so there is no error; the run still shows the stall: an
// outage (stalled, then answering again) in load.json's events, in the
// summary with its length, and in report.html; the summary gives the
// share of the schedule not sent; --max-not-sent 5% fails the run (exit
// 1, saying by how much), and without it the run passes.
func TestLoadShowsAStall(t *testing.T) {
	t.Parallel()
	sim := startSim(t, fleet.Demo())
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// Each run has a front of its own, which stalls 1 s after it starts
	// for 2 s: the two runs go side by side.
	run := func(extra ...string) (int, string, string, string) {
		p := &pausable{resume: make(chan struct{})}
		close(p.resume)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.wait()
			proxy.ServeHTTP(w, r)
		}))
		defer front.Close()
		dir := t.TempDir()
		go func() {
			time.Sleep(time.Second)
			p.pause()
			time.Sleep(2 * time.Second)
			p.unpause()
		}()
		var out, errOut bytes.Buffer
		code := loadCmd(context.Background(), append([]string{"--target", front.URL, "--rate", "100", "--duration", "4s", "--concurrency", "4",
			"--quiet", "--report-dir", dir}, extra...), &out, &errOut)
		return code, out.String(), errOut.String(), dir
	}

	type outcome struct {
		code             int
		out, errOut, dir string
	}
	capped := make(chan outcome, 1)
	go func() {
		code, out, errOut, dir := run("--max-not-sent", "5%")
		capped <- outcome{code, out, errOut, dir}
	}()
	code, out, errOut, dir := run()
	if code != report.ExitPass {
		t.Errorf("without a threshold: exit %d (every request was answered)\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, load.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var res load.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range res.Events {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != load.EventStalled+","+load.EventAnswering || res.Errors != 0 {
		t.Errorf("events %v, %d errors (want a stall and its end, no error)", kinds, res.Errors)
	}
	if len(res.Events) == 2 {
		if d := res.Events[1].Time.Sub(res.Events[0].Time); d < 1500*time.Millisecond || d > 3*time.Second {
			t.Errorf("the stall lasted %s by its events; it was 2 s", d)
		}
	}
	share := res.NotSentShare()
	if share < 0.2 || share > 0.7 {
		t.Errorf("%.1f%% of the schedule not sent (%d); a 2 s stall of 4 s leaves about half", 100*share, res.NotSent)
	}
	for _, want := range []string{"outages", "answered nothing for 1s", fmt.Sprintf("%.1f%% of the schedule", 100*share)} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, load.ReportHTML))
	if !strings.Contains(string(html), "answered nothing for 1s") {
		t.Error("report.html does not show the stall")
	}

	c := <-capped
	code, out, errOut = c.code, c.out, c.errOut
	if code != report.ExitFail || !strings.Contains(errOut, "of the schedule not sent") || !strings.Contains(errOut, "above --max-not-sent 5%") {
		t.Errorf("--max-not-sent 5%%: exit %d (want 1, and why)\n%s%s", code, out, errOut)
	}
	var stderr bytes.Buffer
	if code := loadCmd(context.Background(), []string{"--max-not-sent", "lots", "--requests", "1"}, io.Discard, &stderr); code != report.ExitConfig || !strings.Contains(stderr.String(), "max-not-sent") {
		t.Errorf("--max-not-sent lots: exit %d\n%s", code, stderr.String())
	}
}

// Through an outage that still answers (a store lost: every change 503
// storage_unavailable for 2 s), the latency over time has a point in every
// second: load.json's buckets of the outage hold the 503s and their
// latency, so the report's latency chart is not blank there.
func TestLoadLatencyThroughAnOutage(t *testing.T) {
	t.Parallel()
	sim := startSim(t, fleet.Demo())
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var outFrom, outTo time.Time
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		out := !outFrom.IsZero() && now.After(outFrom) && now.Before(outTo)
		mu.Unlock()
		if out {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"error","error":{"code":"storage_unavailable","message":"the shared store (Redis) cannot be reached"}}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	mu.Lock()
	outFrom, outTo = time.Now().Add(time.Second), time.Now().Add(3*time.Second)
	mu.Unlock()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	loadCmd(context.Background(), []string{"--target", front.URL, "--rate", "50", "--duration", "4s", "--format", "json", "--quiet", "--report-dir", dir}, &out, &errOut)
	b, err := os.ReadFile(filepath.Join(dir, load.ReportJSON))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var res load.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	outage := 0
	for _, bk := range res.Timeline.Buckets {
		all := bk.Series[load.SeriesAll]
		if all == nil || all.Status[503] == 0 {
			continue
		}
		outage++
		if all.Latency.Count() == 0 {
			t.Errorf("the bucket at %s holds %d answers 503 and no latency", bk.Start.Format(time.TimeOnly), all.Status[503])
		}
	}
	if outage == 0 {
		t.Fatalf("no bucket with a 503:\n%s", out.String())
	}
}
