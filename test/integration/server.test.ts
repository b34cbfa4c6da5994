import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import pg from 'pg'
import { TEST_DB } from '../helpers/platform.js'
import { freePort, PlinthProcess, sleep } from '../helpers/server-process.js'

async function waitForOutput(server: PlinthProcess, text: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!server.output().includes(text)) {
    if (server.hasExited() || Date.now() > deadline) {
      throw new Error(`no "${text}" from the server (${server.hasExited() ? 'it exited' : 'timed out'}); it printed:\n${server.output()}`)
    }
    await sleep(50)
  }
}

const startServer = (port: number, env: Record<string, string>) => PlinthProcess.spawn(port, { LOG_LEVEL: 'info', ...env })

describe('the server process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'plinth-test-'))
  const schema = `plinth_test_srv_${randomBytes(4).toString('hex')}`
  const backendEnv: Record<string, string> =
    TEST_DB === 'postgres'
      ? { DATABASE_URL: process.env.DATABASE_URL ?? '', PLINTH_DB_SCHEMA: schema, PLINTH_SECRET_KEY: randomBytes(32).toString('hex') }
      : { PLINTH_DATA_DIR: dataDir }

  after(async () => {
    rmSync(dataDir, { recursive: true, force: true })
    if (TEST_DB === 'postgres') {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL })
      await client.connect()
      await client.query(`drop schema if exists "${schema}" cascade`)
      await client.end()
    }
  })

  it('starts with a banner and a demo app, serves, and shuts down cleanly on SIGTERM; a second start creates nothing new', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const first = startServer(port, backendEnv)
    await waitForOutput(first, 'API base URL')
    const banner = first.output()
    assert.match(banner, new RegExp(`API base URL\\s+${base}/v2`))
    assert.match(banner, new RegExp(`Docs\\s+${base}/docs`))
    const key = /server API key (\S+)\s+\(shown once/.exec(banner)?.[1]
    const appId = /Demo app\s+Plinth Demo, app_id (\S+)/.exec(banner)?.[1]
    assert.ok(key && appId, 'the first start shows the demo app and its key')
    if (TEST_DB === 'pglite') {
      assert.ok(existsSync(join(dataDir, 'pgdata')))
      assert.equal(statSync(join(dataDir, 'secret.key')).mode & 0o777, 0o600)
    }

    const health = await fetch(`${base}/healthz`)
    assert.equal(health.status, 200)
    assert.ok(health.headers.get('x-request-id'))
    assert.equal((await fetch(`${base}/readyz`)).status, 200)
    const me = await fetch(`${base}/v2/me`, { headers: { authorization: 'Bearer nope' } })
    assert.equal(me.status, 401)

    first.child.kill('SIGTERM')
    assert.equal((await first.exited).code, 0)
    assert.match(first.output(), /shutting down/)
    assert.equal(first.output().includes(key), true, 'the key is printed in the banner')
    assert.equal(first.output().split(key).length - 1, 1, 'and nowhere else')

    const second = startServer(port, backendEnv)
    await waitForOutput(second, 'API base URL')
    assert.match(second.output(), new RegExp(`Demo app\\s+Plinth Demo, app_id ${appId}`))
    assert.match(second.output(), /shown at first start/)
    second.child.kill('SIGINT')
    assert.equal((await second.exited).code, 0)
  })

  it('refuses to start on a bad setting, naming it', async () => {
    const bad = startServer(0, { PORT: 'eighty', PLINTH_DATA_DIR: 'memory' })
    assert.equal((await bad.exited).code, 78)
    assert.match(bad.output(), /configuration error: PORT must be a whole number/)
  })

  it('refuses to start on PostgreSQL without PLINTH_SECRET_KEY (processes sharing a database never generate their own keys)', async () => {
    // Nothing listens on port 1: the refusal comes before any connection.
    const keyless = startServer(0, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/plinth' })
    assert.equal((await keyless.exited).code, 78)
    assert.match(keyless.output(), /configuration error: PLINTH_SECRET_KEY is required with DATABASE_URL/)
  })
})
