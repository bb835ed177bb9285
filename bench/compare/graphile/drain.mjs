// graphile-worker side of herald's drain comparison (bench/compare/run.sh).
//
//   node drain.mjs prepare URL JOBS     install graphile-worker, add JOBS no-op jobs
//   node drain.mjs work URL CONCURRENCY [READY]  run a worker with batching on, until
//                                       killed; create the file READY once started
//   node drain.mjs watch URL JOBS [READY]  wait until no job is left, print jobs/s
//                                       (the clock starts when READY exists)
//
// Batching as graphile-worker documents it for throughput: a local queue (jobs
// fetched in batches) and batched completion (completeJobBatchDelay 0).
// With DELIVER_URL in the environment each job POSTs a SendGrid-shaped request to
// DELIVER_URL/v3/mail/send with Node's fetch (keep-alive by default; the CA comes from
// NODE_EXTRA_CA_CERTS), for bench/compare/deliver.sh.
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";

const [cmd, url, arg] = process.argv.slice(2);
// Silent: graphile-worker logs every job at INFO, which would cost it CPU here.
const logger = new Logger(() => () => {});
const n = Number(arg);

if (cmd === "prepare") {
  const utils = await makeWorkerUtils({ connectionString: url, logger });
  await utils.migrate();
  for (let done = 0; done < n; done += 5000) {
    const specs = [];
    for (let i = 0; i < Math.min(5000, n - done); i++) specs.push({ identifier: "noop", payload: {} });
    await utils.addJobs(specs);
  }
  await utils.release();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("VACUUM ANALYZE graphile_worker._private_jobs");
  await client.end();
} else if (cmd === "work") {
  const runner = await run({
    logger,
    taskList: {
      noop: process.env.DELIVER_URL
        ? async (_payload, helpers) => {
            const res = await fetch(process.env.DELIVER_URL + "/v3/mail/send", {
              method: "POST",
              headers: { Authorization: "Bearer SG.bench", "Content-Type": "application/json" },
              body: JSON.stringify({
                personalizations: [{ to: [{ email: `u${helpers.job.id}@example.com` }] }],
                from: { email: "bench@example.com" }, subject: "Hi",
                content: [{ type: "text/plain", value: "Hello" }],
              }),
            });
            await res.arrayBuffer();
            if (!res.ok) throw new Error(`provider answered ${res.status}`);
          }
        : async () => {},
    },
    preset: {
      worker: {
        connectionString: url,
        concurrentJobs: n,
        maxPoolSize: 10,
        pollInterval: 1000,
        localQueue: { size: 2 * n },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
        logger,
      },
    },
    noHandleSignals: false,
  });
  // Started: tell the watcher (its clock starts with the first worker ready).
  if (process.argv[5]) (await import("node:fs")).writeFileSync(process.argv[5], "");
  await runner.promise;
} else if (cmd === "watch") {
  // EXISTS every 50 ms (cheap), a count every second for the progress line only, as
  // the herald bench's drain does.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // The clock starts when the first worker process has started (as herald's starts
  // when its runners listen): process start-up is not part of the drain.
  const fs = await import("node:fs");
  while (process.argv[5] && !fs.existsSync(process.argv[5])) await new Promise((r) => setTimeout(r, 5));
  const start = Date.now();
  let lastCount = start;
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const { rows } = await client.query("SELECT EXISTS (SELECT FROM graphile_worker._private_jobs) AS more");
    const secs = (Date.now() - start) / 1000;
    if (!rows[0].more) {
      process.stderr.write(`\r\x1b[Kgraphile-worker: ${n} jobs in ${secs.toFixed(2)}s\n`);
      console.log(Math.round(n / secs));
      break;
    }
    if (Date.now() - lastCount >= 1000) {
      const c = await client.query("SELECT count(*)::int AS left FROM graphile_worker._private_jobs");
      lastCount = Date.now();
      process.stderr.write(`\r\x1b[Kgraphile-worker: ${c.rows[0].left} of ${n} left, ${secs.toFixed(1)}s`);
    }
    if (secs > 600) throw new Error("jobs left after 10 minutes");
  }
  await client.end();
} else {
  console.error("usage: node drain.mjs prepare|work|watch URL N");
  process.exit(2);
}
