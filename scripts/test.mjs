#!/usr/bin/env node
// Runs the whole suite on the embedded database, then again on the PostgreSQL server in
// DATABASE_URL when it is set. Each test platform makes its own database (PGlite in memory)
// or schema (PostgreSQL), so runs never share state. Extra arguments are test files or folders
// (a folder: every *.test.ts under it); `--backend=pglite` or `--backend=postgres` runs on that
// one backend only (postgres needs DATABASE_URL).
import { spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const BACKENDS = ['pglite', 'postgres']
const args = process.argv.slice(2)
const chosen = args.filter((arg) => arg.startsWith('--backend=')).map((arg) => arg.slice('--backend='.length))
const given = args.filter((arg) => !arg.startsWith('--backend='))
for (const backend of chosen) {
  if (!BACKENDS.includes(backend)) {
    console.error(`--backend=${backend}: expected one of ${BACKENDS.join(', ')}`)
    process.exit(2)
  }
}

const testsUnder = (dir) =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(dir, f))
    .sort()
const files = (given.length > 0 ? given : ['test']).flatMap((path) => (statSync(path).isDirectory() ? testsUnder(path) : [path]))

let backends
if (chosen.length > 0) {
  backends = BACKENDS.filter((backend) => chosen.includes(backend))
  if (backends.includes('postgres') && !process.env.DATABASE_URL) {
    console.error('--backend=postgres needs DATABASE_URL')
    process.exit(2)
  }
} else {
  backends = ['pglite']
  if (process.env.DATABASE_URL) backends.push('postgres')
  else console.log('DATABASE_URL is not set: running on PGlite only')
}

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
