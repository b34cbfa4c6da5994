// A platform's start, reset and snapshot restore, timed as a test suite sees them (docs/testing.md,
// "Starting Plinth in a test suite"). `node --import tsx bench/start-time.ts` (PGlite, in memory);
// `PG=1 …` on the PostgreSQL server. Prints each round and the machine's load average before and
// after, since these figures move with the load: quote them with it.
import { availableParallelism, loadavg } from 'node:os'
import { startPlinth } from '../src/index.js'

const ROUNDS = Number(process.env.ROUNDS ?? 6)
const opts = process.env.PG ? { databaseUrl: 'postgres://postgres@127.0.0.1:5432/test' } : {}
const load = () => loadavg()[0]?.toFixed(2)
console.log(`${availableParallelism()} cores, load average (1 min) ${load()} before`)
const resets: number[] = []
const restores: number[] = []
for (let i = 0; i < ROUNDS; i++) {
  const t = performance.now()
  const p = await startPlinth(opts)
  const a = performance.now() - t
  const r = performance.now()
  await p.sandbox.reset('empty')
  resets.push(performance.now() - r)
  await p.sandbox.snapshots.save('s')
  const s = performance.now()
  await p.sandbox.snapshots.restore('s')
  restores.push(performance.now() - s)
  await p.stop()
  console.log(
    `${process.env.PG ? 'postgres' : 'pglite'} start ${i === 0 ? 'cold' : 'warm'} ${a.toFixed(0)} ms, reset ${resets.at(-1)?.toFixed(0)} ms, restore ${restores.at(-1)?.toFixed(0)} ms`,
  )
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]?.toFixed(0)
console.log(`median reset ${median(resets)} ms, median restore ${median(restores)} ms; load average ${load()} after`)
process.exit(0)
