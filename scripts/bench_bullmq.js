// BullMQ throughput: add N jobs with addBulk (batches of 100), then a worker (concurrency C) runs them all.
const { Queue, Worker } = require('bullmq');
const [host, port] = process.argv[2].split(':');
const N = Number(process.argv[3] || 5000), C = Number(process.argv[4] || 50);
const connection = { host, port: Number(port) };
(async () => {
  const q = new Queue('bench', { connection });
  await q.obliterate({ force: true }).catch(() => {});
  const t0 = Date.now();
  for (let i = 0; i < N; i += 100) {
    await q.addBulk(Array.from({ length: Math.min(100, N - i) }, (_, j) => ({ name: 'j', data: { i: i + j } })));
  }
  const t1 = Date.now();
  let done = 0, resolve;
  const finished = new Promise(r => (resolve = r));
  const w = new Worker('bench', async job => job.data.i, { connection, concurrency: C });
  w.on('completed', () => { if (++done === N) resolve(); });
  await finished;
  const t2 = Date.now();
  await w.close(); await q.close();
  console.log(JSON.stringify({ add_per_s: Math.round(N / ((t1 - t0) / 1000)), process_per_s: Math.round(N / ((t2 - t1) / 1000)) }));
})().catch(e => { console.error(e); process.exit(1); });
