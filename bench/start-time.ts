import { startPlinth } from '../src/index.js'

const opts = process.env.PG ? { databaseUrl: 'postgres://postgres@127.0.0.1:5432/test' } : {}
for (let i = 0; i < 4; i++) {
  const t = performance.now()
  const p = await startPlinth(opts)
  const a = performance.now() - t
  const r = performance.now()
  await p.sandbox.reset('empty')
  const rr = performance.now() - r
  await p.sandbox.snapshots.save('s')
  const s = performance.now()
  await p.sandbox.snapshots.restore('s')
  const sr = performance.now() - s
  await p.stop()
  console.log(
    `${process.env.PG ? 'postgres' : 'pglite'} start ${i === 0 ? 'cold' : 'warm'} ${a.toFixed(0)} ms, reset ${rr.toFixed(0)} ms, restore ${sr.toFixed(0)} ms`,
  )
}
process.exit(0)
