package scheduler

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// specParser accepts the five standard fields and the descriptors (@every 1s,
// @hourly, ...), as robfig/cron's standard parser does.
var specParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec checks a cron spec and time zone (IANA name; "" means UTC) and
// returns the schedule and location.
func ParseSpec(spec, tz string) (cron.Schedule, *time.Location, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, nil, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Berlin", tz)
		}
		loc = l
	}
	s, err := ParseSchedule(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid cron spec %q: %v", spec, err)
	}
	return s, loc, nil
}

// ParseSchedule parses a cron spec alone: the five standard fields or a
// descriptor. bananagen checks //bananas:cron directives with it, so the
// generator accepts exactly what a worker runs.
func ParseSchedule(spec string) (cron.Schedule, error) { return specParser.Parse(spec) }
