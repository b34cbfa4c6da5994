/**
 * `npm run bench -- --stages`: the CPU per request of each part of Plinth's pipeline that can be
 * switched from outside, on head, for GET /v2/me over many tokens on PostgreSQL. A base server
 * (sandbox mode, request log off, LOG_LEVEL=warn, rate limits on but far above the load) seeds a
 * fresh schema; other processes on the same schema each differ from it by one setting: the
 * request log on, LOG_LEVEL=info (the request logger writes a line per request), both rate limits
 * 0 (the stage is not registered), and, since sandbox mode always serves /metrics, a pair of
 * production-mode processes without and with PLINTH_METRICS_TOKEN. They are measured in turn, pair
 * after pair, each run reading Plinth's CPU and its own PostgreSQL backends' from /proc.
 */
import { PIPELINE } from '../src/app/pipeline.js'
import { type RunFigures, type StageFigures, stageTable } from './compare-report.js'
import { elapsedSeconds, ensureBuilt, log } from './lib.js'
import type { Serving } from './measure-common.js'
import { loadLine, measureRequestRun, runSettings, startPairServer } from './pairs.js'
import { me } from './scenarios/requests.js'
import { ROOT, type Settings } from './settings.js'

interface Variant {
  name: string
  switch: string
  env: Record<string, string>
}

/** Each differs from the base server by what `env` adds. */
const VARIANTS: readonly Variant[] = [
  { name: 'request log', switch: 'PLINTH_REQUEST_LOG=on', env: { PLINTH_REQUEST_LOG: 'on' } },
  { name: 'request logger (pino) at info', switch: 'LOG_LEVEL=info', env: { LOG_LEVEL: 'info' } },
  {
    name: 'rate-limit stage removed',
    switch: 'PLINTH_RATE_LIMIT_{KEY,TOKEN}_PER_MINUTE=0',
    env: { PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '0', PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '0' },
  },
]
const PRODUCTION_WITHOUT_METRICS: Variant = {
  name: 'production, /metrics off',
  switch: 'PLINTH_MODE=production, no PLINTH_METRICS_TOKEN',
  env: { PLINTH_MODE: 'production', PLINTH_METRICS_TOKEN: '' },
}
const PRODUCTION_WITH_METRICS: Variant = {
  name: 'metrics stage (/metrics collection)',
  switch: 'PLINTH_METRICS_TOKEN set (production)',
  env: { PLINTH_MODE: 'production' },
}
/** The stages a setting switches (the others are always registered, or only with the whole of sandbox mode). */
const SWITCHED = new Map([
  ['metrics', 'PLINTH_METRICS_TOKEN in production (sandbox mode always serves /metrics)'],
  ['rate-limit', 'both rate limits 0'],
  ['request-log', 'PLINTH_REQUEST_LOG'],
])

export async function runStages(settings: Settings, databaseUrl: string | undefined): Promise<boolean> {
  if (databaseUrl === undefined) throw new Error('--stages runs on PostgreSQL: set DATABASE_URL (or start one on 127.0.0.1:5432)')
  const startedAt = performance.now()
  const options = settings.pairs
  await ensureBuilt(ROOT)
  const base = await startPairServer(databaseUrl, options, { root: ROOT, label: 'base', env: { PLINTH_REQUEST_LOG: 'off' } })
  try {
    const servings = new Map<Variant, Serving>()
    for (const variant of [...VARIANTS, PRODUCTION_WITHOUT_METRICS, PRODUCTION_WITH_METRICS]) {
      servings.set(variant, await base.replicate(variant.name, variant.env))
    }
    const prepared = await me.prepare(base.context)
    const requests = runSettings(settings, options, 'request')
    const baseRuns: RunFigures[] = []
    const runs = new Map<Variant, RunFigures[]>([...servings.keys()].map((variant) => [variant, []]))
    for (let pair = 0; pair < options.pairs; pair++) {
      log(`pair ${pair + 1} of ${options.pairs}: load average ${loadLine()}`)
      baseRuns.push(await measureRequestRun(requests, me, prepared, base.serving, undefined))
      for (const [variant, serving] of servings)
        runs.get(variant)?.push(await measureRequestRun(requests, me, prepared, serving, undefined))
    }
    const figures = (variant: Variant): StageFigures => ({ name: variant.name, switch: variant.switch, runs: runs.get(variant) ?? [] })
    const fixed = PIPELINE.filter((stage) => !SWITCHED.has(stage.name)).map((stage) => stage.name)
    process.stdout.write(
      `\n## CPU per request of the switchable stages: GET /v2/me, ${options.tokens} tokens, PostgreSQL, medians of ${options.pairs} pairs\n\n` +
        `${options.connections} connections, ${options.seconds} s after ${options.warmupSeconds} s warm-up per run. ` +
        `The base: sandbox mode, request log off, LOG_LEVEL=warn, rate limits on. Δ: what the setting adds to the base ` +
        `(a negative Δ for a removed stage is its cost). Load average now ${loadLine()}.\n\n` +
        `${stageTable(baseRuns, VARIANTS.map(figures))}\n\n` +
        `/metrics: production mode, without and with PLINTH_METRICS_TOKEN (sandbox mode always serves it):\n\n` +
        `${stageTable(runs.get(PRODUCTION_WITHOUT_METRICS) ?? [], [figures(PRODUCTION_WITH_METRICS)])}\n\n` +
        `Switched from outside: ${[...SWITCHED].map(([stage, how]) => `${stage} (${how})`).join('; ')}. ` +
        `Not switchable without changing the code: ${fixed.join(', ')} (sandbox-epoch and fault-injection only with the whole of ` +
        'sandbox mode), and drain.\n',
    )
    log(`--stages done in ${elapsedSeconds(startedAt)}`)
    return [...baseRuns, ...[...runs.values()].flat()].every((run) => run.errors === 0)
  } finally {
    await base.release()
  }
}
