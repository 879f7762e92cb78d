package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// goalReportBytes is the goal's bound on one run's report files together.
const goalReportBytes = 2_500_000

// reportFiles are the files gwconform run writes in its --report-dir.
var reportFiles = []string{"report.json", "report.html", "junit.xml"}

// ReportSize is the size of one run's report files.
type ReportSize struct {
	Name    string           `json:"name"`
	Command []string         `json:"commands"`
	Files   map[string]int64 `json:"files"`
	Total   int64            `json:"total"`
	Exit    int              `json:"exit"`
	Summary string           `json:"summary"`
}

// sizeOf adds up the report files in dir.
func sizeOf(dir string) (map[string]int64, int64, error) {
	files := map[string]int64{}
	var total int64
	for _, f := range reportFiles {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return nil, 0, err
		}
		files[f], total = st.Size(), total+st.Size()
	}
	return files, total, nil
}

// measureReportSizes measures the report files of a run against gwsim
// that refuses every message (fault injection): hundreds of failed and
// inconclusive checks, the layout's worst case short of a target that
// fails everything (which the run stops early). The suite's own runs give
// the passing run's size (SuiteRun.ReportBytes).
func (r *Report) measureReportSizes(ctx context.Context, o Options) error {
	serve := []string{filepath.Join(o.Bin, "gwsim"), "serve", "--addr", "127.0.0.1:0"}
	s, err := startServer(serve, time.Minute)
	if err != nil {
		return err
	}
	defer s.stop()
	faults := `{"operation_error_rates":{"message":1}}`
	if err := adminCall(ctx, s.url, http.MethodPut, "/_sim/faults", faults); err != nil {
		return err
	}
	dir := filepath.Join(o.Work, "refused-messages-report")
	argv := []string{filepath.Join(o.Bin, "gwconform"), "run", "--target", s.url, "--seed", "1", "--report-dir", dir}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = o.Dir
	out, err := cmd.CombinedOutput()
	rs := ReportSize{Name: "gwsim refusing every message (operation_error_rates message: 1)", Summary: suiteSummary(string(out)),
		Command: []string{strings.Join(shortArgv(serve), " ") + " &   # prints GWSIM_URL",
			`curl -X PUT -H 'Content-Type: application/json' -d '` + faults + `' GWSIM_URL/_sim/faults`,
			strings.Replace(strings.ReplaceAll(strings.Join(shortArgv(argv), " "), s.url, "GWSIM_URL"), filepath.Base(dir), "$(mktemp -d)", 1)}}
	if rs.Exit, err = exitOf(err); err != nil {
		return fmt.Errorf("gwconform run: %v: %s", err, tail(string(out)))
	}
	if rs.Files, rs.Total, err = sizeOf(dir); err != nil {
		return err
	}
	r.ReportSizes = append(r.ReportSizes, rs)
	return nil
}

// reportSizeGoal is the goals table's row of the report files' size.
func (r *Report) reportSizeGoal() (Goal, bool) {
	if r.Suite.ReportBytes == 0 {
		return Goal{}, false
	}
	g := Goal{Name: "one run's report files together (report.json, report.html, junit.xml)", Target: fmt.Sprintf("≤ %s", mb(goalReportBytes)), Known: true}
	parts := []string{fmt.Sprintf("%s against the embedded simulator (passing)", mb(r.Suite.ReportBytes))}
	largest := r.Suite.ReportBytes
	for _, rs := range r.ReportSizes {
		parts = append(parts, fmt.Sprintf("%s against %s (exit %d; %s)", mb(rs.Total), rs.Name, rs.Exit, rs.Summary))
		largest = max(largest, rs.Total)
	}
	g.Measured = strings.Join(parts, "; ") + "; a run with 350 failures: `go test -run TestReportFilesStayBounded ./cmd/gwconform`"
	g.Met = largest <= goalReportBytes
	if !g.Met {
		g.Miss = fmt.Sprintf("%s over", mb(largest-goalReportBytes))
	}
	return g, true
}

// mb writes n bytes in MB (10^6), two decimals.
func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
