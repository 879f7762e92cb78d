package main

import "testing"

func TestCheckArgsStandIn(t *testing.T) {
	for _, ok := range [][]string{
		{"run"},
		{"run", "--target", "https://staging.example.com", "--fleet", "fleet.yaml", "--report-dir", "reports", "--fail-on", "should"},
		{"run", "--ginkgo.label-filter=level:MUST", "--timeout", "30s", "--rate", "5"},
		{"checks"},
	} {
		if err := checkArgs(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{
		{},
		{"run", "--tagret", "x"},
		{"run", "--fail-on", "may"},
		{"run", "--timeout", "soon"},
		{"run", "extra"},
		{"certify"},
	} {
		if err := checkArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
