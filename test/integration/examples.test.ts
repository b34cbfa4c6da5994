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
const run = (command: string, args: string[], timeout: number | undefined = 180_000) =>
  spawnSync(command, args, { cwd: root, encoding: 'utf8', env: { ...env, NO_COLOR: '1', FORCE_COLOR: '0' }, timeout })

describe('examples/testing', () => {
  if (!existsSync(`${root}dist/index.js`)) {
    // No bound on the build: the compiler always finishes, and on a loaded machine it takes minutes.
    const built = run('npm', ['run', 'build'], undefined)
    assert.equal(built.status, 0, built.stderr)
  }

  it('the node:test suite passes', () => {
    const result = run(process.execPath, ['--test', 'examples/testing/backend.node.test.mjs'])
    assert.equal(result.status, 0, result.stdout + result.stderr)
    assert.match(result.stdout, /# pass 2\n# fail 0/)
  })

  it('the vitest suite passes', () => {
    const result = run(process.execPath, [`${root}node_modules/vitest/vitest.mjs`, 'run', '--root', 'examples/testing'])
    assert.equal(result.status, 0, result.stdout + result.stderr)
    assert.match(result.stdout, /Tests\s+2 passed \(2\)/)
  })
})
