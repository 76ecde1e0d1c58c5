package benchkit

import (
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU is the user and system CPU time of this process and of its
// children that have ended and been waited for (getrusage RUSAGE_SELF plus
// RUSAGE_CHILDREN); 0 when getrusage fails.
func ProcessCPU() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) != nil {
			return 0
		}
		total += time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
	}
	return total
}

// RedisCPU is used_cpu_sys + used_cpu_user from the text of Redis's INFO
// cpu: the CPU time the server process has used since it started (its
// main thread, I/O threads and background threads, not its forked
// children); 0 when the fields are not there.
func RedisCPU(info string) time.Duration {
	var secs float64
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			secs += f
		}
	}
	return time.Duration(secs * float64(time.Second))
}

// CPUSpan is a scenario's CPU so far: the client process's (ProcessCPU) and
// the Redis server's (RedisCPU of an INFO cpu read at the start).
type CPUSpan struct {
	client, redis time.Duration
	info          func() string
}

// StartCPU reads both clocks now; info returns the text of INFO cpu (or ""
// where there is no Redis, and the Redis figure is 0).
func StartCPU(info func() string) CPUSpan {
	return CPUSpan{client: ProcessCPU(), redis: RedisCPU(info()), info: info}
}

// PerJob is the CPU used since StartCPU, in µs per job over jobs jobs: the
// client process's and the Redis server's.
func (s CPUSpan) PerJob(jobs int) (clientUS, redisUS float64) {
	redis := RedisCPU(s.info())
	client := ProcessCPU()
	if jobs <= 0 {
		return 0, 0
	}
	return us(client-s.client) / float64(jobs), us(redis-s.redis) / float64(jobs)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
