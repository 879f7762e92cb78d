package server

import (
	"maps"
	"net/http"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// statusOf is the one table from domain error codes to HTTP status codes.
var statusOf = map[string]int{
	device.CodeInvalidField:         http.StatusBadRequest,
	device.CodeMissingField:         http.StatusBadRequest,
	device.CodeUnexpectedField:      http.StatusBadRequest,
	device.CodeMalformedBody:        http.StatusBadRequest,
	device.CodeBadRequest:           http.StatusBadRequest,
	device.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	device.CodeBodyTooLarge:         http.StatusRequestEntityTooLarge,
	device.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	device.CodeNotFound:             http.StatusNotFound,
	device.CodeUnknownAPIKey:        http.StatusUnauthorized,
	device.CodeAccountMismatch:      http.StatusForbidden,
	device.CodeBadSignature:         http.StatusUnauthorized,
	device.CodeStaleTimestamp:       http.StatusUnauthorized,
	device.CodeReplayedRequest:      http.StatusUnauthorized,
	device.CodeGatewayNotFound:      http.StatusNotFound,
	device.CodeDeviceNotFound:       http.StatusNotFound,
	device.CodeTypeMismatch:         http.StatusConflict,
	device.CodeRateLimited:          http.StatusTooManyRequests,
	device.CodeUnauthorized:         http.StatusUnauthorized,
	device.CodeTimeout:              http.StatusRequestTimeout,
	// Injected on purpose by fault injection, never for bad input.
	device.CodeGatewayOffline: http.StatusGatewayTimeout,
	device.CodeInjectedFault:  http.StatusServiceUnavailable,
	// The gateway answers, the device behind it does not (fault injection).
	device.CodeDeviceUnreachable: http.StatusGatewayTimeout,
	// The state file could not be written: a server failure, not bad input.
	device.CodeStorageFailed: http.StatusServiceUnavailable,
	// The shared store (Redis) cannot be reached.
	device.CodeStorageUnavailable: http.StatusServiceUnavailable,
}

// StatusOf maps an error code to its HTTP status (400 for an unknown code,
// so that bad input can never turn into a 5xx by accident).
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusBadRequest
}

// Codes is a copy of the table from error codes to HTTP status codes, for
// the OpenAPI document (simulator/openapi).
func Codes() map[string]int { return maps.Clone(statusOf) }
