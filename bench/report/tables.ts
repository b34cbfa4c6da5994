import { formatLatency, formatNumber, type MachineInfo, markdownTable, type PgbenchResult, packageVersion, startNodeFlags } from '../lib.js'
import { invalid, type LedgerRow, type LoadRow, othersDuring, percent, type SeedRow, type StartupRow } from '../rows.js'
import { BUSY_MACHINE_PERCENT, DEFAULT_JSON, NOISY_PERCENT, ROOT, type Settings } from '../settings.js'
import { REQUEST_LOG } from '../targets.js'

// ---------------------------------------------------------------------------------------------
// The report.

export interface Report {
  settings: Settings
  machine: MachineInfo
  postgres: string | undefined
  date: string
  loads: LoadRow[]
  startups: StartupRow[]
  seeds: SeedRow[]
  ledgerChecks: LedgerRow[]
  pgbench: PgbenchResult | undefined
  /** Why there is no pgbench row, when there is none. */
  pgbenchMissing: string | undefined
}

/** Two significant digits, for ratios far below 1 (0.0057). */
function smallRatio(value: number): string {
  return value >= 0.1 ? value.toFixed(2) : value.toPrecision(2)
}

export function whereLabel(row: LoadRow): string {
  return row.processes === 1 ? row.backendLabel : `${row.backendLabel}, ${row.processes} processes`
}

export function single(loads: readonly LoadRow[]): LoadRow[] {
  return loads.filter((row) => row.processes === 1)
}

/** The request rate of a row: req/s for request rows (also those that count items), undefined for flows. */
function requestRate(row: LoadRow): number | undefined {
  return row.detail.kind === 'request' ? row.detail.load.requestsPerSecond : undefined
}

function helloBaseline(loads: readonly LoadRow[]): number | undefined {
  return loads.find((row) => row.backend === 'fastify')?.throughput
}

function loadTable(loads: LoadRow[], pgbenchTps: number | undefined): string {
  const baseline = helloBaseline(loads)
  const rows = single(loads).map((row) => {
    const flow = row.detail.kind === 'flow'
    const rate = requestRate(row)
    const toHello =
      baseline === undefined || baseline === 0
        ? 'n/a'
        : flow
          ? `${smallRatio(row.throughput / baseline)}× (lifecycles/s ÷ req/s)`
          : row.unit !== 'req/s' && rate !== undefined
            ? `${smallRatio(rate / baseline)}× (${formatNumber(rate)} req/s ÷ req/s)`
            : `${(row.throughput / baseline).toFixed(2)}×`
    const toPgbench = !row.scenario.startsWith('A2U')
      ? ''
      : pgbenchTps === undefined || pgbenchTps === 0
        ? 'n/a'
        : `${smallRatio(row.throughput / pgbenchTps)}× (lifecycles/s ÷ TPS)`
    return [
      row.scenario,
      row.backendLabel,
      formatNumber(row.throughput, flow ? 1 : 0),
      row.unit,
      toHello,
      toPgbench,
      formatLatency(row.latencyP50),
      formatLatency(row.latencyP99),
      formatLatency(row.latencyMax),
      row.errors === 0 ? '0' : `**${row.errors}** ⚠`,
      row.peakRssMb === undefined ? 'n/a' : row.peakRssMb.toFixed(0),
    ]
  })
  const summaries = single(loads)
    .filter((row) => row.summary !== undefined)
    .map((row) => `- ${row.scenario}, ${row.backendLabel}: ${row.summary ?? ''}.`)
  return markdownTable(
    [
      'scenario',
      'backend',
      'throughput',
      'unit',
      'ratio to hello-world req/s',
      'ratio to pgbench TPS',
      'p50 (ms)',
      'p99 (ms)',
      'max (ms)',
      'errors',
      'peak RSS MB',
    ],
    rows,
    ['left', 'left', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    '\n\nOne Plinth process. Throughput is in the row’s unit. For the request rows (req/s), the ratio is req/s ÷ the hello-world req/s and latencies are per request. ' +
      'For notify, the throughput is the notifications delivered per second (every request carries 256, and every answer must be a 201 delivering all 256), ' +
      'the ratio compares its requests per second with hello-world’s and the latencies are per request of 256. ' +
      'For the lifecycle rows (lifecycles/s), the ratio to hello-world is **lifecycles/s ÷ hello-world req/s** (a lifecycle is 3 HTTP requests ' +
      'for A2U plus a transaction signed by the load generator, 4 for U2A), latencies are per whole lifecycle. Errors include the warm-up’s: failed lifecycles, ' +
      'non-2xx answers, connection errors and answers that failed their check. ' +
      'The A2U rows also show **lifecycles/s ÷ `pgbench -b tpcb-like` TPS** of the PostgreSQL server Plinth used (see pgbench below; ' +
      'on the PGlite row it compares with that same PostgreSQL figure, as PGlite has no pgbench).',
    summaries.length === 0 ? '' : `\n\n${summaries.join('\n')}`,
  )
}

/** The PostgreSQL server's share, on the rows that use it. */
function postgresCpu(row: LoadRow): number | undefined {
  return row.backend === 'postgres' ? row.postgresCpuPercent : undefined
}

export function flagged(value: number | undefined): string {
  return `${percent(value)}${(value ?? 0) > BUSY_MACHINE_PERCENT ? ' ⚠' : ''}`
}

function cpuTable(loads: LoadRow[], cores: number): string {
  return markdownTable(
    [
      'scenario',
      'backend',
      'server process',
      'load generator',
      'PostgreSQL',
      'others, during the run',
      'whole machine',
      'others, before the run',
    ],
    single(loads).map((row) => [
      row.scenario,
      row.backendLabel,
      percent(row.serverCpuPercent),
      percent(row.generatorCpuPercent),
      row.backend === 'postgres' ? percent(postgresCpu(row)) : '–',
      `${flagged(othersDuring(row))}${row.remeasured === true ? ' (run twice)' : ''}`,
      percent(row.machineCpuPercent),
      flagged(row.backgroundCpuPercent),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    `\n\nIn % of one core, over the measured run; the machine has ${cores} cores, so ${cores * 100}% is all of it. ` +
      'The load generator of the lifecycle rows includes building and signing the A2U transactions (@stellar/stellar-base, node:crypto ed25519); ' +
      'the notify row’s includes building the 256-notification bodies and reading every answer.',
  )
}

/** The scaling rows next to the one-process row of the same scenario on the same backend. */
function scalingTable(loads: LoadRow[]): string | undefined {
  const scaled = loads.filter((row) => row.processes > 1)
  if (scaled.length === 0) return undefined
  const names = [...new Set(scaled.map((row) => row.scenario))]
  const rows: string[][] = []
  for (const name of names) {
    const base = loads.find((row) => row.scenario === name && row.processes === 1 && row.backend === scaled[0]?.backend)
    const family = [...(base === undefined ? [] : [base]), ...scaled.filter((row) => row.scenario === name)]
    for (const row of family) {
      const flow = row.detail.kind === 'flow'
      rows.push([
        row.scenario,
        String(row.processes),
        formatNumber(row.throughput, flow ? 1 : 0),
        row.unit,
        base === undefined || base.throughput === 0 ? 'n/a' : `${(row.throughput / base.throughput).toFixed(2)}×`,
        formatLatency(row.latencyP50),
        formatLatency(row.latencyP99),
        row.errors === 0 ? '0' : `**${row.errors}** ⚠`,
        row.peakRssMb === undefined ? 'n/a' : row.peakRssMb.toFixed(0),
        percent(row.serverCpuPercent),
        percent(postgresCpu(row)),
        percent(row.generatorCpuPercent),
        flagged(othersDuring(row)),
        percent(row.machineCpuPercent),
        flagged(row.backgroundCpuPercent),
      ])
    }
  }
  return markdownTable(
    [
      'scenario',
      'Plinth processes',
      'throughput',
      'unit',
      'vs 1 process',
      'p50 (ms)',
      'p99 (ms)',
      'errors',
      'peak RSS MB (sum)',
      'Plinth CPU (sum)',
      'PostgreSQL',
      'load generator',
      'others, during',
      'whole machine',
      'others, before',
    ],
    rows,
    ['left', 'right', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
}

/** The text under the scaling table: what limits it here, with this run's CPU figures. */
function scalingNote(loads: LoadRow[], cores: number): string {
  const scaled = loads.filter((row) => row.processes > 1)
  const busiest = [...scaled].sort((a, b) => (b.machineCpuPercent ?? 0) - (a.machineCpuPercent ?? 0))[0]
  const oneProcess = single(loads).filter((row) => row.backend === 'postgres' && scaled.some((other) => other.scenario === row.scenario))
  const cpuOf = (row: LoadRow) =>
    `${row.scenario} (${whereLabel(row)}): whole machine ${percent(row.machineCpuPercent)}, Plinth ${percent(row.serverCpuPercent)}, ` +
    `PostgreSQL ${percent(postgresCpu(row))}, load generator ${percent(row.generatorCpuPercent)}, others ${percent(othersDuring(row))}`
  return [
    `The same scenarios with the load spread round robin over several Plinth processes (\`${['node', ...startNodeFlags(ROOT), 'dist/server.js'].join(' ')}\` each, on its own port, ` +
      'with the same `DATABASE_URL`, `PLINTH_DB_SCHEMA` and `PLINTH_SECRET_KEY`, each with its own connection pool and credential cache) on the data ' +
      'seeded for the one-process runs: one autocannon over one URL per process (its connections dealt round robin, the same total of connections), ' +
      'and for the A2U lifecycle, each worker sending its requests to the processes in turn. “vs 1 process” divides by the one-process row above; ' +
      'the RSS is the sum of each process’s peak.',
    '',
    `**This machine cannot show much scaling**: it has ${cores} cores, and PostgreSQL, the load generator and every Plinth process share them. ` +
      (oneProcess.length === 0
        ? ''
        : `With one process the machine is already ${oneProcess.map((row) => percent(row.machineCpuPercent)).join(' / ')} busy ` +
          `(of ${cores * 100}%) in ${oneProcess.map((row) => row.scenario).join(' / ')}. `) +
      (busiest === undefined ? '' : `The busiest multi-process run: ${cpuOf(busiest)}. `) +
      'More processes add parallelism only where a single one leaves cores idle (waiting on PostgreSQL round trips); once the cores are full they just ' +
      'split the same CPU and add scheduling and connection overhead. The factor is a lower bound of what separate machines (or more cores) would show.',
  ].join('\n')
}

function flowTable(loads: LoadRow[]): string {
  const rows: string[][] = []
  for (const row of loads) {
    if (row.detail.kind !== 'flow') continue
    const { flow, workers, problems } = row.detail
    rows.push([
      row.scenario,
      whereLabel(row),
      String(workers),
      `${formatNumber(flow.lifecycles)} in ${flow.measuredSeconds.toFixed(1)} s`,
      flow.requestsPerLifecycle.toFixed(1),
      flow.steps.map((step) => `${step.name} ${step.meanMs.toFixed(1)}`).join(' · '),
      `${formatNumber(flow.warmupLifecycles)}, ${flow.warmupErrors} errors`,
      problems.length === 0 ? 'none' : `**${problems.length}** ⚠`,
    ])
  }
  return markdownTable(
    [
      'scenario',
      'backend',
      'workers',
      'lifecycles counted',
      'HTTP requests per lifecycle',
      'mean ms per step (client side)',
      'warm-up (not counted)',
      'left open afterwards',
    ],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'left', 'right', 'right'],
  )
}

type Verdict = 'met' | 'missed' | 'not measured' | 'invalid'

interface TargetRow {
  target: string
  goal: string
  measured: string
  verdict: Verdict
}

/** Issue 6's targets, judged on this run's one-process PostgreSQL rows. */
function targetRows(report: Report): TargetRow[] {
  const postgres = single(report.loads).filter((row) => row.backend === 'postgres')
  const hello = report.loads.find((row) => row.backend === 'fastify')
  const find = (scenario: string) => postgres.find((row) => row.scenario === scenario)
  const judge = (
    row: LoadRow | undefined,
    value: (row: LoadRow) => number | undefined,
    ok: (value: number) => boolean,
    show: (value: number, row: LoadRow) => string,
  ) => {
    if (row === undefined) return { measured: 'not in this run', verdict: 'not measured' as const }
    const found = value(row)
    if (found === undefined) return { measured: 'n/a', verdict: 'not measured' as const }
    const text = show(found, row)
    if (invalid(row) || (hello !== undefined && invalid(hello)))
      return { measured: `${text} (the run had errors)`, verdict: 'invalid' as const }
    return { measured: text, verdict: ok(found) ? ('met' as const) : ('missed' as const) }
  }
  const toHello = (scenario: string, share: number): TargetRow => ({
    target: `\`${scenario}\` req/s vs hello-world`,
    goal: `≥ ${(share * 100).toFixed(0)}%`,
    ...judge(
      find(scenario),
      (row) => (hello === undefined || hello.throughput === 0 ? undefined : row.throughput / hello.throughput),
      (ratio) => ratio >= share,
      (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput)} ÷ ${formatNumber(hello?.throughput ?? 0)})`,
    ),
  })
  const a2u = find('A2U lifecycle')
  const pgbench = report.pgbench?.tps
  const notify = postgres.find((row) => row.unit === 'notifications/s')
  const rssRows = postgres.filter((row) => row.peakRssMb !== undefined)
  const heaviest = [...rssRows].sort((a, b) => (b.peakRssMb ?? 0) - (a.peakRssMb ?? 0))[0]
  const warm = report.startups.find((row) => row.warmPostgres === true)
  return [
    toHello('GET /v2/me', 0.5),
    toHello('GET /v2/payments/{id}', 0.3),
    toHello('GET /v2/ads_network/status/{adId}', 0.3),
    {
      target: 'A2U lifecycles/s',
      goal: '≥ 1,000',
      ...judge(
        a2u,
        (row) => row.throughput,
        (value) => value >= 1000,
        (value) => formatNumber(value, 1),
      ),
    },
    {
      target: 'A2U lifecycles/s vs `pgbench -b tpcb-like` TPS',
      goal: '≥ 25%',
      ...judge(
        a2u,
        (row) => (pgbench === undefined || pgbench === 0 ? undefined : row.throughput / pgbench),
        (ratio) => ratio >= 0.25,
        (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput, 1)} ÷ ${formatNumber(pgbench ?? 0)})`,
      ),
    },
    {
      target: 'notify, delivered notifications/s in 256-batches (quota enforced)',
      goal: '≥ 50,000',
      ...judge(
        notify,
        (row) => row.throughput,
        (value) => value >= 50_000,
        (value) => formatNumber(value),
      ),
    },
    {
      target: 'peak RSS under load (the highest of the scenarios)',
      goal: '< 250 MB',
      ...(heaviest === undefined
        ? { measured: 'not in this run', verdict: 'not measured' as const }
        : {
            measured: `${(heaviest.peakRssMb ?? 0).toFixed(0)} MB (${heaviest.scenario}; lowest ${Math.min(...rssRows.map((row) => row.peakRssMb ?? 0)).toFixed(0)} MB)`,
            verdict: (heaviest.peakRssMb ?? 0) < 250 ? ('met' as const) : ('missed' as const),
          }),
    },
    {
      target: 'warm start, spawn → `/readyz` 200 (migrated schema)',
      goal: '< 1.5 s',
      ...(warm === undefined
        ? { measured: 'not in this run', verdict: 'not measured' as const }
        : {
            measured: `${formatNumber(warm.startupMs)} ms (Plinth’s own ready: ${warm.serverReadyMs === undefined ? 'n/a' : `${formatNumber(warm.serverReadyMs)} ms`})`,
            verdict: warm.startupMs < 1500 ? ('met' as const) : ('missed' as const),
          }),
    },
  ]
}

function targetsSection(report: Report): string {
  const rows = targetRows(report)
  const mark = (verdict: Verdict) => (verdict === 'met' ? 'met ✓' : verdict === 'missed' ? '**missed** ✗' : verdict)
  const counted = (verdict: Verdict) => rows.filter((row) => row.verdict === verdict).length
  return [
    'Issue 6’s targets for a 2-core machine, judged on this run: PostgreSQL, one Plinth process, hello-world and pgbench measured minutes apart on the same machine.',
    '',
    markdownTable(
      ['target', 'goal', 'this run', 'verdict'],
      rows.map((row) => [row.target, row.goal, row.measured, mark(row.verdict)]),
      ['left', 'left', 'right', 'left'],
    ),
    '',
    `${counted('met')} met, ${counted('missed')} missed${counted('invalid') > 0 ? `, ${counted('invalid')} invalid (errors)` : ''}` +
      `${counted('not measured') > 0 ? `, ${counted('not measured')} not measured in this run` : ''}. ` +
      'Issue 6 also asks that revocation and consent withdrawal take effect on every process within a second while `GET /v2/me` is fast; ' +
      'that is a correctness property the tests check, not something this benchmark measures.' +
      (report.settings.quick ? ' This was a `--quick` run: short runs on less data, a smoke test rather than a verdict.' : ''),
  ].join('\n')
}

function ledgerTable(checks: LedgerRow[]): string {
  return markdownTable(
    ['backend', 'ok', 'total balances', 'total funded', 'fees burned', 'negative balances', 'mismatched accounts'],
    checks.map(({ backendLabel, check }) => [
      backendLabel,
      check.ok ? 'yes' : '**NO** ⚠',
      check.totalBalances,
      check.totalFunded,
      check.totalFees,
      String(check.negativeBalances),
      String(check.mismatchedAccounts),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
  )
}

function pgbenchTable(result: PgbenchResult, postgres: string | undefined): string {
  const server = postgres === undefined ? 'PostgreSQL' : (/^PostgreSQL [\d.]+/.exec(postgres)?.[0] ?? 'PostgreSQL')
  return markdownTable(
    ['server', 'scale', 'clients', 'threads', 'duration (s)', 'TPS', 'latency average (ms)', 'transactions', 'failed', 'whole machine CPU'],
    [
      [
        server,
        String(result.scale),
        String(result.clients),
        String(result.threads),
        String(result.seconds),
        formatNumber(result.tps),
        result.latencyAverageMs === undefined ? 'n/a' : result.latencyAverageMs.toFixed(1),
        result.transactions === undefined ? 'n/a' : formatNumber(result.transactions),
        result.failedTransactions === undefined ? 'n/a' : String(result.failedTransactions),
        result.machineCpuPercent === undefined ? 'n/a' : `${result.machineCpuPercent.toFixed(0)}%`,
      ],
    ],
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
}

function startupTable(startups: StartupRow[]): string {
  return markdownTable(
    ['server', 'spawn → /readyz 200 (ms)', 'reported by Plinth (ms)', 'RSS when ready MB'],
    startups.map((row) => [
      row.label,
      formatNumber(row.startupMs),
      row.serverReadyMs === undefined ? 'n/a' : formatNumber(row.serverReadyMs),
      row.rssMb === undefined ? 'n/a' : row.rssMb.toFixed(0),
    ]),
    ['left', 'right', 'right', 'right'],
  )
}

function seedTable(seeds: SeedRow[], concurrency: number): string {
  return markdownTable(
    ['backend', 'for', 'made', 'seconds', `made per second (${concurrency} requests in flight)`],
    seeds.map((row) => [row.backendLabel, row.purpose, row.made, row.seconds.toFixed(1), formatNumber(row.items / row.seconds)]),
    ['left', 'left', 'left', 'right', 'right'],
  )
}

function notes(report: Report): string {
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
    '- CPU is read from `/proc`: the server process’s user + system time, this process’s (the load generator’s) own, every `postgres` process’s ' +
      '(the local PostgreSQL server: its backends serve Plinth, but also any other client of that server), and the whole machine’s busy time; ' +
      '“others, during the run” is what is left: other work on the machine (on the Fastify and PGlite rows, PostgreSQL’s own CPU counts there too). ' +
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

/** The run's results as JSON (`--json`): the report's own data, its targets judged, bigints as strings. */
export function resultsJson(report: Report): string {
  const results = { version: 1, ...report, targets: targetRows(report) }
  return `${JSON.stringify(results, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value), 2)}\n`
}

/** CPU time per unit of work, in µs, from a % of one core over a run at `throughput` units/s. */
function microsPer(cpuPercent: number | undefined, throughput: number): number | undefined {
  return cpuPercent === undefined || throughput <= 0 ? undefined : (cpuPercent / 100) * (1_000_000 / throughput)
}

const micros = (value: number | undefined): string => (value === undefined ? '–' : `${formatNumber(Math.round(value))} µs`)

/** Units/s that `cores` cores give at `perUnit` µs of CPU each. */
const perCores = (perUnit: number | undefined, cores: number): number | undefined =>
  perUnit === undefined || perUnit <= 0 ? undefined : (cores * 1_000_000) / perUnit

/**
 * The scaling model (issue 17, section 4), from the one-process PostgreSQL rows of this run: CPU
 * per unit of work in Plinth and in PostgreSQL, what one core of each serves, and what a few
 * deployment sizes would serve, the smaller of the two sides. Plinth processes share nothing but
 * the database, so Plinth's side scales with its cores; PostgreSQL's side is one primary here.
 */
export function scalingModel(report: Report): string | undefined {
  const rows = single(report.loads).filter((row) => row.backend === 'postgres' && !invalid(row))
  if (rows.length === 0) return undefined
  const deployments = [
    { plinth: 4, postgres: 4 },
    { plinth: 16, postgres: 8 },
    { plinth: 64, postgres: 32 },
  ]
  const table = markdownTable(
    [
      'scenario',
      'unit',
      'Plinth CPU per unit',
      'PostgreSQL CPU per unit',
      'per Plinth core',
      'per PostgreSQL core',
      ...deployments.map((d) => `${d.plinth} Plinth + ${d.postgres} PostgreSQL cores`),
    ],
    rows.map((row) => {
      const unit = row.unit.replace('/s', '')
      const plinth = microsPer(row.serverCpuPercent, row.throughput)
      const postgres = microsPer(row.postgresCpuPercent, row.throughput)
      const served = (cores: { plinth: number; postgres: number }) => {
        const sides = [perCores(plinth, cores.plinth), perCores(postgres, cores.postgres)].filter((v): v is number => v !== undefined)
        return sides.length === 0 ? '–' : formatNumber(Math.round(Math.min(...sides)))
      }
      return [
        row.scenario,
        unit,
        micros(plinth),
        micros(postgres),
        perCores(plinth, 1) === undefined ? '–' : formatNumber(Math.round(perCores(plinth, 1) ?? 0)),
        perCores(postgres, 1) === undefined ? '–' : formatNumber(Math.round(perCores(postgres, 1) ?? 0)),
        ...deployments.map(served),
      ]
    }),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
  return (
    `${table}\n\nFrom the one-process PostgreSQL rows above: CPU per unit is the process's CPU over the run divided by what it served ` +
    '(Plinth: the server process; PostgreSQL: every `postgres` process of the server, so a little of its background work is in it). ' +
    'A deployment serves the smaller of its two sides: Plinth processes share nothing but the database, so their side grows with their cores ' +
    '(one process per core: `npm start` is one event loop); the PostgreSQL side is one primary. Figures measured on a shared 2-core machine with the ' +
    'load generator on it, so CPU per unit is if anything high. What the model leaves out, and the limits it does not show, are in ' +
    '“Performance work (issue 17)” below.'
  )
}

/** Hand-written sections a run keeps, in this order, after the generated ones. */
export const KEPT_SECTIONS = [
  'Performance work (issue 17)',
  'Memory of the embedded default (issue 17, section 3)',
  'Reset, snapshots and start-up of the sandbox (issue 16)',
  'Optimisations',
] as const

export function renderReport(report: Report, preserved: string | undefined): string {
  const { machine, settings } = report
  const header = [
    '# Plinth benchmarks',
    '',
    `- Date: ${report.date}`,
    `- Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB.toFixed(1)} GiB memory, ${machine.os}`,
    `- Node.js ${machine.node}, Fastify ${packageVersion(ROOT, 'fastify')}, PGlite ${packageVersion(ROOT, '@electric-sql/pglite')}, ` +
      `autocannon ${packageVersion(ROOT, 'autocannon')}, @stellar/stellar-base ${packageVersion(ROOT, '@stellar/stellar-base')}`,
    `- PostgreSQL server: ${report.postgres ?? 'not used'}`,
    `- Command: \`${settings.command}\``,
  ]
  const failed = report.loads.filter(invalid)
  if (failed.length > 0) {
    header.push(
      '',
      `> **Warning: ${failed.map((row) => `${row.scenario} on ${whereLabel(row)}`).join(', ')} had errors; those rows are not valid measurements.**`,
    )
  }
  const unbalanced = report.ledgerChecks.filter((row) => !row.check.ok)
  if (unbalanced.length > 0) {
    header.push('', `> **Warning: the ledger check failed on ${unbalanced.map((row) => row.backendLabel).join(', ')} after the flows.**`)
  }
  const pgbench =
    report.pgbench === undefined
      ? `No pgbench run: ${report.pgbenchMissing ?? 'not measured'}.`
      : `\`pgbench -b tpcb-like\` against the PostgreSQL server Plinth used, in a scratch database (see the notes).\n\n${pgbenchTable(report.pgbench, report.postgres)}`
  const flowSections =
    report.ledgerChecks.length === 0 && !report.loads.some((row) => row.detail.kind === 'flow')
      ? []
      : [
          `## Payment lifecycles\n\n${flowTable(report.loads)}\n\nThe step times are the mean milliseconds each step adds to a counted lifecycle, seen from the load generator ` +
            '(a request’s time includes waiting for a connection and the server’s queue; `sign` is building and signing the transaction in the load generator).',
          `### The ledger’s books after the flows (\`GET /sandbox/ledger/check\`)\n\n${ledgerTable(report.ledgerChecks)}`,
          `## pgbench\n\n${pgbench}`,
        ]
  const scaling = scalingTable(report.loads)
  const model = scalingModel(report)
  const sections = [
    header.join('\n'),
    `## Targets\n\n${targetsSection(report)}`,
    `## Throughput and latency\n\n${loadTable(report.loads, report.pgbench?.tps)}`,
    `## CPU during the measured runs\n\n${cpuTable(report.loads, report.machine.cores)}`,
    ...(scaling === undefined
      ? []
      : [`## Scaling: several Plinth processes on one PostgreSQL\n\n${scaling}\n\n${scalingNote(report.loads, report.machine.cores)}`]),
    ...(model === undefined ? [] : [`## Scaling model\n\n${model}`]),
    ...flowSections,
    `## Startup\n\n${startupTable(report.startups)}`,
    `## Seeding\n\n${seedTable(report.seeds, settings.seedConcurrency)}`,
    notes(report),
  ]
  if (preserved !== undefined) sections.push(preserved)
  return `${sections.join('\n\n')}\n`
}
