package catalog

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// SignerFor is the signer of a fleet's scheme for its target account, and
// whether a wrong sign can be told from a right one (md5 or a sign
// command). fleetFile, when set, is where a relative sign_command lives:
// ./sign.sh in a fleet file means beside the fleet file, wherever gwconform
// is started from.
func SignerFor(f *fleet.Fleet, fleetFile string) (client.Signer, bool) {
	switch {
	case len(f.SignCommand) > 0:
		argv := append([]string(nil), f.SignCommand...)
		if fleetFile != "" && strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) {
			argv[0] = filepath.Join(filepath.Dir(fleetFile), argv[0])
		}
		return client.CommandSigner{Argv: argv, Timeout: 10 * time.Second}, true
	case f.Scheme() == auth.MD5:
		tgt, err := f.Target()
		if err != nil {
			return nil, true
		}
		return client.MD5Signer{APIKey: tgt.Key.Key, Secret: tgt.Key.Secret}, true
	default:
		return client.FormatSigner{}, false
	}
}
