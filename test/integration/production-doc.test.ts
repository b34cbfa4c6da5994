/**
 * docs/production.md as written (issue #41, D1 and D6): `npx plinth admin create-operator` works in
 * a fresh clone before any build, and from the installed package; the local trial's settings
 * serve `localhost` and let Verify reach an app on this machine.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { servedHostNames } from '../../src/http/site-guard.js'
import { checkDomain } from '../../src/portal/domain-check.js'
import { GOOD_PASSWORD } from '../helpers/accounts.js'
import { plinthCliArgs } from '../helpers/cli-process.js'
import { REPO_ROOT, runCommand } from '../helpers/server-process.js'

const doc = readFileSync(join(REPO_ROOT, 'docs', 'production.md'), 'utf8')
const blocks = [...doc.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '')

describe('docs/production.md, run as written', () => {
  const temp = mkdtempSync(join(tmpdir(), 'plinth-production-doc-'))
  after(() => rmSync(temp, { recursive: true, force: true }))

  it('D1: the walk prepares with npm ci before its first npx plinth, and needs no build before it', () => {
    const first = doc.indexOf('npx plinth')
    assert.ok(doc.indexOf('npm ci') >= 0 && doc.indexOf('npm ci') < first, 'npm ci comes first')
    assert.ok(!doc.slice(0, first).includes('npm run build'), 'no build is asked for before')
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: { plinth: string }; files: string[] }
    assert.equal(manifest.bin.plinth, 'bin/plinth.mjs')
    assert.ok(manifest.files.includes('bin/plinth.mjs'), 'the launcher ships with the package')
  })

  it('D1: in a fresh clone, npx plinth admin create-operator runs before any build', async () => {
    const clone = join(temp, 'clone')
    // The committed tree (the tests may run from a compiled mirror inside the repository).
    const root = execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim()
    execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${root}`, clone])
    symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'))
    const made = await runCommand('npx', ['--offline', 'plinth', 'admin', 'create-operator', 'olga'], {
      cwd: clone,
      env: { PLINTH_DATA_DIR: join(temp, 'clone-data'), PLINTH_MODE: 'production' },
      input: `${GOOD_PASSWORD}\n`,
    })
    assert.equal(made.code, 0, made.stderr)
    assert.match(made.stdout, /olga/)
  })

  it('D1: in the installed package (no sources), the launcher runs the built command', async () => {
    const installed = join(temp, 'node_modules', 'plinth')
    mkdirSync(join(installed, 'bin'), { recursive: true })
    cpSync(join(REPO_ROOT, 'bin', 'plinth.mjs'), join(installed, 'bin', 'plinth.mjs'))
    const [bundle = ''] = await plinthCliArgs()
    cpSync(dirname(bundle), join(installed, 'dist', 'cli'), { recursive: true })
    writeFileSync(join(installed, 'package.json'), '{"name":"plinth","type":"module"}')
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(installed, 'node_modules'))
    const help = await runCommand(process.execPath, [join(installed, 'bin', 'plinth.mjs'), '--help'], { cwd: temp, env: {}, input: '' })
    assert.equal(help.code, 0, help.stderr)
    assert.match(help.stdout, /^plinth <command> \[options\]/)
  })

  it('D1: in a clone before npm ci, and in a package without its build, the launcher says what to run (exit 2)', async () => {
    const bare = join(temp, 'bare')
    mkdirSync(join(bare, 'bin'), { recursive: true })
    mkdirSync(join(bare, 'src', 'cli'), { recursive: true })
    cpSync(join(REPO_ROOT, 'bin', 'plinth.mjs'), join(bare, 'bin', 'plinth.mjs'))
    writeFileSync(join(bare, 'src', 'cli', 'plinth.ts'), '')
    writeFileSync(join(bare, 'package.json'), '{"name":"plinth","type":"module"}')
    const noModules = await runCommand(process.execPath, [join(bare, 'bin', 'plinth.mjs'), '--help'], { cwd: temp, env: {}, input: '' })
    assert.equal(noModules.code, 2)
    assert.match(noModules.stderr, /^plinth: this clone has no node_modules yet: run "npm ci" first/)
    rmSync(join(bare, 'src'), { recursive: true })
    const noBuild = await runCommand(process.execPath, [join(bare, 'bin', 'plinth.mjs'), '--help'], { cwd: temp, env: {}, input: '' })
    assert.equal(noBuild.code, 2)
    assert.match(noBuild.stderr, /^plinth: dist\/cli\/plinth.js is missing from this package/)
  })

  it('D6: the local trial serves localhost and lets Verify reach an app on this machine', async () => {
    const trial = blocks.find((block) => block.startsWith('export PLINTH_PUBLIC_URL=http://localhost:8080'))
    assert.ok(trial, 'production.md has the local trial block')
    const env: Record<string, string> = { PLINTH_MODE: 'production', PLINTH_DATA_DIR: 'memory' }
    for (const line of trial.split('\n')) {
      const match = /^export (\w+)=(\S+)/.exec(line)
      if (match?.[1] !== undefined && match[2] !== undefined) env[match[1]] = match[2]
    }
    const config = loadConfig(env)
    assert.equal(config.publicUrl, 'http://localhost:8080')
    assert.ok(servedHostNames(config.publicUrl, config.allowedHosts ?? []).has('localhost'))

    const app = createServer((_request, response) => response.end('trial-key'))
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(app.address() as AddressInfo).port}/`
      const refused = await checkDomain(url, 'trial-key', { allowPrivate: false })
      assert.equal(refused.ok ? 'ok' : refused.reason, 'private_address', 'without the setting, Verify refuses this machine')
      const verified = await checkDomain(url, 'trial-key', { allowPrivate: config.portal?.allowPrivateAppUrls ?? false })
      assert.equal(verified.ok, true, JSON.stringify(verified))
    } finally {
      app.close()
    }
  })
})
