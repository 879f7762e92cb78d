package server

import (
	"net/http"
	"sync"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/openapi"
)

// openAPIDoc is the OpenAPI document, written once from the same tables
// the server answers by.
var openAPIDoc = sync.OnceValues(func() ([]byte, error) { return openapi.Generate(Codes()) })

// openAPI serves GET /_sim/openapi.yaml: the document of docs/openapi.yaml,
// for client generators, mock tools and API browsers.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := openAPIDoc()
	if err != nil {
		s.log.Error("openapi: the document could not be written", "err", err)
		adminError(w, device.Errorf(device.CodeStorageFailed, "", "the OpenAPI document could not be written"))
		return
	}
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Write(doc)
}
