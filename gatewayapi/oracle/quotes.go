package oracle

import "strings"

// The sentences of the two texts that forbid a form. Every refusal of the
// rule table carries one (Verdict.Quote): a form is forbidden only where
// a sentence of docs/gateway-api.md (published) or docs/CONTRACT.md
// forbids it, and a form neither forbids is Open (CONTRACT preamble).
// TestEveryRefusalQuotesItsSentence checks that each refusal has one and
// that each is, white space aside, a passage of one of the two texts.
const (
	// Published 2.1, the envelope's table and the body.
	QuoteJSONBody    = "In JSON the body is one object with a single member `control`, which holds the fields."
	QuoteXMLBody     = "In XML the body has a root element `xml` containing one element `control`, which holds one child element per field."
	QuoteTimestamp   = "| timestamp | string | yes | 14 digits, form YYYYMMDDHHMMSS |"
	QuoteSign        = "| sign | string | yes | 32 hexadecimal characters, placeholder <SIGNATURE> |"
	QuoteAccount     = "| myservice_id | string | yes | Account identifier, 24 hexadecimal characters, placeholder <ACCOUNT_ID> |"
	QuoteMAC         = "| mac | string | yes | Gateway hardware address, 12 hexadecimal characters, placeholder <GATEWAY_MAC> |"
	QuoteAPIKey      = "| api_key | string | yes | Caller's key, placeholder <API_KEY> |"
	QuoteSN          = "| sn | string | send command, update name | Device serial number, 32 hexadecimal characters, placeholder <DEVICE_SN> |"
	QuoteDeviceID    = "| device_id | string | send command | Listed in the argument list of send command. The example bodies use `sn` in its place. |"
	QuoteType        = "The allowed values of `type` are listed below."
	QuoteTypeString  = "| type | string | send command | Device type (see 2.3) |"
	QuoteName        = "| name | string | update name | New display name of the device, text |"
	QuoteMessageType = "| message_type | string | Kind of message; the example uses the word message |"
	QuoteMessageVal  = "| message_value | string | Payload of the message, in the form <setting_name>=<number> |"
	QuoteCommandBody = "| Request body | `control` with the envelope fields (2.1), `sn`, `type`, and the fields of that device type (2.3) |"
	QuoteRenameBody  = "| Request body | `control` with the envelope fields (2.1), `sn`, `name` |"
	QuoteMessageBody = "| Request body | `control` with the envelope fields (2.1), `message_type`, `message_value` |"
	QuoteContentType = "Request header `Content-Type` must be `application/json` or `application/xml`, matching the body format."
	QuotePOST        = "Method is POST."
	QuoteDimming     = "| Light Dimmer | dimming | integer 1 to 100 |"
	QuoteCode        = "| Infrared Sensor | code | 1, 2, 3, 4 |"
	QuotePointForm   = "decimal number as string, degrees Celsius."
	QuoteOptRow      = "| Appliance Module Plus | opt | text; the example uses the word normal |"
	// Published 1, 4 and 5.
	QuoteJSONOrXML   = "The request body is JSON or XML."
	QuoteEveryPOST   = "Every operation is a POST."
	QuoteSignCarried = "Every request carries `api_key`, `timestamp` and `sign` inside `control`, together with `myservice_id`."

	// CONTRACT.
	QuoteRegistered   = "`api_key` must be registered; each key belongs to exactly one account (`myservice_id`)."
	QuoteRealDate     = "`timestamp`: 14 digits and a real calendar date-time"
	QuoteJSONValues   = "JSON values may be strings or numbers where the field is numeric (`dimming`, `code`, `cooling point`, `heating point`)."
	QuoteWholeValues  = "its value decides (an integer field takes only whole values)."
	QuoteFormat       = "`format`, when present, must be `json` or `xml` and match the Content-Type."
	QuoteDeviceIDBoth = "`device_id` is accepted as an alias of `sn` in send command; both present and different: 400."
	QuoteUnexpected   = "Unknown fields, and fields that belong to another device type: 400 `unexpected_field`."
	QuoteOneField     = "A command must carry at least one field of its type"
	QuotePoints       = "Thermostat points: a finite decimal number in −50…+100 °C."
	QuoteOpt          = "`opt`: non-empty text up to 32 characters."
	QuoteMessageValue = "`message_value`: `<setting_name>=<number>`, setting name `[A-Za-z_][A-Za-z0-9_.-]*`."
	QuoteMessageToken = "`message_type`: non-empty token."
	QuoteNameRule     = "`name`: 1 to 64 characters after trimming, no control characters."
	QuoteJSONControl  = "JSON: one object with exactly one member `control`, itself an object."
	QuoteXMLControl   = "XML: root `xml` with one child `control`."
	QuoteNoDoctype    = "No DOCTYPE, no entities beyond the five predefined ones."
	QuoteMalformed    = "A body that does not parse as the declared format: 400 `malformed_body`."
	QuoteBodyLimit    = "Body limit 64 KiB: 413 `body_too_large`."
	QuoteUnknownKey   = "Unknown key: 401 `unknown_api_key`."
	QuoteOtherAccount = "Key of another account: 403 `account_mismatch`."
	QuoteWrongSign    = "Wrong sign: 401 `bad_signature`."
	QuoteSignMD5      = "`sign` scheme `md5` (the default): lowercase hex MD5 of the UTF-8 bytes of `api_key + secret + timestamp` (plain concatenation, no separators)."
	QuoteNoGateway    = "Unknown gateway for the account: 404 `gateway_not_found`."
	QuoteNoDevice     = "Unknown device on the gateway: 404 `device_not_found`."
	QuoteWindow       = "Outside the window (default ±300 s; 0 disables the window): 401 `stale_timestamp`."
	QuoteMethodOther  = "Method other than POST: 405 with `Allow: POST`."
	QuoteUnknownPath  = "Unknown path: 404 `not_found`."
)

// Texts names where a quote is from: "published" (docs/gateway-api.md)
// or "CONTRACT" (docs/CONTRACT.md). The test finds each quote in its text.
func Texts(quote string) string {
	if strings.HasPrefix(quote, "| ") || strings.Contains(quote, "decimal number as string") ||
		strings.HasPrefix(quote, "In JSON") || strings.HasPrefix(quote, "In XML") || strings.HasPrefix(quote, "The allowed values") ||
		strings.HasPrefix(quote, "Request header") || quote == QuotePOST || quote == QuoteJSONOrXML || quote == QuoteEveryPOST ||
		quote == QuoteSignCarried {
		return "published"
	}
	return "CONTRACT"
}

// Inferences: a MUST that rests on a published sentence read with one
// step of reasoning carries that step beside its quote (Verdict.Inference),
// so a reader who disputes the level sees what it rests on.
const (
	// InferKey: api_key (published 2.1, 5.1) is the caller's key.
	InferKey = "a key the service never issued names no caller: a service that accepts it authenticates nothing (section 5)"
	// InferSign: sign (published 2.1, 5.1) authenticates the request.
	InferSign = "a sign that is never verified is no sign: one made with another secret, or from part of its inputs, must not authenticate the request (section 5)"
	// InferAccount: myservice_id (published 2.1, 5) is the account the
	// key acts for.
	InferAccount = "a key acting for an account not its own is not authenticated for it (section 5)"
)

// MustLevel is the rule every verdict's level follows: MUST only where the
// quote is from the published interface, or where an inference from a
// published sentence is written beside it; a refusal that rests on the
// CONTRACT alone is a SHOULD (the CONTRACT's preamble).
func MustLevel(quote, inference string) bool {
	return quote == "" || Texts(quote) == "published" || inference != ""
}

// rowOf is a command field's row of published 2.3: "| Thermostat | mode |
// Auto, Cool, Heat, Off |".
func rowOf(typ, name, values string) string {
	return "| " + typ + " | " + name + " | " + values + " |"
}
