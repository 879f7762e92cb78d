package clients

import (
	"fmt"
	"testing"
	"time"
)

// TestMergeIsBoundedAsOneRecorder: replicas that each saw different
// api_keys merge into at most MaxClients reports of their own (the rest,
// fewest requests first, in OtherClients, whose counts add up), each
// with at most maxCodes error codes; the counts of one key add up across
// replicas and the latest example is the latest of them.
func TestMergeIsBoundedAsOneRecorder(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	mk := func(id string, requests uint64, at time.Time, codes ...string) Client {
		c := Client{Client: id[:4] + "…", ID: id, First: at, Last: at, Requests: requests, Coverage: []Coverage{{Operation: "command", Format: "json", Sent: requests, Succeeded: requests}},
			Skew: &Skew{Samples: requests, LastSeconds: int64(at.Second()), MinSeconds: -1, MaxSeconds: 1}}
		for _, j := range judgements {
			c.Judgements = append(c.Judgements, Judgement{ID: j.id, Name: j.name, Passed: true})
		}
		for _, code := range codes {
			c.Errors = append(c.Errors, ErrorCount{Code: code, Status: 400, Count: 1, Latest: Example{Time: at, Message: "at " + at.String()}})
		}
		return c
	}
	var codes []string
	for i := 0; i < 2*maxCodes; i++ {
		codes = append(codes, fmt.Sprintf("c%03d", i))
	}
	a := []Client{mk("aaaa0001", 10, t0, codes[:maxCodes]...), mk("bbbb0002", 1, t0)}
	b := []Client{mk("aaaa0001", 5, t0.Add(time.Second), codes[maxCodes/2:]...), mk("cccc0003", 3, t0)}
	got := merge([][]Client{a, b}, 2)
	if len(got) != 3 || got[2].Client != OtherClients {
		t.Fatalf("merged: %+v", got)
	}
	if got[0].ID != "aaaa0001" || got[1].ID != "cccc0003" {
		t.Errorf("kept %s and %s, want the two with the most requests", got[0].ID, got[1].ID)
	}
	one := got[0]
	if one.Requests != 15 || one.Coverage[0].Sent != 15 || one.Skew.Samples != 15 || one.Skew.LastSeconds != 1 || !one.Last.Equal(t0.Add(time.Second)) || !one.First.Equal(t0) {
		t.Errorf("merged counts: %+v", one)
	}
	if len(one.Errors) > maxCodes+1 { // maxCodes, "other" among them
		t.Errorf("%d error codes", len(one.Errors))
	}
	var total uint64
	for _, e := range one.Errors {
		total += e.Count
		if e.Code == codes[maxCodes/2] && (e.Count != 2 || !e.Latest.Time.Equal(t0.Add(time.Second))) {
			t.Errorf("a code both replicas saw: %+v", e)
		}
	}
	if total != uint64(maxCodes+maxCodes+maxCodes/2) {
		// Every error counted once: a's maxCodes and b's 1.5 maxCodes.
		t.Errorf("errors add up to %d", total)
	}
	if got[2].Requests != 1 {
		t.Errorf("other clients: %+v", got[2])
	}
}
