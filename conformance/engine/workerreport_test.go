package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// TestWorkerReportRoundTrip: a worker's report, handed over in gob, is
// the report it wrote: the same as it reads in JSON (states, labels,
// failures, report entries and their values, times).
func TestWorkerReportRoundTrip(t *testing.T) {
	now := time.Now()
	r := types.Report{SuiteDescription: "gwconform", SuiteSucceeded: false, StartTime: now, EndTime: now.Add(time.Second),
		SpecialSuiteFailureReasons: []string{"why"},
		SpecReports: types.SpecReports{{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: "a check", LeafNodeLabels: []string{"id:command.x.json", "must"},
			State: types.SpecStateFailed, StartTime: now, EndTime: now.Add(20 * time.Millisecond), RunTime: 20 * time.Millisecond,
			Failure: types.Failure{Message: "expected success", Location: types.CodeLocation{FileName: "x.go", LineNumber: 3},
				FailureNodeType: types.NodeTypeIt},
			ReportEntries: types.ReportEntries{{Name: "exchange", Time: now, Visibility: types.ReportEntryVisibilityNever,
				Value: types.WrapEntryValue(map[string]any{"status": 200, "body": "{\"status\":\"success\"}"})}},
			CapturedGinkgoWriterOutput: "STEP: sending\n",
		}},
	}
	b, err := encodeWorkerReport(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeWorkerReport(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(r)
	have, _ := json.Marshal(got)
	if !bytes.Equal(want, have) {
		t.Errorf("a worker's report after gob differs from the one it wrote:\n%s\n%s", want, have)
	}
	if got.SpecReports[0].ReportEntries[0].Value.AsJSON == "" || !got.SpecReports[0].State.Is(types.SpecStateFailed) {
		t.Errorf("report entry or state lost: %+v", got.SpecReports[0])
	}
}

// TestWorkerReportMaskedByValue: what a worker hands over is masked by
// the values it knows (the signs it computed), in failures, report
// entries and captured output, and still decodes.
func TestWorkerReportMaskedByValue(t *testing.T) {
	const sign = "0123456789abcdef0123456789abcdef"
	r := types.Report{SpecReports: types.SpecReports{{
		LeafNodeType: types.NodeTypeIt, State: types.SpecStateFailed,
		Failure:                    types.Failure{Message: "the target said you sent " + sign},
		ReportEntries:              types.ReportEntries{{Name: "exchange", Value: types.WrapEntryValue(map[string]any{"body": "echo " + sign})}},
		CapturedGinkgoWriterOutput: "sent " + sign,
	}}}
	maskWorkerReport(&r, func(s string) string { return strings.ReplaceAll(s, sign, "<SIGNATURE>") })
	b, err := encodeWorkerReport(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeWorkerReport(b)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(got)
	if bytes.Contains(all, []byte(sign)) || !bytes.Contains(all, []byte("SIGNATURE")) {
		t.Errorf("the worker's report still holds the sign, or lost its entries:\n%s", all)
	}
}
