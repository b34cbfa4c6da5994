import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import { type RunningPlinth, SandboxError, startPlinth } from '../../src/index.js'
import { TEST_DB } from '../helpers/platform.js'

/** startPlinth() (src/index.ts) as an app's test suite uses it: docs/testing.md. */
const backend = () => (TEST_DB === 'postgres' ? { databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {})

async function paidPayment(plinth: RunningPlinth, apiKey: string, accessToken: string) {
  const v2 = async (method: string, path: string, auth: string, body?: unknown) => {
    const response = await fetch(`${plinth.url}/v2${path}`, {
      method,
      headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
  const created = await v2('POST', '/client/payments', `Bearer ${accessToken}`, { amount: 2, memo: 'start', metadata: {} })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const id = String(created.body.identifier)
  assert.equal((await v2('POST', `/payments/${id}/approve`, `Key ${apiKey}`)).status, 200)
  const submitted = await v2('POST', `/client/payments/${id}/submit`, `Bearer ${accessToken}`)
  assert.equal(submitted.status, 200, JSON.stringify(submitted.body))
  const txid = (submitted.body.transaction as { txid: string }).txid
  const completed = await v2('POST', `/payments/${id}/complete`, `Key ${apiKey}`, { txid })
  assert.equal(completed.status, 200)
  return id
}

describe(`startPlinth() (${TEST_DB})`, () => {
  it('starts a platform on a free port, drives a payment through its sandbox client, snapshots and restores, and stops', async () => {
    const plinth = await startPlinth(backend())
    try {
      assert.match(plinth.url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.equal((await fetch(`${plinth.url}/healthz`)).status, 200)
      assert.equal((await fetch(`${plinth.ledgerUrl}/`)).status, 200)
      assert.deepEqual((await plinth.sandbox.apps.list()).apps, [], 'empty unless seed: demo')

      const shop = await plinth.sandbox.apps.create('Start Shop')
      const user = await plinth.sandbox.users.create(`start_${Date.now() % 1e9}`)
      const { accessToken } = await plinth.sandbox.authenticate(shop.app_id, user.user_id)
      await plinth.sandbox.snapshots.save('before-payment')
      const paymentId = await paidPayment(plinth, shop.api_key, accessToken)
      const read = await fetch(`${plinth.url}/v2/payments/${paymentId}`, { headers: { authorization: `Key ${shop.api_key}` } })
      assert.equal(read.status, 200)

      await plinth.sandbox.snapshots.restore('before-payment')
      const gone = await fetch(`${plinth.url}/v2/payments/${paymentId}`, { headers: { authorization: `Key ${shop.api_key}` } })
      assert.equal(gone.status, 404, 'the payment made after the snapshot is gone')
      await paidPayment(plinth, shop.api_key, accessToken)

      const advanced = await plinth.sandbox.clock.advance(3600)
      assert.equal(advanced.offset_seconds >= 3600, true)
      await assert.rejects(plinth.sandbox.snapshots.restore('no-such-snapshot'), (error: unknown) => {
        assert.ok(error instanceof SandboxError)
        assert.equal(error.status, 404)
        assert.equal(error.code, 'snapshot_not_found')
        return true
      })
    } finally {
      await plinth.stop()
    }
    await assert.rejects(fetch(`${plinth.url}/healthz`), 'the port is closed after stop()')
  })

  it('runs two platforms side by side, each with its own data; seed: demo creates the demo app', async () => {
    const [a, b] = await Promise.all([startPlinth({ ...backend(), seed: 'demo' }), startPlinth(backend())])
    try {
      assert.notEqual(a.url, b.url)
      assert.equal((await a.sandbox.apps.list()).apps.length, 1)
      assert.equal((await b.sandbox.apps.list()).apps.length, 0)
      if (TEST_DB === 'postgres') assert.notEqual(a.schema, b.schema)
    } finally {
      await Promise.all([a.stop(), b.stop()])
    }
  })
})

describe(`startPlinth() under load (${TEST_DB})`, () => {
  // Five platforms starting at once in one process, beside two processes that burn a core each:
  // start-up may be slow, it must not fail (no start-up step is bounded by a timer).
  it('starts five platforms at once in one process with two CPU hogs running, and each serves /docs', { timeout: 300_000 }, async () => {
    const hogs = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
    const killHogs = () => {
      for (const hog of hogs) if (hog.exitCode === null && hog.signalCode === null) hog.kill('SIGKILL')
    }
    // Killed even if this process ends without reaching `finally` (an uncaught error, the runner's timeout).
    process.once('exit', killHogs)
    const started: RunningPlinth[] = []
    try {
      await Promise.all(hogs.map((hog) => once(hog, 'spawn')))
      const results = await Promise.allSettled(Array.from({ length: 5 }, () => startPlinth(backend())))
      for (const result of results) if (result.status === 'fulfilled') started.push(result.value)
      const failures = results.flatMap((result) =>
        result.status === 'rejected' ? [String((result.reason as Error)?.stack ?? result.reason)] : [],
      )
      assert.deepEqual(failures, [], 'every platform started')
      killHogs()
      for (const plinth of started) {
        const page = await fetch(`${plinth.url}/docs/`)
        assert.equal(page.status, 200)
        assert.match(await page.text(), /swagger-ui/i)
        const bundle = await fetch(`${plinth.url}/docs/static/swagger-ui-bundle.js`)
        assert.equal(bundle.status, 200)
        assert.ok((await bundle.arrayBuffer()).byteLength > 100_000, 'the Swagger UI bundle is served')
      }
    } finally {
      killHogs()
      process.removeListener('exit', killHogs)
      await Promise.all(started.map((plinth) => plinth.stop()))
    }
  })
})
