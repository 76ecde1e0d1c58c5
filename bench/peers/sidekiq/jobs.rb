# jobs.rb is what the Sidekiq processes of bench.rb load (`sidekiq -r ./jobs.rb`):
# the job classes and what they record. A job notes its start in memory, and a
# thread of each process writes the notes to Redis every 10 ms in one pipeline
# (HSET bench:noops, RPUSH bench:ping / bench:delayed), so that measuring adds
# no Redis round trip to a job.
require "sidekiq"
require "redis"
# Sidekiq 6.4 calls Redis#sadd in a way redis-rb 4.8 warns about on stderr,
# once a job: silenced, or the warning would cost each job a write.
Redis.silence_deprecations = true

Sidekiq.configure_server { |c| c.redis = { url: ENV.fetch("REDIS_URL") } }
Sidekiq.configure_client { |c| c.redis = { url: ENV.fetch("REDIS_URL") } }

module Notes
  @mu = Mutex.new
  @noops = 0
  @first = @last = nil
  @lists = Hash.new { |h, k| h[k] = [] }
  @writer = nil

  def self.ms = Process.clock_gettime(Process::CLOCK_REALTIME, :float_millisecond)

  def self.noop
    t = ms
    @mu.synchronize do
      @noops += 1
      @first ||= t
      @last = t
      @writer ||= Thread.new { write_loop }
    end
  end

  def self.since(kind, stamp_ms)
    d = ms - stamp_ms
    @mu.synchronize do
      @lists[kind] << d
      @writer ||= Thread.new { write_loop }
    end
  end

  def self.write_loop
    r = Redis.new(url: ENV.fetch("REDIS_URL"))
    loop do
      sleep 0.01
      noops, first, last, lists = @mu.synchronize do
        l = @lists
        @lists = Hash.new { |h, k| h[k] = [] }
        [@noops, @first, @last, l]
      end
      r.pipelined do |p|
        p.hset("bench:noops", Process.pid.to_s, "#{noops} #{first} #{last}")
        lists.each { |k, xs| p.rpush("bench:#{k}", xs) unless xs.empty? }
      end
    end
  rescue StandardError => e
    warn "bench notes: #{e.class}: #{e.message}"
    sleep 0.1
    retry
  end
end

# This process ends when bench.rb (BENCH_PARENT) is gone, so a harness that
# dies leaves no Sidekiq behind.
if (parent = ENV["BENCH_PARENT"]&.to_i)
  Thread.new do
    loop do
      sleep 1
      begin
        Process.kill(0, parent)
      rescue Errno::ESRCH
        exit!(4)
      end
    end
  end
end

class NoopJob
  include Sidekiq::Worker
  def perform(_payload) = Notes.noop
end

class PingJob
  include Sidekiq::Worker
  def perform(sent_ms) = Notes.since(:ping, sent_ms)
end

class DelayedJob
  include Sidekiq::Worker
  def perform(due_ms) = Notes.since(:delayed, due_ms)
end
