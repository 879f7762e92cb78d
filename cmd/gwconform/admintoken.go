package main

import (
	"io"

	"github.com/gwdmi/gwtools/gatewayapi/tokenrule"
)

// adminToken is gwsim's admin token as the user gave it: on the command
// line (--admin-token), or from $GWSIM_ADMIN_TOKEN.
type adminToken struct {
	value   string
	fromEnv bool
}

// adminTokenOf is the token of --admin-token, else of the environment.
func adminTokenOf(flagValue, env string) adminToken {
	t := tokenrule.Of(flagValue, env)
	return adminToken{value: t.Value, fromEnv: t.FromEnv}
}

// to decides whether the token is sent to dest, and says once on w where
// it goes (never the token), by the rule of package tokenrule: one from
// $GWSIM_ADMIN_TOKEN goes only to a loopback host or to a URL the user
// named on the command line (named: --observer), never to a target nobody
// vetted nor to a URL read from a file.
func (t adminToken) to(dest string, named bool, w io.Writer, prog string) string {
	return tokenrule.Token{Value: t.value, FromEnv: t.fromEnv}.To(dest, named, w, prog, "give --observer URL or --admin-token to send a token there")
}
