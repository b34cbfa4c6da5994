import type { PreparedFlow } from './flows.js'
import type { ScenarioTraits } from './load.js'
import type { FlowTeam } from './seed.js'

// ---------------------------------------------------------------------------------------------
// Ledger batches: how many transactions the server's ledger closer applies per closed ledger, read
// from its Prometheus histogram before and after a measured window.

/** The histogram the ledger closer observes once per closed ledger: the transactions it applied. */
export const BATCH_METRIC = 'plinth_ledger_batch_transactions'

/** Said wherever batch figures would be, while the server does not expose the histogram. */
export const NO_BATCH_METRIC = `no batch figures: the server has no ${BATCH_METRIC}`

/**
 * A flow looped by several counts of workers in turn (1, 4, 16, 64), each on its own short run,
 * with the batch sizes the server closed during each measured window. One Plinth process only.
 */
export interface BatchScenario extends ScenarioTraits {
  kind: 'batches'
  /** The flow over these teams, one worker per team (their apps and users seeded by the harness). */
  flow(teams: readonly FlowTeam[], baseUrl: string): PreparedFlow
}

/** The histogram as scraped: cumulative counts per upper bound (Infinity for +Inf), sum and count. */
export interface BatchHistogram {
  buckets: Array<{ le: number; count: number }>
  sum: number
  count: number
}

/** The batches closed between two scrapes. */
export interface BatchWindow {
  batches: number
  transactions: number
  /** Transactions per batch, on average; undefined when no batch closed. */
  meanPerBatch: number | undefined
  /** Batches by size, one entry per bucket of the histogram that saw any: sizes "1", "3–4", ">256". */
  sizes: Array<{ sizes: string; batches: number }>
}

/**
 * The histogram's samples in Prometheus' text format, summed over any labels besides `le`;
 * undefined when the text has none of them (a server without the ledger closer's histogram).
 */
export function parseBatchHistogram(text: string): BatchHistogram | undefined {
  const buckets = new Map<number, number>()
  let sum: number | undefined
  let count: number | undefined
  for (const line of text.split('\n')) {
    if (!line.startsWith(BATCH_METRIC)) continue
    const match = /^(\w+)(?:\{([^}]*)\})?\s+(\S+)/.exec(line)
    if (match === null) continue
    const [, name, labels = '', valueText = ''] = match
    const value = Number(valueText)
    if (name === `${BATCH_METRIC}_bucket`) {
      const le = /(?:^|,)le="([^"]+)"/.exec(labels)?.[1]
      if (le === undefined) continue
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le)
      buckets.set(bound, (buckets.get(bound) ?? 0) + value)
    } else if (name === `${BATCH_METRIC}_sum`) {
      sum = (sum ?? 0) + value
    } else if (name === `${BATCH_METRIC}_count`) {
      count = (count ?? 0) + value
    }
  }
  if (buckets.size === 0 || sum === undefined || count === undefined) return undefined
  return { buckets: [...buckets].map(([le, bucketCount]) => ({ le, count: bucketCount })).sort((a, b) => a.le - b.le), sum, count }
}

/** `GET /metrics` with the metrics token; undefined when the server has no batch histogram. Throws when /metrics does not answer 200. */
export async function readBatchHistogram(baseUrl: string, token: string): Promise<BatchHistogram | undefined> {
  const response = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET /metrics answered HTTP ${response.status}: ${text.slice(0, 200)}`)
  return parseBatchHistogram(text)
}

/** What closed between the two scrapes: the counts' differences, then each bucket less the one below it (buckets are cumulative). */
export function batchesBetween(before: BatchHistogram, after: BatchHistogram): BatchWindow {
  const batches = after.count - before.count
  const transactions = after.sum - before.sum
  const sizes: BatchWindow['sizes'] = []
  let below = 0
  let lowerBound = 0
  for (const { le, count } of after.buckets) {
    const cumulative = count - (before.buckets.find((bucket) => bucket.le === le)?.count ?? 0)
    const inBucket = cumulative - below
    below = cumulative
    // Sizes are whole transactions: the bucket (2, 4] holds 3 and 4.
    const from = Math.floor(lowerBound) + 1
    const label = le === Number.POSITIVE_INFINITY ? `>${lowerBound}` : from >= le ? String(le) : `${from}–${le}`
    lowerBound = le
    if (inBucket > 0) sizes.push({ sizes: label, batches: inBucket })
  }
  return { batches, transactions, meanPerBatch: batches > 0 ? transactions / batches : undefined, sizes }
}
