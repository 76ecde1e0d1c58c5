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

// scheduleParser accepts what specParser does and, for schedules as data, a
// leading seconds field (six fields: "*/5 * * * * *" is every five seconds).
var scheduleParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a schedule's ticks: a cron spec in a time zone, bounded by an
// optional start and end.
type Spec struct {
	s          cron.Schedule
	loc        *time.Location
	spec, tz   string
	start, end time.Time
}

// ParseScheduleSpec checks a schedule's spec (five fields, six with a
// leading seconds field, or a descriptor such as @every 1s), its time zone
// (IANA name; "" means UTC) and its bounds (zero: none).
func ParseScheduleSpec(spec, tz string, start, end time.Time) (Spec, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return Spec{}, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Berlin", tz)
		}
		loc = l
	}
	s, err := scheduleParser.Parse(spec)
	if err != nil {
		return Spec{}, fmt.Errorf("invalid cron spec %q: %v", spec, err)
	}
	return Spec{s: s, loc: loc, spec: spec, tz: tz, start: start, end: end}, nil
}

// Next is the first tick after t, not before the start; zero when it would
// fall after the end.
func (sp Spec) Next(t time.Time) time.Time {
	if !sp.start.IsZero() && t.Before(sp.start) {
		t = sp.start.Add(-time.Millisecond)
	}
	n := sp.s.Next(t.In(sp.loc))
	if n.IsZero() || (!sp.end.IsZero() && n.After(sp.end)) {
		return time.Time{}
	}
	return n
}

// plan names the ticks: two schedules of one plan have the same ticks.
func (sp Spec) plan() string {
	return fmt.Sprintf("%s|%s|%d|%d", sp.spec, sp.tz, msOrZero(sp.start), msOrZero(sp.end))
}
