package schedule

import "time"

// SetClock makes a measure its paces with now.
func SetClock(a *Ahead, now func() time.Time) { a.now = now }
