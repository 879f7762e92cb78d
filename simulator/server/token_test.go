package server

import (
	"strings"
	"testing"
)

func TestCheckAdminToken(t *testing.T) {
	for _, tc := range []struct {
		token, want string
	}{
		{"", ""},
		{"3f9c2a7d1e6b4058a9c3d2e1f0b7a6c5", ""},
		{"change-me-to-a-long-random-token", "placeholder"},
		{"CHANGE-ME-TO-A-LONG-RANDOM-TOKEN-please", "placeholder"},
		{"doc-example-token-123456789012345678", "placeholder"},
		{"short-but-random-9f3a", "at least 32"},
		{strings.Repeat("ab", 20), "different characters"},
		{"3f9c2a7d1e6b4058 a9c3d2e1f0b7a6c5", "space"},
	} {
		err := CheckAdminToken(tc.token)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want it taken", tc.token, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error saying %q", tc.token, err, tc.want)
		case err != nil && len(tc.token) > 8 && strings.Contains(err.Error(), tc.token):
			t.Errorf("the error repeats the token: %v", err)
		}
	}
}
