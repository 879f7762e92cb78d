package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A wildcard listen address (every interface) prints a URL to open, with
// the loopback for its host, not http://[::]:PORT or http://0.0.0.0:PORT,
// and says that it listens on every interface; the URL answers. In text
// and in --log-format json.
func TestWildcardAddressPrintsAUsableURL(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		url, out, _, _ := serve(t, "--addr", addr, "--admin-token", testToken)
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Errorf("--addr %s: the banner's URL is %s", addr, url)
		}
		if !strings.Contains(out.String(), "listening on every interface (") {
			t.Errorf("--addr %s: the banner does not say it listens on every interface:\n%s", addr, out.String())
		}
		resp, err := http.Get(url + "/_sim/health")
		if err != nil {
			t.Errorf("--addr %s: %s does not answer: %v", addr, url, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("--addr %s: %s/_sim/health: %d", addr, url, resp.StatusCode)
		}
	}
	_, out, _, _ := serve(t, "--addr", ":0", "--admin-token", testToken, "--log-format", "json")
	var banner struct{ URL, Listen string }
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &banner); err != nil || !strings.HasPrefix(banner.URL, "http://127.0.0.1:") || banner.Listen == "" {
		t.Errorf("json banner: %v %+v\n%s", err, banner, line)
	}
	// A named address is printed as it is.
	if url, out, _, _ := serve(t); !strings.HasPrefix(url, "http://127.0.0.1:") || strings.Contains(out.String(), "every interface") {
		t.Errorf("--addr 127.0.0.1:0: %s\n%s", url, out.String())
	}
}
