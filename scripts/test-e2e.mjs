#!/usr/bin/env node
// The browser suites (test/e2e/*.e2e.ts, Chromium through playwright-core), one file at a time,
// compiled into the mirror scripts/test-build.mjs makes (no loader hook in any process).
// Extra arguments are e2e files to run instead of all of them.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { buildTests } from './test-build.mjs'

const given = process.argv.slice(2)
const files =
  given.length > 0
    ? given
    : readdirSync('test/e2e')
        .filter((name) => name.endsWith('.e2e.ts'))
        .sort()
        .map((name) => `test/e2e/${name}`)
const build = await buildTests()
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files.map((file) => file.replace(/\.ts$/, '.js'))],
  { cwd: build, stdio: 'inherit' },
)
process.exit(result.status ?? 1)
