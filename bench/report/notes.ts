/** The report's notes: how every figure was measured, with this run's settings filled in. */
import { formatNumber, startNodeFlags } from '../lib.js'
import { BUSY_MACHINE_PERCENT, DEFAULT_JSON, NOISY_PERCENT, ROOT } from '../settings.js'
import { REQUEST_LOG } from '../targets.js'
import type { Report } from './common.js'

export function notes(report: Report): string {
  const s = report.settings
  const lines = [
    '## Notes',
    '',
    `- Every server is a separate child process started by \`bench/run.ts\`, one at a time, on 127.0.0.1 and a random free port: ` +
      '`node --import tsx bench/hello.ts` for the baseline (Fastify, logger off, a response schema), and the built server ' +
      `\`${['node', ...startNodeFlags(ROOT), 'dist/server.js'].join(' ')}\` for Plinth, as \`npm start\` runs it (\`LOG_LEVEL=warn\`, \`PLINTH_MODE=sandbox\`, \`PLINTH_REQUEST_LOG=${REQUEST_LOG}\`${REQUEST_LOG === 'off' ? ': the request log off, as in production; its cost is measured on its own by `bench/request-log.ts`, and `PLINTH_REQUEST_LOG=on npm run bench` measures with it' : ''}; \`dist/\` is rebuilt first when older than \`src/\`). ` +
      'The load generator (autocannon’s programmatic API for the request scenarios, workers on undici’s `request()` for the lifecycles) runs in the orchestrator, ' +
      `so it is never in the server’s process; on this ${report.machine.cores}-core machine the two do share the CPU.`,
    `- Load: ${s.connections} connections, no pipelining, a ${s.warmupSeconds} s warm-up run that is not counted, then ` +
      `${s.durationSeconds} s measured. req/s is the mean of autocannon’s per-second samples; latencies are autocannon’s, in whole milliseconds (it truncates, so <1 is under a millisecond). ` +
      'The ratio is req/s divided by the hello-world req/s of the same run, which travels better between machines than raw numbers.',
    `- Data: ${s.apps} apps (each with ${s.keysPerApp} server API keys: \`POST /sandbox/apps\`, \`POST /sandbox/apps/{app_id}/keys\`) and ` +
      `${formatNumber(s.users)} users (more where a scenario needs more per app: notify needs 550) are made through the sandbox API (\`POST /sandbox/users\`, ` +
      '`POST /sandbox/apps/{app_id}/authenticate` with the `username`, `payments`, `wallet_address` and `in_app_notifications` scopes, ' +
      `${s.seedConcurrency} requests in flight), each user signed in to one app (round robin). Every request scenario deals its requests in a shuffled ` +
      'order that uses every item before any repeats. `GET /v2/me` spreads its requests over every seeded user’s ' +
      'access token (`Authorization: Bearer …`), all distinct; the seeding table says how many were made on each server.',
    `- **\`GET /v2/payments/{id}\`** (\`Authorization: Key\`, a random key of the payment’s own app): over A2U payments made with \`POST /v2/payments\` for every ` +
      `seeded user (${s.data.paymentsPerUser} per user on average; each cancelled with \`POST /v2/payments/{id}/cancel\` before the user’s next one, ` +
      `the last one of every fourth user left open), plus ${s.data.completedPaymentsPerApp} per app taken to completion first, as the A2U flow does ` +
      '(signed with the app wallet, `POST /ledger/transactions`, `POST /v2/payments/{id}/complete`), so the answers have every shape: open, cancelled, ' +
      'completed with a linked transaction.',
    `- **\`GET /v2/ads_network/status/{adId}\`** (Key, a random key of the ad’s app): over ${s.data.adsPerUser} rewarded ad(s) per seeded user, ` +
      'shown with `POST /v2/client/ads/rewarded/show` and the user’s token (`AD_REWARDED` with an `adId`; pending, or granted once 2 s of platform time have passed).',
    '- **`GET /ledger/accounts/{address}`** (Horizon, no authentication, what stellar-sdk’s `loadAccount` calls): over every seeded user’s and app’s wallet.',
    `- **notify**: \`POST /v2/in_app_notifications/notify\` (Key) with \`{notifications: [256 × {title, body, user_uid, subroute: '/x'}]}\`, the 256 being ` +
      'distinct users of the key’s app, chosen at random among the apps. An answer counts only when it is a 201 with `success: true` and all 256 in ' +
      '`delivered_notifications` (autocannon hands every answer to a check); a 403 (quota) or anything else is an error. The quota, 48 notifications per ' +
      'app and user in any 24 hours of platform time, is kept exactly from the load generator: each app’s users are split in two halves; a batch takes the ' +
      'next 256 users of the current half in a shuffled order, so after n batches every user of a half of H has had ⌊256n/H⌋ or ⌈256n/H⌉; at ⌊48H/256⌋ ' +
      'batches (an epoch) the platform clock is moved a day and a second (`POST /sandbox/clock {advance_seconds: 86401}`), which takes everything ' +
      'sent before out of every window, and the next epoch uses the other half. A batch still in flight across a clock move therefore never counts in ' +
      'the window of the users being notified next (an epoch starting before every batch of the epoch before last was answered would be named in ' +
      'the summary under the table; a 403 would show any slip), and the quota is used to the last notification. Notify runs last on its server ' +
      '(after the scaling runs), as moving the clock a day expires the access tokens and puts freshly signed transactions outside their time bounds. ' +
      'The server must lock, count and insert for 256 users per request; batches of the same app share most of their users, so concurrent ' +
      'requests of one app queue on the same rows, as they would for an app broadcasting to its users. Notify runs on PostgreSQL only: on PGlite ' +
      '(one connection, so every transaction waits for the one before) trial runs of 32 concurrent batches had a tail past autocannon’s 10 s ' +
      'timeout (p99 7.5 s, a few timeouts), which would void the row.',
    `- Payment lifecycles are flows of several requests, so they are not run by autocannon: ${s.flowWorkers} workers in the orchestrator each loop one ` +
      'lifecycle after another over keep-alive connections (undici’s `request()`), for the same warm-up (not counted) and measured time as the request ' +
      'scenarios; a lifecycle counts when its last answer arrives inside the measured window, and lifecycles/s is that count ÷ the window. ' +
      'Latency is per whole lifecycle (first request sent to last answer read). Any answer but the expected status (or a body that says otherwise) fails ' +
      'the lifecycle and counts as an error; the run warns loudly. After the window each worker finishes the lifecycle it is in (not counted), so nothing is left half paid.',
    `- Each worker has its own app and its own ${s.flowUsersPerWorker} users of that app, seeded for the flows (\`POST /sandbox/apps\`, whose wallet seed the ` +
      'worker signs with, and users signed in with the `username`, `payments` and `wallet_address` scopes): a user has at most one open payment per app ' +
      'in each direction, and an app account’s transactions must carry consecutive sequence numbers. Each lifecycle pays 0.01 test Pi to or from the ' +
      'worker’s next user in turn.',
    '- **A2U lifecycle**: `POST /v2/payments` (`Authorization: Key`, `{payment: {amount: 0.01, memo, metadata: {}, uid}}`, 200) → the worker builds and ' +
      'signs (built with @stellar/stellar-base, signed with node:crypto’s ed25519, as stellar-base does when sodium-native is installed) a native payment of the amount from the app wallet to the payment’s `to_address`, text memo = the payment ' +
      'identifier, network passphrase = the payment’s `network`, fee 100, timeout 180 s → `POST /ledger/transactions` with the form field ' +
      '`tx=<base64 envelope>` (200, `{hash, …}`) → `POST /v2/payments/{id}/complete {txid: hash}` (200, `developer_completed: true`). The app ' +
      'account’s sequence is read once from `GET /ledger/accounts/{address}` and then counted locally (+1 per transaction), as a busy app backend ' +
      'would; afterwards the ledger’s sequence of every app account must equal the count. Signing costs the load generator CPU (see the step times).',
    '- **U2A lifecycle**: `POST /v2/client/payments` (`Authorization: Bearer`, `{amount: 0.01, memo, metadata: {}}`, 201) → ' +
      '`POST /v2/payments/{id}/approve` (Key, 200) → `POST /v2/client/payments/{id}/submit` (Bearer, 200: the platform signs the user’s ' +
      'transaction and submits it to the ledger; `transaction.verified: true`) → `POST /v2/payments/{id}/complete {txid}` (Key, 200). Here the signing is the server’s.',
    '- After the flows, no payment of the flow apps may be left open (`GET /v2/payments/incomplete_server_payments`, `GET /v2/client/payments/incomplete`), ' +
      'and `GET /sandbox/ledger/check` must answer `ok: true` (every balance = its fundings + payments received − payments sent − fees, total balances = total funded − fees burned).',
    `- pgbench is PostgreSQL’s own benchmark, run against the same PostgreSQL server while no Plinth runs: a scratch database \`bench_pgbench_<hex>\` ` +
      `(created, then dropped), \`pgbench -i -s ${s.pgbench.scale}\`, then \`pgbench -b tpcb-like -c ${s.pgbench.clients} -j ${s.pgbench.threads} -T ${s.pgbench.seconds}\` ` +
      '(pgbench’s client shares the machine like the load generator does). A TPC-B-like transaction is 5 statements (3 updates, a select, an insert) ' +
      'in one commit; an A2U lifecycle is three HTTP requests, each with its own database work (authenticating the key, reading and writing the ' +
      'payment; applying the ledger transaction locks both accounts, moves the sequence and the balances, inserts the transaction and its operation ' +
      'and links the payment), so the ratio says how much of what the database itself can commit one payment costs.',
    '- CPU is read from `/proc`: the server process’s user + system time, this process’s (the load generator’s) own, on PostgreSQL, the ' +
      'backends serving the server (found in `pg_stat_activity` by the `application_name` its connections carry, one per schema: neither ' +
      'another client of that PostgreSQL nor its own background processes, the WAL writer and checkpointer included), and the whole ' +
      'machine’s busy time; “others, during the run” is what is left: other work on the machine, PostgreSQL’s background processes among it. ' +
      'When the load generator is near 100% ' +
      'it, not the server, may be the limit, which matters most for the hello-world baseline. “Others, before the run” is the CPU used by other processes (neither the server nor ' +
      `the load generator) over half a second (a quarter in --quick) just before the warm-up: anything above ${BUSY_MACHINE_PERCENT}% (⚠) means other work shared the machine and the row is noisy. ` +
      (s.quietWait.totalSeconds > 0
        ? `When others are that busy, the run first waits for them, up to ${s.quietWait.perMeasurementSeconds} s per measurement; when others took more than ` +
          `${NOISY_PERCENT}% during a measured run, it is run again once and the quieter of the two kept (“run twice”); waiting and running again ` +
          `share an allowance of ${s.quietWait.totalSeconds} s per benchmark run.`
        : 'A `--quick` run neither waits for them nor measures again.'),
    '- Errors are non-2xx answers, connection errors (timeouts included) and answers that failed their check for the request rows, failed lifecycles ' +
      'for the lifecycle rows, warm-up included; any other count than 0 invalidates the row and the run warns loudly.',
    `- Scaling: after the one-process runs on PostgreSQL, ${s.scalingProcesses.length === 0 ? 'no' : s.scalingProcesses.join(' and ')} Plinth ` +
      'processes on the same database and data (see the scaling section). The first extra process is started alone on the migrated schema: its ' +
      'spawn → `/readyz` is the warm start on PostgreSQL in the startup table (the first row of PostgreSQL is a new schema, with its migrations).',
    '- Peak RSS is the server process’s VmRSS (from `/proc/<pid>/status`), sampled every 200 ms during the measured run only; one server process ' +
      'serves every scenario of its backend in turn, so a row also carries what earlier scenarios left in memory. With several processes it is the sum of each one’s peak.',
    '- Startup is the time from spawn to the first 200 from `GET /readyz`, polled every 20 ms; “reported by Plinth” is the `ready in … ms` of ' +
      'its banner (configuration read to listening: opening the database, migrations, building the app), without Node’s own start and module loading. ' +
      'Cold is PGlite in a new temporary `PLINTH_DATA_DIR` (creating the database cluster, migrating, seeding the demo app); warm is a second start ' +
      'on the same directory. The in-memory and PostgreSQL rows are the starts of the servers measured above; on PostgreSQL the server ' +
      'creates a fresh schema `bench_<hex>`, which is dropped afterwards.',
    '- `npm run bench -- --only A2U --cpu-prof` (or `--only notify`, `--only payments`, …) runs just the matching scenarios with the one-process Plinth servers ' +
      'under `node --cpu-prof` and prints where their CPU went during each measured window (by package and by function); it writes nothing here, as the ' +
      'profiler slows the server.',
    `- \`npm run bench -- --json [file]\` also writes the run's results (this report's figures: settings, machine, every row with its CPU and memory, ` +
      `pgbench, startup, the targets' verdicts) as JSON, by default to \`${DEFAULT_JSON}\`, so that runs can be compared.`,
  ]
  if (s.quick)
    lines.push(
      '- This was a `--quick` run: fewer users, payments and workers, short runs, every scenario but `GET /v2/me` on PostgreSQL only, ' +
        `the scaling runs with ${s.scalingProcesses.join(' and ')} processes and of the request scenarios only, and no startup on disk: a smoke test rather than numbers to compare.`,
    )
  return lines.join('\n')
}
