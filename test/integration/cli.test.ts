import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { type RunningPlinth, startPlinth } from '../../src/index.js'
import { plinthCliArgs, runCli } from '../helpers/cli-process.js'
import { TEST_DB } from '../helpers/platform.js'

/**
 * The `plinth` command (src/cli/plinth.ts, bundled: cli-process.ts), spawned as a user runs it,
 * against a running platform. It runs in the first pass only (scripts/test.mjs, CLI_SUITES).
 */
describe(`plinth CLI (${TEST_DB})`, () => {
  let plinth: RunningPlinth
  const adminToken = 'cli-admin-token-0123456789'
  before(async () => {
    plinth = await startPlinth({
      adminToken,
      ...(TEST_DB === 'postgres' ? { databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {}),
    })
  })
  after(() => plinth.stop())

  const cli = (...args: string[]) => runCli(['--url', plinth.url, '--admin-token', adminToken, ...args])

  it('creates an app, a user and an access token that /v2/me accepts; --json for scripts', async () => {
    const app = await cli('apps', 'create', 'CLI Shop', '--json')
    assert.equal(app.code, 0, app.stderr)
    const created = JSON.parse(app.stdout) as { app_id: string; api_key: string }
    const readable = await cli('users', 'create', 'cli_pioneer')
    assert.equal(readable.code, 0, readable.stderr)
    assert.match(readable.stdout, /^user usr_\w+ \(cli_pioneer\)/)

    const login = await cli('login', 'cli_pioneer', '--app', created.app_id, '--scopes', 'username')
    assert.equal(login.code, 0, login.stderr)
    const token = login.stdout.trim()
    const me = await fetch(`${plinth.url}/v2/me`, { headers: { authorization: `Bearer ${token}` } })
    assert.equal(me.status, 200)
    assert.equal(((await me.json()) as { username: string }).username, 'cli_pioneer')

    const key = await cli('keys', 'create', '--app', created.app_id, '--json')
    assert.equal(key.code, 0, key.stderr)
    const { key_id: keyId, api_key: apiKey } = JSON.parse(key.stdout) as { key_id: string; api_key: string }
    const revoked = await cli('keys', 'revoke', '--app', created.app_id, keyId)
    assert.equal(revoked.code, 0, revoked.stderr)
    const refused = await fetch(`${plinth.url}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${apiKey}` } })
    assert.equal(refused.status, 401, 'the revoked key is refused')
  })

  it('moves the clock, funds a wallet, saves and restores a snapshot, resets', async () => {
    const advanced = await cli('clock', 'advance', '2h', '--json')
    assert.equal(advanced.code, 0, advanced.stderr)
    assert.ok((JSON.parse(advanced.stdout) as { offset_seconds: number }).offset_seconds >= 7200)
    const back = await cli('clock', 'reset')
    assert.equal(back.code, 0, back.stderr)
    assert.match(back.stdout, /\(0 s ahead of real time\)/)

    const user = await plinth.sandbox.users.create('cli_funded')
    const funded = await cli('fund', user.wallet.address, '12.5')
    assert.equal(funded.code, 0, funded.stderr)
    assert.match(funded.stdout, /now holds 1012\.5000000 Pi|now holds \d+\.\d{7} Pi/)

    assert.equal((await cli('snapshot', 'save', 'cli-snap')).code, 0)
    await plinth.sandbox.users.create('cli_after_snapshot')
    const restored = await cli('snapshot', 'restore', 'cli-snap')
    assert.equal(restored.code, 0, restored.stderr)
    assert.deepEqual((await plinth.sandbox.users.find('cli_after_snapshot')).users, [])
    const listed = await cli('snapshot', 'list', '--json')
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { name: string }[]).map((s) => s.name),
      ['cli-snap'],
    )

    const reset = await cli('reset', '--empty')
    assert.equal(reset.code, 0, reset.stderr)
    assert.deepEqual((await plinth.sandbox.apps.list()).apps, [])
  })

  it('logs tail follows an app’s request log until Ctrl-C', async () => {
    const shop = await plinth.sandbox.apps.create('Tailed Shop')
    const tail = ['--url', plinth.url, '--admin-token', adminToken, 'logs', 'tail', '--app', shop.app_id]
    const child = spawn(process.execPath, [...(await plinthCliArgs()), ...tail])
    let stdout = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)))
    // Calls are made until the tail prints one (it starts from the newest entry, after it is up).
    for (let i = 0; i < 150 && !stdout.includes('/v2/payments/incomplete_server_payments'); i++) {
      await fetch(`${plinth.url}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${shop.api_key}` } })
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    child.kill('SIGINT')
    assert.equal(await exited, 0)
    assert.match(stdout, /200 {2}GET \/v2\/payments\/incomplete_server_payments {2}[\d.]+ ms/)
  })

  it('prints the secrets shown once: apps create and users create the wallet seed, reset the new demo key', async () => {
    const app = await cli('apps', 'create', 'Seeded Shop')
    assert.equal(app.code, 0, app.stderr)
    assert.match(app.stdout, /\n {2}server API key \S+ {3}\(shown once\)\n/)
    assert.match(app.stdout, /\n {2}wallet seed S[A-Z2-7]{55} {3}\(shown once\)/)
    const user = await cli('users', 'create', 'cli_seed_shown')
    assert.equal(user.code, 0, user.stderr)
    assert.match(user.stdout, /\n {2}wallet seed S[A-Z2-7]{55} {3}\(shown once\)/)
    const json = JSON.parse((await cli('users', 'create', 'cli_seed_json', '--json')).stdout) as { wallet: { seed: string } }
    assert.match(json.wallet.seed, /^S[A-Z2-7]{55}$/)

    const reset = await cli('reset')
    assert.equal(reset.code, 0, reset.stderr)
    const key = /\n {2}server API key (\S+) {3}\(shown once\)/.exec(reset.stdout)?.[1]
    assert.ok(key, reset.stdout)
    assert.match(reset.stdout, /demo app app_\w+ \(Plinth Demo\)/)
    const works = await fetch(`${plinth.url}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${key}` } })
    assert.equal(works.status, 200, 'the printed key is the new demo app’s')
    const resetJson = JSON.parse((await cli('reset', '--json')).stdout) as { demo: { api_key: string } }
    assert.ok(resetJson.demo.api_key.length > 20)
  })

  it('exits 1 with the platform’s message when refused, 2 on bad usage, 3 when no platform answers', async () => {
    const refused = await cli('snapshot', 'restore', 'never-saved')
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /snapshot_not_found/)
    const wrongToken = await runCli(['--url', plinth.url, '--admin-token', 'wrong-token-0123456789', 'apps', 'list'])
    assert.equal(wrongToken.code, 1)
    assert.match(wrongToken.stderr, /invalid_admin_token/)

    for (const args of [['frobnicate'], ['clock', 'advance', 'soon'], ['keys', 'create'], ['apps', 'create', '--nope']]) {
      const usage = await cli(...args)
      assert.equal(usage.code, 2, `${args.join(' ')}: ${usage.stderr}`)
    }
    // A port that was free a moment ago: nothing listens there (connection refused).
    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
    const unreachable = await runCli(['--url', `http://127.0.0.1:${closedPort}`, 'clock', 'show'])
    assert.equal(unreachable.code, 3, unreachable.stderr)
    assert.match(unreachable.stderr, /no platform answers/)
    const help = await runCli(['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /Exit codes: 0 done, 1 the platform refused, 2 usage, 3 no platform at --url/)
  })
})
