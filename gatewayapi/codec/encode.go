package codec

import (
	"bytes"
	"encoding/json"
	"encoding/xml"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

var (
	successJSON = []byte(`{"status":"success"}`)
	successXML  = []byte(`<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`)
)

// Success is the body of a successful answer (CONTRACT 4). The slice is
// shared: callers must not modify it.
func Success(f device.Format) []byte {
	if f == device.XML {
		return successXML
	}
	return successJSON
}

type jsonError struct {
	Status string     `json:"status"`
	Error  errorBlock `json:"error"`
}

type errorBlock struct {
	Code    string `json:"code" xml:"code"`
	Field   string `json:"field,omitempty" xml:"field,omitempty"`
	Message string `json:"message" xml:"message"`
}

type xmlError struct {
	XMLName xml.Name   `xml:"xml"`
	Status  string     `xml:"status"`
	Error   errorBlock `xml:"error"`
}

// Error is the body of a rejection in the given format.
func Error(f device.Format, e *device.Error) []byte {
	blk := errorBlock{Code: e.Code, Field: e.Field, Message: e.Message}
	if f == device.XML {
		var b bytes.Buffer
		b.WriteString(xml.Header[:len(xml.Header)-1])
		if err := xml.NewEncoder(&b).Encode(xmlError{Status: "error", Error: blk}); err != nil {
			return []byte(`<?xml version="1.0" encoding="UTF-8"?><xml><status>error</status></xml>`)
		}
		return b.Bytes()
	}
	b, err := json.Marshal(jsonError{Status: "error", Error: blk})
	if err != nil {
		return []byte(`{"status":"error"}`)
	}
	return b
}
