package check

// Section is one numbered section of the published interface
// (spec/gateway-api.md). Meta.Section refers to it by Number.
type Section struct {
	Number string `json:"number"`
	Title  string `json:"title"`
	// Gap is non-empty for a section that the interface leaves "not shown"
	// as a whole; it says why no MUST check can trace to it.
	Gap string `json:"gap,omitempty"`
}

// Sections lists every section of the published interface, in the order
// of the document, with the document's titles. Reports use it to show
// which section each check traces to and which sections have none.
var Sections = []Section{
	{Number: "1", Title: "What the service does",
		Gap: "an overview; each of the three operations it names is checked under 4.1, 4.2 and 4.3"},
	{Number: "2", Title: "Resources and their fields"},
	{Number: "2.1", Title: "Common request envelope"},
	{Number: "2.2", Title: "Device identification"},
	{Number: "2.3", Title: "Device types and their command fields (send command)"},
	{Number: "2.4", Title: "Message fields (send message)"},
	{Number: "2.5", Title: "Response"},
	{Number: "3", Title: "States and transitions",
		Gap: "not shown as a whole; the effect checks read each device's state through the observer (CONTRACT 7) when the run has one, and trace to the operation that changed it (4.1 to 4.3); the simulator-only checks (label sim) read it through gwsim's admin API"},
	{Number: "4", Title: "Endpoints"},
	{Number: "4.1", Title: "Send command to gateway"},
	{Number: "4.2", Title: "Send message to gateway"},
	{Number: "4.3", Title: "Update name for device"},
	{Number: "4.4", Title: "Response"},
	{Number: "5", Title: "Authentication"},
	{Number: "6", Title: "Events",
		Gap: "not shown; nothing to check"},
	{Number: "7", Title: "Errors",
		Gap: "not shown; error payloads are checked at SHOULD level from CONTRACT 4"},
	{Number: "8", Title: "Limits",
		Gap: "only the field ranges of section 2 are stated (dimming 1 to 100, code 1 to 4), and their checks trace to 2.3; rate, size and timestamp limits are not shown"},
	{Number: "9", Title: "Versioning"},
}

// SectionTitle is the title of published section n, or "" if there is no
// such section.
func SectionTitle(n string) string {
	for _, s := range Sections {
		if s.Number == n {
			return s.Title
		}
	}
	return ""
}
