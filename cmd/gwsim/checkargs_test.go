package main

import "testing"

func TestCheckArgs(t *testing.T) {
	for _, ok := range [][]string{
		{"serve"},
		{"serve", "--addr", "0.0.0.0:8080", "--fleet", "/etc/gwsim/fleet.yaml", "--admin-token", "x", "--log-format", "json"},
		{"serve", "--seed", "3", "--gateways", "10", "--rate-limit", "50", "--reject-replays"},
		{"fleet", "--seed", "1", "--gateways", "2", "--devices-per-gateway", "6", "--out", "/tmp/never-written.yaml"},
		{"send", "command", "--type", "Light Dimmer", "--fleet", "/etc/gwsim/fleet.yaml", "dimming=40"},
		{"send", "rename", "--sn", "0123456789abcdef0123456789abcd06", "--name", "Hall", "--format", "xml"},
		{"openapi"},
	} {
		if err := checkArgs(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{
		{},
		{"server"},
		{"serve", "--adr", ":8080"},
		{"serve", "--log-level", "loud"},
		{"serve", "--rate-limit", "many"},
		{"serve", "extra"},
		{"fleet", "--gateways", "0"},
		{"send", "command", "dimming=40"},
		{"send", "message", "--format", "yaml", "a=1"},
		{"openapi", "--out", "x"},
	} {
		if err := checkArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
