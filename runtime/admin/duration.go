package admin

import (
	"strings"
	"time"
)

// FormatDuration is a duration as every surface shows it to people (the
// dashboard, the CLI's tables): Go's own spelling, which the flags and the
// annotations take back, without its zero units — 1m, 30s, 1h30m, 2h5s,
// 250ms rather than 1m0s or 1h30m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if d > -time.Minute && d < time.Minute {
		return s // "30s", "1.5s", "250ms": no zero unit to drop
	}
	s = strings.TrimSuffix(s, "m0s")
	if !strings.HasSuffix(s, "s") {
		s += "m" // "1m0s" → "1m", "1h30m0s" → "1h30m", "1h0m0s" → "1h0m"
	}
	s = strings.TrimSuffix(s, "h0m")
	if !strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "m") {
		s += "h" // "1h0m" → "1h"
	}
	return strings.Replace(s, "h0m", "h", 1) // "2h0m5s" → "2h5s"
}
