package main

import "testing"

func TestCheckArgs(t *testing.T) {
	for _, ok := range [][]string{
		{"run"},
		{"run", "--target", "https://staging.example.com", "--fleet", "fleet.yaml", "--report-dir", "reports", "--fail-on", "should"},
		{"run", "--ginkgo.label-filter=level:MUST", "--timeout", "30s", "--rate", "5"},
		{"checks"},
		{"load", "--target", "http://gwsim:8080", "--shard", "1/4", "--report-dir", "/results/shard-$(SHARD)", "--rate", "2000"},
		{"load", "merge", "--expect", "4", "--wait", "30m", "--report-dir", "/results/merged", "/results"},
		{"load", "check-acks", "acks.jsonl", "--target", "http://gwsim:8080", "--fleet", "fleet.yaml"},
		{"run", "--bundle", "b.tar.gz", "--mode", "certified", "--product", "P", "--product-version", "1", "--baseline", "b.yaml"},
		{"run", "--check", "command.*", "--skip", "*.xml", "--color", "never", "-v", "--max-requests", "100", "--rate-per-op", "2"},
		{"explore", "--duration", "5m", "--clients", "8", "--seed", "42", "--report-dir", "reports/explore"},
		{"explore", "--target", "http://127.0.0.1:18081,http://127.0.0.1:18082", "--operations", "20000"},
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
		{"load", "--shard", "4/4"},
		{"load", "--rate", "fast"},
		{"load", "merge"},
		{"load", "merge", "--expect", "x", "dir"},
		{"load", "check-acks", "acks.jsonl"},
		{"load", "check-acks", "--target", "http://x"},
		{"run", "--mode", "certified"},
		{"run", "--color", "sometimes"},
		{"run", "--bundle", "b.tar.gz", "--dry-run"},
		{"explore", "--duration", "5m", "--operations", "10"},
		{"explore", "--clients", "0"},
		// Size flags have an upper bound: no crash on allocation.
		{"load", "--concurrency", "2000000000", "--requests", "10"},
		{"explore", "--clients", "2000000000"},
		{"explore", "--sequence-length", "2000000000"},
	} {
		if err := checkArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
