package admin_test

import (
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

func TestFormatDuration_DropsZeroUnits(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                           "0s",
		250 * time.Millisecond:      "250ms",
		1500 * time.Microsecond:     "1.5ms",
		30 * time.Second:            "30s",
		1500 * time.Millisecond:     "1.5s",
		time.Minute:                 "1m",
		90 * time.Second:            "1m30s",
		10 * time.Minute:            "10m",
		time.Hour:                   "1h",
		90 * time.Minute:            "1h30m",
		2*time.Hour + 5*time.Second: "2h5s",
		2*time.Hour + 10*time.Minute + 5*time.Second: "2h10m5s",
		48 * time.Hour:                     "48h",
		-90 * time.Minute:                  "-1h30m",
		time.Minute + 500*time.Millisecond: "1m0.5s",
	} {
		got := admin.FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q; want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("FormatDuration(%v) = %q reads back as %v, %v", d, got, back, err)
		}
	}
}
