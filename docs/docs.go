// Package docs carries the two texts the conformance catalog is built
// from, the published interface and our CONTRACT, so that a certification
// bundle can name exactly which versions its verdicts rest on.
package docs

import _ "embed"

// Interface is gateway-api.md, the published interface.
//
//go:embed gateway-api.md
var Interface []byte

// Contract is CONTRACT.md, our decisions in the interface's gaps.
//
//go:embed CONTRACT.md
var Contract []byte
