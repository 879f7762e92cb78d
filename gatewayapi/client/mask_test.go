package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
)

// prefixKeys is a fleet of two accounts for Resign.
type prefixKeys map[string]string // api_key -> account

func (k prefixKeys) Secret(key string) (string, bool) {
	_, ok := k[key]
	return "secret-of-" + key, ok
}

func (k prefixKeys) KeyOf(account string) (string, bool) {
	for key, a := range k {
		if a == account {
			return key, true
		}
	}
	return "", false
}

func (k prefixKeys) KeyWithPrefix(account, prefix string) (string, bool) {
	found := ""
	for key, a := range k {
		if strings.HasPrefix(key, prefix) {
			if a == account {
				return key, true
			}
			found = key
		}
	}
	return found, found != ""
}

// TestMaskAPIKeys: every api_key in a body, in either format, shows its
// first four characters; markers and masked keys stay; a masked key is
// found again by Resign, which signs with its secret.
func TestMaskAPIKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"control":{"api_key":"fleetkey-7e21aa","x":"api_key"}}`:            `{"control":{"api_key":"flee…","x":"api_key"}}`,
		`<xml><api_key>fleetkey-7e21aa</api_key><api_key>ab</api_key></xml>`: `<xml><api_key>flee…</api_key><api_key>…</api_key></xml>`,
		`{"api_key":"<API_KEY>"} {"api_key":"flee…"} {"api_key":""}`:         `{"api_key":"<API_KEY>"} {"api_key":"flee…"} {"api_key":""}`,
		`{"api_key" : "ключ-секретный"}`:                                     `{"api_key" : "ключ…"}`,
	} {
		if got := MaskAPIKeys(in); got != want {
			t.Errorf("MaskAPIKeys(%s) = %s, want %s", in, got, want)
		}
	}
	keys := prefixKeys{"fleetkey-7e21aa": "5f3a9c0e1b2d4f6a8c0e1b2d", "fleetkey-other": "other", "otherkey": "other"}
	body := `{"control":{"api_key":"flee…","myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","timestamp":"20200101000000","sign":"<SIGNATURE>"}}`
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	out, err := Resign(context.Background(), []byte(body), keys, nil, now, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	fields := []Field{{Key: "api_key", Value: "fleetkey-7e21aa"}, {Key: "myservice_id", Value: "5f3a9c0e1b2d4f6a8c0e1b2d"}, {Key: "timestamp", Value: auth.Timestamp(now, time.UTC)}}
	sign, _ := MD5Signer{APIKey: "fleetkey-7e21aa", Secret: "secret-of-fleetkey-7e21aa"}.Sign(context.Background(), fields)
	if !strings.Contains(string(out), `"api_key":"fleetkey-7e21aa"`) || !strings.Contains(string(out), `"sign":"`+sign+`"`) {
		t.Errorf("Resign of a masked key: %s (sign %s)", out, sign)
	}
	if _, err := Resign(context.Background(), []byte(strings.Replace(body, "flee…", "zzzz…", 1)), keys, nil, now, time.UTC); err == nil || !strings.Contains(err.Error(), `no api key starting "zzzz"`) {
		t.Errorf("Resign of a key the fleet has not: %v", err)
	}
}

// TestMaskComputedSignsAsWords: a sign this process computed is masked
// wherever it stands as a word, in any case, after any separator a target
// may write; a longer word holding it, and another hex word, are left.
func TestMaskComputedSignsAsWords(t *testing.T) {
	sign, _ := MD5Signer{APIKey: "mask-key", Secret: "mask-secret"}.Sign(context.Background(), []Field{{Key: "timestamp", Value: "20260102030405"}})
	for in, want := range map[string]string{
		"sig=" + sign + ";":                      "sig=" + SignMarker + ";",
		"'sign':'" + strings.ToUpper(sign) + "'": "'sign':'" + SignMarker + "'",
		"x" + sign:                               "x" + sign,
		"0123456789abcdef0123456789abcdef":       "0123456789abcdef0123456789abcdef",
	} {
		if got := MaskComputedSigns(in); got != want {
			t.Errorf("MaskComputedSigns(%q) = %q, want %q", in, got, want)
		}
	}
}
