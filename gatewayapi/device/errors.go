package device

import "fmt"

// Error codes. They are the vocabulary shared by the simulator, its admin API
// and the conformance harness; the HTTP layer maps each one to a status code
// and never invents codes of its own.
const (
	CodeInvalidField         = "invalid_field"
	CodeMissingField         = "missing_field"
	CodeUnexpectedField      = "unexpected_field"
	CodeMalformedBody        = "malformed_body"
	CodeBadRequest           = "bad_request"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeBodyTooLarge         = "body_too_large"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeNotFound             = "not_found"
	CodeUnknownAPIKey        = "unknown_api_key"
	CodeAccountMismatch      = "account_mismatch"
	CodeBadSignature         = "bad_signature"
	CodeStaleTimestamp       = "stale_timestamp"
	CodeReplayedRequest      = "replayed_request"
	CodeGatewayNotFound      = "gateway_not_found"
	CodeDeviceNotFound       = "device_not_found"
	CodeTypeMismatch         = "type_mismatch"
	CodeGatewayOffline       = "gateway_offline"
	CodeInjectedFault        = "injected_fault"
	CodeRateLimited          = "rate_limited"
	CodeUnauthorized         = "unauthorized"
	CodeTimeout              = "request_timeout"
	// CodeStorageFailed: a change could not be saved to the state file.
	CodeStorageFailed = "storage_failed"
	// CodeStorageUnavailable: the shared store (Redis) cannot be reached;
	// nothing was changed. Answered with Retry-After.
	CodeStorageUnavailable = "storage_unavailable"
	// CodeDeviceUnreachable: the gateway answered but the device did not
	// (fault injection; our extension of CONTRACT 4).
	CodeDeviceUnreachable = "device_unreachable"
)

// Error is a rejection of a request: a code from the list above, the field it
// concerns (empty when no single field is to blame) and a sentence for people.
type Error struct {
	Code    string
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + " (" + e.Field + "): " + e.Message
}

// Errorf builds an Error whose message is formatted like fmt.Sprintf.
func Errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

func invalid(field, format string, args ...any) *Error {
	return Errorf(CodeInvalidField, field, format, args...)
}
