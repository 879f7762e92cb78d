// Package version says which build of gwsim and gwconform is running: the
// module version, the commit and the Go version, from the build
// information Go records in every binary.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is one build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

// Stamped at link time by a release build (make image, the Dockerfile's
// VERSION and COMMIT build arguments):
//
//	-ldflags "-X github.com/gwdmi/gwtools/gatewayapi/version.stamped=v0.1.0 -X github.com/gwdmi/gwtools/gatewayapi/version.stampedCommit=SHA"
//
// A build from a checkout without .git (an image's build context) has no
// version of its own: the module's is "(devel)" and no commit is
// recorded, so what the image reports would not say which source it is.
var stamped, stampedCommit string

// Get reads the running binary's build information; a version stamped at
// link time wins over the module's.
func Get() Info {
	i := Info{Version: "(devel)", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if stamped != "" {
		i.Version = stamped
	}
	if stampedCommit != "" {
		i.Commit, i.Modified = stampedCommit, false
	}
	return i
}

// String is the line --version prints: "gwsim v1.2.3 (commit abc1234, go1.26.8)".
func (i Info) String() string {
	commit := i.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		commit = "unknown"
	}
	if i.Modified {
		commit += "+modified"
	}
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, commit, i.GoVersion)
}
