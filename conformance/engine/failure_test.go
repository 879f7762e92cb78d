package engine

import "testing"

func TestInWords(t *testing.T) {
	for in, want := range map[string]string{
		"status code: HTTP 200, status success\nExpected\n    <int>: 200\nto equal\n    <int>: 400":                                                                                               "status code: HTTP 200, status success: expected 400, got 200",
		"an invalid request was accepted: HTTP 200, status success\nExpected\n    <bool>: true\nto be false":                                                                                      "an invalid request was accepted: HTTP 200, status success",
		"Content-Type \"application/json\" is not xml\nExpected\n    <[]string | len:2, cap:2>: [\"application/xml\", \"text/xml\"]\nto contain element matching\n    <string>: application/json": `Content-Type "application/json" is not xml: expected one of ["application/xml", "text/xml"], got application/json`,
		"plain words": "plain words",
	} {
		if got := InWords(in); got != want {
			t.Errorf("InWords(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
