#!/usr/bin/env node
// Runs the whole suite on the embedded database, then again on the PostgreSQL server in
// DATABASE_URL when it is set. Each test platform makes its own database (PGlite in memory)
// or schema (PostgreSQL), so runs never share state. Extra arguments are test files.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'

const given = process.argv.slice(2)
const files =
  given.length > 0
    ? given
    : readdirSync('test', { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `test/${f}`)
        .sort()

const backends = ['pglite']
if (process.env.DATABASE_URL) backends.push('postgres')
else console.log('DATABASE_URL is not set: running on PGlite only')

let failed = false
for (const backend of backends) {
  console.log(`\n=== tests on ${backend} ===`)
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
    stdio: 'inherit',
    env: { ...process.env, PLINTH_TEST_DB: backend },
  })
  if (result.status !== 0) {
    failed = true
    console.log(`=== tests on ${backend} FAILED ===`)
  }
}
process.exit(failed ? 1 : 0)
