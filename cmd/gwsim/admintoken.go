package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/simulator/server"
)

// tokenOnCommandLine is the warning for --admin-token given as a flag:
// every user of the machine sees a command line (ps, /proc).
const tokenOnCommandLine = "--admin-token on the command line is visible to every user of this machine (ps, /proc/PID/cmdline): give it in $GWSIM_ADMIN_TOKEN or --admin-token-file FILE instead"

// adminToken is the admin token of gwsim serve or proxy: from
// --admin-token-file (its first line), else --admin-token (onCommandLine:
// the caller warns), else $GWSIM_ADMIN_TOKEN; checked by
// server.CheckAdminToken. Errors never repeat it.
func adminToken(flagValue, file string) (token string, onCommandLine bool, err error) {
	switch {
	case file != "" && flagValue != "":
		return "", false, errors.New("--admin-token and --admin-token-file: give one")
	case file != "":
		b, err := safefile.ReadFile(file, safefile.MaxSecret)
		if err != nil {
			return "", false, fmt.Errorf("--admin-token-file: %w", err)
		}
		token, _, _ = strings.Cut(string(b), "\n")
		token = strings.TrimRight(token, "\r")
		if token == "" {
			return "", false, fmt.Errorf("--admin-token-file %s: the first line is empty", file)
		}
	case flagValue != "":
		token, onCommandLine = flagValue, true
	default:
		token = os.Getenv("GWSIM_ADMIN_TOKEN")
	}
	if err := server.CheckAdminToken(token); err != nil {
		return "", false, err
	}
	return token, onCommandLine, nil
}
