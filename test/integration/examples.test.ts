import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'

/**
 * examples/testing/: an app backend's suites on node:test and on vitest, each starting Plinth with
 * startPlinth() imported as the package ('plinth', the built dist/), run as their README says.
 */
const root = new URL('../../', import.meta.url).pathname
// Without NODE_TEST_CONTEXT: a node:test child of a test would report to this runner, not to its stdout.
const { NODE_TEST_CONTEXT: _parent, ...env } = process.env
// No bound on the wall clock: on a loaded machine the build takes minutes and a start of the
// embedded database over a minute, and each child ends by itself (the suites with their answer).
const run = (command: string, args: string[]) =>
  spawnSync(command, args, { cwd: root, encoding: 'utf8', env: { ...env, NO_COLOR: '1', FORCE_COLOR: '0' } })

describe('examples/testing', () => {
  if (!existsSync(`${root}dist/index.js`)) {
    const built = run('npm', ['run', 'build'])
    assert.equal(built.status, 0, built.stderr)
  }

  it('the node:test suite passes', () => {
    const result = run(process.execPath, ['--test', 'examples/testing/backend.node.test.mjs'])
    assert.equal(result.status, 0, result.stdout + result.stderr)
    assert.match(result.stdout, /# pass 2\n# fail 0/)
  })

  it('the vitest suite passes', () => {
    // Its config gives hooks a minute (what the README shows); here the start waits as long as it takes.
    const result = run(process.execPath, [
      `${root}node_modules/vitest/vitest.mjs`,
      'run',
      '--root',
      'examples/testing',
      '--hookTimeout=0',
      '--testTimeout=0',
    ])
    assert.equal(result.status, 0, result.stdout + result.stderr)
    assert.match(result.stdout, /Tests\s+2 passed \(2\)/)
  })
})
