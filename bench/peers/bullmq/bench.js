// bench.js measures BullMQ with the default scenarios and metric names of the
// project's `go run ./examples/bench`, so that scripts/bench-compare.sh can set
// them side by side on one redis-server:
//
//   node bench.js --url redis://127.0.0.1:6390/0            # BullMQ's defaults (completed jobs kept)
//   node bench.js --url redis://127.0.0.1:6390/0 --lean     # removeOnComplete/removeOnFail: true
//   node bench.js --url redis://127.0.0.1:6390/0 --gather   # FlowProducer, 1,000 children
//
// Every result line on stdout is `bullmq <metric>=<value>` (`bullmq-lean` with
// --lean); notes go to stderr, prefixed with #. It FLUSHES the database it is
// given: point it at a throwaway server. Producers and the Worker share this one
// Node process, as producers and worker share the Go harnesses' one process.
'use strict';
const { Queue, Worker, QueueEvents, FlowProducer } = require('bullmq');
const IORedis = require('ioredis');

const defaults = {
  url: 'redis://127.0.0.1:6379/0', n: 50000, producers: 16, concurrency: 64, rate: 1000, secs: 5,
  calls: 2000, delayed: 200, batch: 1000, lean: false, gather: false, fanout: 1000, runs: 3,
};
const opt = flags(process.argv.slice(2));
const tag = opt.lean ? 'bullmq-lean' : 'bullmq';
// The project's bench payload as JSON, about 90 bytes.
const payload = { to: 'user@example.com', subject: 'hello', body: '0123456789012345678901234567890123456789' };

const now = () => performance.timeOrigin + performance.now(); // wall clock, sub-ms
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const note = (s) => process.stderr.write(`# ${tag}: ${s}\n`);
const report = (metric, v) => process.stdout.write(`${tag} ${metric}=${v.toFixed(3)}\n`);

// No run may hang a bench-compare: it gives up after 15 minutes.
setTimeout(() => { note('gave up after 900 s'); process.exit(3); }, 900e3).unref();

async function main() {
  const u = new URL(opt.url);
  const connection = {
    host: u.hostname, port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
    maxRetriesPerRequest: null, // what BullMQ requires of a Worker's connection
  };
  const admin = new IORedis(connection);
  await admin.flushdb();
  note(`BullMQ ${require('bullmq/package.json').version}, ioredis ${require('ioredis/package.json').version}, ` +
    `Node ${process.version}; n=${opt.n} producers=${opt.producers} concurrency=${opt.concurrency}; ` +
    (opt.lean ? 'removeOnComplete/removeOnFail: true' : 'completed and failed jobs kept (BullMQ\'s default)'));
  try {
    if (opt.gather) await gatherBench(connection);
    else await scenarios(connection, admin);
  } finally {
    admin.disconnect();
  }
}

// cpuMeter returns a function that runs one scenario and reports its CPU per job as the project's
// bench does: client_cpu_us_per_job_<name> (this process: process.cpuUsage,
// user + system) and redis_cpu_us_per_job_<name> (INFO cpu's used_cpu_sys +
// used_cpu_user).
function cpuMeter(admin) {
  const redisCPU = async () => {
    const info = await admin.info('cpu');
    let secs = 0;
    for (const m of info.matchAll(/^used_cpu_(sys|user):([0-9.]+)/gm)) secs += Number(m[2]);
    return secs * 1e6;
  };
  const clientCPU = () => { const u = process.cpuUsage(); return u.user + u.system; };
  return async (name, jobs, scenario) => {
    const r0 = await redisCPU(), c0 = clientCPU();
    await scenario();
    const c1 = clientCPU(), r1 = await redisCPU();
    report(`client_cpu_us_per_job_${name}`, (c1 - c0) / jobs);
    report(`redis_cpu_us_per_job_${name}`, (r1 - r0) / jobs);
  };
}

// scenarios runs examples/bench's default scenarios in its order, each on the
// queue the one before left empty, one Worker from the drain on.
async function scenarios(connection, admin) {
  const cpu = cpuMeter(admin);
  const queue = new Queue('bench', {
    connection,
    defaultJobOptions: opt.lean ? { removeOnComplete: true, removeOnFail: true } : {},
  });
  await queue.waitUntilReady();
  // The scripts loaded and the queue's own keys written before memory is read.
  await queue.add('warm', payload);
  await queue.drain(true);

  await cpu('enqueue', opt.n, async () => {
    note(`enqueue: ${opt.n} single Queue.add calls from ${opt.producers} async loops`);
    const mem0 = await usedMemory(admin);
    const t0 = now();
    await parallel(opt.producers, opt.n, () => queue.add('noop', payload));
    report('enqueue_jobs_per_s', opt.n / ((now() - t0) / 1000));
    report('redis_bytes_per_job', (await usedMemory(admin) - mem0) / opt.n);
  });

  // What the processor and the completed events record.
  const seen = { noops: 0, want: opt.n, done: null, lat: [], latOn: false, lateness: [] };
  const noopsReach = (k) => { seen.noops = 0; seen.want = k; return new Promise((r) => { seen.done = r; }); };
  let worker;
  await cpu('drain', opt.n, async () => {
    note(`drain: ${opt.n} pending jobs, one Worker at concurrency ${opt.concurrency}`);
    const finished = noopsReach(opt.n);
    const t0 = now();
    worker = new Worker('bench', async (job) => {
      if (job.name === 'ping') { if (seen.latOn) seen.lat.push(now() - job.data.at); return undefined; }
      if (job.name === 'delayed') { seen.lateness.push(now() - job.data.at); return undefined; }
      if (job.name === 'echo') return job.data;
      return undefined;
    }, { connection, concurrency: opt.concurrency });
    // A job counts once BullMQ has moved it to completed (or removed it), as
    // the Go harnesses count a job once its handler ran.
    worker.on('completed', (job) => { if (job.name === 'noop' && ++seen.noops === seen.want) seen.done(); });
    worker.on('error', (err) => note(`worker: ${err.message}`));
    await finished;
    report('drain_jobs_per_s', opt.n / ((now() - t0) / 1000));
  });

  await cpu('batch', opt.n, async () => {
    note(`enqueue_batch: ${opt.n} jobs in Queue.addBulk calls of ${opt.batch}, ${opt.producers} at a time, the Worker running`);
    const finished = noopsReach(opt.n);
    const t0 = now();
    await parallel(opt.producers, Math.ceil(opt.n / opt.batch), (i) => {
      const k = Math.min(opt.batch, opt.n - i * opt.batch);
      return queue.addBulk(Array.from({ length: k }, () => ({ name: 'noop', data: payload })));
    });
    report('enqueue_batch_jobs_per_s', opt.n / ((now() - t0) / 1000));
    if (!await within(finished, 120e3)) note(`enqueue_batch: ${seen.noops} of ${opt.n} jobs ran within 120 s`);
  });

  await cpu('latency', opt.rate * opt.secs, async () => {
    note(`latency: ${opt.rate} jobs/s for ${opt.secs} s`);
    seen.latOn = true;
    let failed = 0;
    const sent = await paced(opt.rate, opt.secs * 1000, () => {
      queue.add('ping', { at: now() }).catch(() => { failed++; });
    });
    if (!await waitFor(() => seen.lat.length + failed >= sent, 60e3)) note(`latency: ${seen.lat.length} of ${sent} jobs started within 60 s`);
    if (failed) note(`latency: ${failed} adds failed`);
    report('latency_p50_ms', quantile(seen.lat, 0.5));
    report('latency_p99_ms', quantile(seen.lat, 0.99));
  });

  // The echo jobs stay after completing in both variants: waitUntilFinished
  // reads the finished job, and fails with "Missing key" once it is removed.
  await cpu('call', opt.calls, async () => {
    note(`call: ${opt.calls} sequential Queue.add + Job.waitUntilFinished (QueueEvents) round trips`);
    const events = new QueueEvents('bench', { connection });
    await events.waitUntilReady();
    const rts = [];
    for (let i = 0; i < opt.calls; i++) {
      const t0 = now();
      const job = await queue.add('echo', { at: i }, { removeOnComplete: false });
      await job.waitUntilFinished(events, 30e3);
      rts.push(now() - t0);
    }
    await events.close();
    report('call_p50_ms', quantile(rts, 0.5));
    report('call_p99_ms', quantile(rts, 0.99));
  });

  note(`delayed: ${opt.delayed} jobs due in 1 s (the delay option)`);
  for (let i = 0; i < opt.delayed; i++) {
    const t = Date.now();
    await queue.add('delayed', { at: t + 1000 }, { delay: 1000, timestamp: t });
  }
  if (!await waitFor(() => seen.lateness.length >= opt.delayed, 30e3)) note(`delayed: ${seen.lateness.length} of ${opt.delayed} jobs started within 30 s`);
  report('delay_lateness_p50_ms', quantile(seen.lateness, 0.5));
  report('delay_lateness_p99_ms', quantile(seen.lateness, 0.99));

  await worker.close();
  await queue.close();
}

// gatherBench times FlowProducer.add of one parent with `fanout` no-op
// children, from the call until the parent has completed, against the same
// children added plainly with one addBulk until the last has completed; one
// Worker (concurrency `concurrency`) runs both. `runs` rounds alternating
// which goes first after one uncounted round, as examples/bench -gather does;
// the names are that mode's: gather_<fanout>_ms, gather_plain_<fanout>_ms,
// gather_vs_plain.
async function gatherBench(connection) {
  const queue = new Queue('gather', { connection });
  const flows = new FlowProducer({ connection });
  const seen = { leaves: 0, want: -1, done: null, parent: null };
  const worker = new Worker('gather', async () => undefined, { connection, concurrency: opt.concurrency });
  worker.on('completed', (job) => {
    if (job.name === 'leaf' && ++seen.leaves === seen.want) seen.done();
    if (job.name === 'join' && job.id === seen.parent) seen.done();
  });
  worker.on('error', (err) => note(`worker: ${err.message}`));
  await worker.waitUntilReady();
  const children = () => Array.from({ length: opt.fanout }, (_, i) => ({ name: 'leaf', queueName: 'gather', data: { at: i + 1 } }));

  const plain = async () => {
    seen.leaves = 0; seen.want = opt.fanout;
    const finished = new Promise((r) => { seen.done = r; });
    const t0 = now();
    await queue.addBulk(children());
    if (!await within(finished, 120e3)) throw new Error(`plain: ${seen.leaves} of ${opt.fanout} jobs ran within 120 s`);
    return now() - t0;
  };
  const flow = async () => {
    seen.leaves = 0; seen.want = -1; seen.parent = null;
    const finished = new Promise((r) => { seen.done = r; });
    const t0 = now();
    const tree = await flows.add({ name: 'join', queueName: 'gather', data: {}, children: children() });
    seen.parent = tree.job.id; // the parent runs only after every child, so after this line
    if (!await within(finished, 120e3)) throw new Error(`flow: the parent did not complete within 120 s (${seen.leaves} children ran)`);
    return now() - t0;
  };

  await flow(); await plain();
  const g = [], p = [], ratio = [];
  for (let r = 1; r <= opt.runs; r++) {
    note(`gather round ${r} of ${opt.runs}`);
    let a, b;
    if (r % 2 === 0) { b = await plain(); a = await flow(); } else { a = await flow(); b = await plain(); }
    note(`  ${opt.fanout}-child flow ${a.toFixed(1)} ms, plain ${b.toFixed(1)} ms (${(a / b).toFixed(2)}x)`);
    g.push(a); p.push(b); ratio.push(a / b);
  }
  reportRuns(`gather_${opt.fanout}_ms`, g);
  reportRuns(`gather_plain_${opt.fanout}_ms`, p);
  reportRuns('gather_vs_plain', ratio);
  await worker.close();
  await flows.close();
  await queue.close();
}

function reportRuns(metric, xs) {
  xs.forEach((v, i) => report(`${metric}_run${i + 1}`, v));
  report(metric, [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);
}

// parallel calls f(0) to f(total-1) from `loops` async loops, each awaiting its call.
async function parallel(loops, total, f) {
  let next = 0;
  const loop = async () => { for (let i = next++; i < total; i = next++) await f(i); };
  await Promise.all(Array.from({ length: loops }, loop));
}

// paced calls f (without awaiting it) perSec times a second for ms; returns the count.
async function paced(perSec, ms, f) {
  const start = now();
  let sent = 0;
  while (now() - start < ms) {
    const w = start + (sent * 1000) / perSec - now();
    if (w > 0) await sleep(w);
    f();
    sent++;
  }
  return sent;
}

async function waitFor(cond, ms) {
  const deadline = now() + ms;
  while (!cond()) {
    if (now() > deadline) return false;
    await sleep(5);
  }
  return true;
}

async function within(promise, ms) {
  let timer;
  const expired = new Promise((r) => { timer = setTimeout(() => r(false), ms); });
  const ok = await Promise.race([promise.then(() => true), expired]);
  clearTimeout(timer);
  return ok;
}

async function usedMemory(admin) {
  const m = /^used_memory:(\d+)/m.exec(await admin.info('memory'));
  return m ? Number(m[1]) : 0;
}

// quantile is the q-quantile by the nearest rank below, as benchkit.Quantile; 0 for none.
function quantile(xs, q) {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(q * (s.length - 1))];
}

function flags(argv) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--?/, '');
    if (!(k in defaults)) {
      process.stderr.write(`bench.js: unknown flag ${argv[i]} (flags: ${Object.keys(defaults).map((f) => '--' + f).join(' ')})\n`);
      process.exit(2);
    }
    if (typeof defaults[k] === 'boolean') out[k] = true;
    else if (i + 1 >= argv.length || (typeof defaults[k] === 'number' && !Number.isFinite(Number(argv[i + 1])))) {
      process.stderr.write(`bench.js: ${argv[i]} needs a ${typeof defaults[k]}\n`);
      process.exit(2);
    } else out[k] = typeof defaults[k] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  return out;
}

main().then(() => process.exit(0), (err) => { process.stderr.write(`bench.js: ${err.stack || err}\n`); process.exit(1); });
