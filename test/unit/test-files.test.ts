import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
// @ts-expect-error: a plain .mjs script without typings
import { writeShards } from '../../scripts/test-build.mjs'

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url))
const writeShardsTyped = writeShards as (dir: string, files: string[], perShard: number, backend: string) => string[]

/**
 * scripts/test.mjs runs several test files in one process (shards). These are the rules that
 * makes safe, and the shard entry's own behaviour.
 */
describe('test files run several to a process', () => {
  it('no test file has a hook, or usePlatform(), at its top level (it would belong to its whole shard)', () => {
    const files = readdirSync(TEST_DIR, { recursive: true })
      .map(String)
      .filter((file) => /\.(test|e2e)\.ts$/.test(file))
    assert.ok(files.length > 50, `found ${files.length} test files`)
    const offenders = files.filter((file) =>
      /^(const \w+ = )?(before|after|beforeEach|afterEach|usePlatform)\(/m.test(readFileSync(join(TEST_DIR, file), 'utf8')),
    )
    assert.deepEqual(offenders, [])
  })

  it('deals files round-robin into shards of about the size asked, each file once, each shard a suite on its backend', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plinth-shards-'))
    try {
      const files = Array.from({ length: 17 }, (_, i) => `test/f${i}.test.ts`)
      const entries = writeShardsTyped(dir, files, 8, 'postgres')
      assert.deepEqual(entries, ['shards/postgres-01.test.js', 'shards/postgres-02.test.js', 'shards/postgres-03.test.js'])
      const imported = entries.flatMap((entry) =>
        [...readFileSync(join(dir, entry), 'utf8').matchAll(/import\("\.\.\/(.*)"\)/g)].map((m) => m[1]),
      )
      assert.deepEqual(imported.sort(), files.map((file) => file.replace(/\.ts$/, '.js')).sort())
      const first = readFileSync(join(dir, entries[0] as string), 'utf8')
      assert.match(first, /f0\.test\.js[\s\S]*f3\.test\.js/)
      assert.match(first, /process\.env\.PLINTH_TEST_DB = "postgres"\ndescribe\("postgres: shard 1 of 3"/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a file that cannot be loaded fails as a test of its name; the rest of its shard still runs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plinth-shards-'))
    try {
      mkdirSync(join(dir, 'test'))
      writeFileSync(join(dir, 'test/broken.test.js'), "throw new Error('cannot load')\n")
      writeFileSync(
        join(dir, 'test/fine.test.js'),
        "import { it } from 'node:test'\nit('the fine file ran on ' + process.env.PLINTH_TEST_DB, () => {})\n",
      )
      const [entry] = writeShardsTyped(dir, ['test/broken.test.ts', 'test/fine.test.ts'], 8, 'pglite')
      const { NODE_TEST_CONTEXT: _parent, ...env } = process.env
      const run = spawnSync(process.execPath, ['--test', '--test-reporter=spec', entry as string], { cwd: dir, encoding: 'utf8', env })
      assert.equal(run.status, 1, run.stdout + run.stderr)
      assert.match(run.stdout, /✖ test\/broken\.test\.ts/)
      assert.match(run.stdout, /cannot load/)
      assert.match(run.stdout, /✔ the fine file ran on pglite/)
      assert.match(run.stdout, /✖ pglite: shard 1 of 1/)
      assert.match(run.stdout, /ℹ pass 1\n/)
      assert.match(run.stdout, /ℹ fail 1\n/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
