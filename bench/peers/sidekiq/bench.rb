# bench.rb measures Sidekiq with the default scenarios and metric names of the
# project's `go run ./examples/bench`, so that scripts/bench-compare.sh can set
# them side by side on one redis-server:
#
#   ruby bench.rb --url redis://127.0.0.1:6390/0                        # two processes of 32 threads
#   ruby bench.rb --url redis://127.0.0.1:6390/0 --processes 1 --concurrency 64
#
# Every result line on stdout is `sidekiq <metric>=<value>` (--label sets the
# first word); notes go to stderr, prefixed with #. It FLUSHES the database it is
# given: point it at a throwaway server. This process is the producers
# (Sidekiq::Client from 16 threads); the jobs run in Sidekiq processes started
# with Sidekiq's own CLI on jobs.rb, stopped by PID at the end. Sidekiq has no
# enqueue-and-await-result call, so there is no call_* line.
require "optparse"
require "sidekiq"
require "redis"
Redis.silence_deprecations = true # see jobs.rb

opt = { url: "redis://127.0.0.1:6379/0", n: 50_000, producers: 16, processes: 2, concurrency: 32,
        rate: 1000, secs: 5, delayed: 200, batch: 1000, label: "sidekiq" }
OptionParser.new do |o|
  o.on("--url URL", "Redis URL of a throwaway server (its database is flushed)") { |v| opt[:url] = v }
  o.on("-n N", Integer, "jobs for the enqueue, drain and batch scenarios") { |v| opt[:n] = v }
  o.on("--producers N", Integer, "producer threads") { |v| opt[:producers] = v }
  o.on("--processes N", Integer, "Sidekiq processes (one a core: Ruby's GVL holds a process to about one)") { |v| opt[:processes] = v }
  o.on("--concurrency N", Integer, "threads of each Sidekiq process (-c)") { |v| opt[:concurrency] = v }
  o.on("--rate N", Integer, "jobs per second in the latency scenario") { |v| opt[:rate] = v }
  o.on("--secs N", Integer, "seconds of the latency scenario") { |v| opt[:secs] = v }
  o.on("--delayed N", Integer, "jobs in the delayed-lateness scenario") { |v| opt[:delayed] = v }
  o.on("--batch N", Integer, "jobs per push_bulk call") { |v| opt[:batch] = v }
  o.on("--label L", "first word of the result lines") { |v| opt[:label] = v }
end.parse!
N = opt[:n]
$tag = opt[:label]
$stdout.sync = true
PAYLOAD = { "to" => "user@example.com", "subject" => "hello", "body" => "0123456789012345678901234567890123456789" }.freeze

def note(s) = warn("# #{$tag}: #{s}")
def report(metric, v) = puts(format("%s %s=%.3f", $tag, metric, v))
def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# quantile is the q-quantile by the nearest rank below, as benchkit.Quantile.
def quantile(xs, q)
  return 0.0 if xs.empty?
  xs.sort[(q * (xs.size - 1)).floor]
end

# parallel calls the block with 0 to total-1 from `threads` threads.
def parallel(threads, total)
  nxt = 0
  mu = Mutex.new
  Array.new(threads) do
    Thread.new do
      while (i = mu.synchronize { nxt += 1 } - 1) < total
        yield i
      end
    end
  end.each(&:join)
end

def wait_for(secs)
  deadline = mono + secs
  until yield
    return false if mono > deadline
    sleep 0.005
  end
  true
end

Sidekiq.configure_client { |c| c.redis = { url: opt[:url], size: opt[:producers] * 2 } }
admin = Redis.new(url: opt[:url])
admin.flushdb

# CPU, in µs: this process's and its ended children's (getrusage through
# Process.times), the live Sidekiq processes' (and their children's) from
# /proc/<pid>/stat, which getrusage cannot see until they end, and the Redis
# server's (INFO cpu, used_cpu_sys + used_cpu_user).
CLK_TCK = 100.0
$workers = []
def own_cpu_us
  t = Process.times
  (t.utime + t.stime + t.cutime + t.cstime) * 1e6
end

def workers_cpu_us
  $workers.sum do |pid|
    f = File.read("/proc/#{pid}/stat").split(") ", 2)[1].split(" ")
    f[11, 4].sum(&:to_i) / CLK_TCK * 1e6 # utime stime cutime cstime
  rescue Errno::ENOENT
    0
  end
end
redis_cpu_us = -> { admin.info("cpu").values_at("used_cpu_sys", "used_cpu_user").sum(&:to_f) * 1e6 }
cpu_now = -> { [own_cpu_us + workers_cpu_us, redis_cpu_us.call] }
cpu_report = lambda do |name, jobs, since|
  c, r = cpu_now.call
  report("client_cpu_us_per_job_#{name}", (c - since[0]) / jobs)
  report("redis_cpu_us_per_job_#{name}", (r - since[1]) / jobs)
end
# What the Sidekiq processes last wrote: no-op jobs run, the first and the
# last of their start times (ms).
noops = lambda do
  rows = admin.hgetall("bench:noops").values.map(&:split)
  [rows.sum { |r| r[0].to_i }, rows.filter_map { |r| r[1]&.to_f }.min, rows.filter_map { |r| r[2]&.to_f }.max]
end
note "Sidekiq #{Sidekiq::VERSION}, redis-rb #{Redis::VERSION}, Ruby #{RUBY_VERSION}; n=#{N} producers=#{opt[:producers]} " \
     "processes=#{opt[:processes]} concurrency=#{opt[:concurrency]} (Sidekiq's defaults otherwise: retry 25, scheduled poll ~5 s)"

# The queue's own keys written before memory is read.
Sidekiq::Client.push("class" => "NoopJob", "args" => [PAYLOAD])
admin.del("queue:default")

note "enqueue: #{N} single Sidekiq::Client.push calls from #{opt[:producers]} threads"
since = cpu_now.call
mem0 = admin.info("memory")["used_memory"].to_i
t0 = mono
parallel(opt[:producers], N) { Sidekiq::Client.push("class" => "NoopJob", "args" => [PAYLOAD]) }
report("enqueue_jobs_per_s", N / (mono - t0))
report("redis_bytes_per_job", (admin.info("memory")["used_memory"].to_i - mem0).to_f / N)
cpu_report.call("enqueue", N, since)

# drain: the Sidekiq processes on the n pending jobs. A process loads Ruby and
# Sidekiq for a second or more before its first job; throughput and CPU count
# from the first job this process sees started (CPU over the jobs not yet
# seen then) to the last job's start.
at_exit do
  $workers.each { |pid| Process.kill("TERM", pid) rescue nil }
  $workers.each do |pid|
    next if (1..100).any? { sleep 0.1; Process.waitpid(pid, Process::WNOHANG) rescue true }
    Process.kill("KILL", pid) rescue nil
    Process.waitpid(pid) rescue nil
  end
end
note "drain: #{N} pending jobs, #{opt[:processes]} Sidekiq process(es) of #{opt[:concurrency]} threads"
spawned = mono
env = { "REDIS_URL" => opt[:url], "BENCH_PARENT" => Process.pid.to_s }
log = ENV["BENCH_LOG"] || File::NULL
opt[:processes].times do
  $workers << Process.spawn(env, "sidekiq", "-r", File.join(__dir__, "jobs.rb"), "-c", opt[:concurrency].to_s,
                            "-q", "default", "-t", "5", chdir: __dir__, out: [log, "a"], err: [log, "a"])
end
abort "drain: no job started within 120 s (BENCH_LOG=FILE keeps Sidekiq's output)" unless wait_for(120) { noops.call[0] > 0 }
seen0 = noops.call[0]
since = cpu_now.call
note format("drain: the first jobs seen started %.2f s after the spawn (%d by then)", mono - spawned, seen0)
abort "drain: only #{noops.call[0]} of #{N} jobs ran within 300 s" unless wait_for(300) { noops.call[0] >= N }
cpu_report.call("drain", N - seen0, since)
_, first, last = noops.call
report("drain_jobs_per_s", (N - 1) / ((last - first) / 1000))

note "enqueue_batch: #{N} jobs in push_bulk calls of #{opt[:batch]}, #{opt[:producers]} at a time, the processes running"
since = cpu_now.call
t0 = mono
parallel(opt[:producers], (N + opt[:batch] - 1) / opt[:batch]) do |i|
  k = [opt[:batch], N - i * opt[:batch]].min
  Sidekiq::Client.push_bulk("class" => "NoopJob", "args" => Array.new(k) { [PAYLOAD] })
end
report("enqueue_batch_jobs_per_s", N / (mono - t0))
note "enqueue_batch: #{noops.call[0] - N} of #{N} jobs ran within 120 s" unless wait_for(120) { noops.call[0] >= 2 * N }
cpu_report.call("batch", N, since)

# latency: pushes at a fixed rate, each from a pool of `producers` threads and
# stamped when it is made; latency = the job's start - that stamp.
note "latency: #{opt[:rate]} jobs/s for #{opt[:secs]} s"
since = cpu_now.call
q = Queue.new
failed = 0
pool = Array.new(opt[:producers]) do
  Thread.new do
    while q.pop
      begin
        Sidekiq::Client.push("class" => "PingJob", "args" => [Process.clock_gettime(Process::CLOCK_REALTIME, :float_millisecond)])
      rescue StandardError
        failed += 1
      end
    end
  end
end
start = mono
sent = 0
while mono - start < opt[:secs]
  w = start + sent.to_f / opt[:rate] - mono
  sleep w if w > 0
  q << true
  sent += 1
end
pool.size.times { q << nil }
pool.each(&:join)
note "latency: #{admin.llen("bench:ping")} of #{sent} jobs started within 60 s" unless wait_for(60) { admin.llen("bench:ping") + failed >= sent }
note "latency: #{failed} pushes failed" if failed > 0
lat = admin.lrange("bench:ping", 0, -1).map(&:to_f)
report("latency_p50_ms", quantile(lat, 0.50))
report("latency_p99_ms", quantile(lat, 0.99))
cpu_report.call("latency", opt[:rate] * opt[:secs], since)

# delayed: jobs due in 1 s (`at`, as perform_in sets it). Sidekiq's scheduled-set
# poller first looks 10-15 s after a process starts; the scenario waits that
# out, so it measures the poller's steady state.
if (w = spawned + 16 - mono) > 0
  note format("delayed: waiting %.1f s for the scheduled-set poller's first pass", w)
  sleep w
end
note "delayed: #{opt[:delayed]} jobs due in 1 s"
opt[:delayed].times do
  due = Process.clock_gettime(Process::CLOCK_REALTIME, :float_millisecond) + 1000
  Sidekiq::Client.push("class" => "DelayedJob", "args" => [due], "at" => due / 1000)
end
note "delayed: #{admin.llen("bench:delayed")} of #{opt[:delayed]} jobs started within 40 s" unless wait_for(40) { admin.llen("bench:delayed") >= opt[:delayed] }
late = admin.lrange("bench:delayed", 0, -1).map(&:to_f)
report("delay_lateness_p50_ms", quantile(late, 0.50))
report("delay_lateness_p99_ms", quantile(late, 0.99))
