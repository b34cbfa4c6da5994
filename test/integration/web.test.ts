import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { Script } from 'node:vm'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'

/** The client SDK and the sandbox page as HTTP resources; test/e2e drives them in Chromium. */
describe('client SDK and sandbox page routes', () => {
  let platform: TestPlatform
  let production: TestPlatform
  before(async () => {
    platform = await startPlatform()
    production = await startPlatform({ mode: 'production' })
  })
  after(async () => {
    await platform.close()
    await production.close()
  })
  const get = (url: string, on = platform, headers: Record<string, string> = {}) => on.app.inject({ method: 'GET', url, headers })

  it('serves the SDK as a classic script, as an ES module and its types, in both modes, to any origin', async () => {
    for (const on of [platform, production]) {
      const script = await get('/sdk/pi-sdk.js', on)
      assert.equal(script.statusCode, 200)
      assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8')
      assert.equal(script.headers['access-control-allow-origin'], '*')
      assert.equal(script.headers['cross-origin-resource-policy'], 'cross-origin')
      assert.equal(script.headers['x-content-type-options'], 'nosniff')
      assert.doesNotThrow(() => new Script(script.body, { filename: 'pi-sdk.js' }), 'a valid classic script')
      assert.match(script.body, /window\.Pi = createPi\(\{ scriptUrl: document\.currentScript\?\.src \}\)\.Pi/)

      const module = await get('/sdk/pi-sdk.mjs', on)
      assert.equal(module.statusCode, 200)
      assert.equal(module.headers['content-type'], 'text/javascript; charset=utf-8')
      assert.equal(module.headers['access-control-allow-origin'], '*')
      const checked = spawnSync(process.execPath, ['--input-type=module', '--check'], { input: module.body })
      assert.equal(checked.status, 0, `a valid ES module: ${checked.stderr}`)
      assert.match(module.body, /export const Pi = /)
      assert.match(module.body, /export default Pi/)

      const types = await get('/sdk/pi-sdk.d.ts', on)
      assert.equal(types.statusCode, 200)
      assert.equal(types.body, readFileSync(new URL('../../src/web/sdk/pi-sdk.d.ts', import.meta.url), 'utf8'))
    }
  })

  it('answers 304 to a matching ETag', async () => {
    const first = await get('/sdk/pi-sdk.js')
    const etag = String(first.headers.etag)
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/)
    const again = await get('/sdk/pi-sdk.js', platform, { 'if-none-match': etag })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
  })

  it('serves the sandbox page at /sandbox/ with its security headers, and its files under /sandbox/ui/', async () => {
    const page = await get('/sandbox/')
    assert.equal(page.statusCode, 200)
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
    const csp = String(page.headers['content-security-policy'])
    assert.match(csp, /default-src 'none'/)
    assert.match(csp, /script-src 'self'/)
    assert.match(csp, /connect-src 'self'/)
    assert.match(csp, /frame-src http: https:/)
    assert.match(csp, /frame-ancestors 'none'/)
    assert.equal(page.headers['x-frame-options'], 'DENY')
    assert.equal(page.headers['x-content-type-options'], 'nosniff')
    assert.equal(page.headers['referrer-policy'], 'no-referrer')
    // Relative to the page: the same file serves /sandbox/ and production's / (their files under ui/).
    assert.match(page.body, /<script type="module" src="ui\/main\.js"><\/script>/)
    assert.doesNotMatch(page.body, /<script>|\son[a-z]+="/, 'no inline script or handler: the CSP forbids them')

    const redirect = await get('/sandbox')
    assert.equal(redirect.statusCode, 308)
    assert.equal(redirect.headers.location, '/sandbox/')

    for (const file of ['main.js', 'api.js', 'bridge.js', 'sign-in.js', 'flows.js', 'portal/portal-panel.js', 'platform.css']) {
      const response = await get(`/sandbox/ui/${file}`)
      assert.equal(response.statusCode, 200, file)
      assert.equal(response.headers['x-content-type-options'], 'nosniff')
      assert.ok(response.headers['content-security-policy'])
    }
    assert.deepEqual((await get('/sandbox/ui/platform.json')).json(), {
      mode: 'sandbox',
      approval_window_seconds: 60,
      admin_token_required: false,
    })
  })

  it('serves nothing else from the web directory', async () => {
    for (const url of [
      '/sandbox/ui/index.html',
      '/sandbox/ui/../sdk/pi-sdk-core.js',
      '/sandbox/ui/%2e%2e/sdk/pi-sdk-core.js',
      '/sandbox/ui/..%2fweb-dir.ts',
      '/sandbox/ui/nope.js',
      '/sandbox/ui/',
      '/sdk/pi-sdk-core.js',
      '/sdk/',
    ]) {
      const response = await get(url)
      assert.equal(response.statusCode, 404, url)
      assert.equal(response.json().error, 'not_found', url)
    }
  })

  it('serves the UI layer and the API client both pages import under /web/, in both modes, and nothing else there', async () => {
    for (const on of [platform, production]) {
      for (const url of ['/web/ui/dom.js', '/web/ui/dialogs.js', '/web/api/client.js']) {
        const response = await get(url, on)
        assert.equal(response.statusCode, 200, url)
        assert.match(String(response.headers['content-type']), /javascript/, url)
        assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
        assert.match(String(response.headers['content-security-policy']), /default-src 'none'/, url)
      }
    }
    for (const url of [
      '/web/ui/',
      '/web/web-dir.ts',
      '/web/sdk/pi-sdk-core.js',
      '/web/platform/main.js',
      '/web/api/openapi.d.ts',
      '/web/ui/../platform/main.js',
      '/web/ui/%2e%2e/platform/main.js',
    ]) {
      assert.equal((await get(url)).statusCode, 404, url)
    }
  })

  it('leaves every sandbox API route to the API', async () => {
    const users = await get('/sandbox/users')
    assert.equal(users.statusCode, 200)
    assert.deepEqual(Object.keys(users.json()), ['users', 'next_cursor', 'total'])
    assert.equal(users.headers['content-security-policy'], undefined, 'API answers keep their own headers')
    assert.equal((await get('/sandbox/clock')).statusCode, 200)
    assert.equal((await get('/sandbox/apps/app_nope')).json().error, 'app_not_found')
  })

  it('asks for the admin token when the platform has one, and the page itself needs none', async () => {
    const guarded = await startPlatform({ adminToken: 'a-very-long-admin-token' })
    try {
      assert.equal((await get('/sandbox/', guarded)).statusCode, 200)
      assert.equal((await get('/sandbox/ui/main.js', guarded)).statusCode, 200)
      assert.deepEqual((await get('/sandbox/ui/platform.json', guarded)).json(), {
        mode: 'sandbox',
        approval_window_seconds: 60,
        admin_token_required: true,
      })
      assert.equal((await get('/sandbox/users', guarded)).statusCode, 401)
    } finally {
      await guarded.close()
    }
  })

  it('has no sandbox page in production mode', async () => {
    for (const url of ['/sandbox/', '/sandbox', '/sandbox/ui/main.js', '/sandbox/ui/platform.json']) {
      assert.equal((await get(url, production)).statusCode, 404, url)
    }
  })

  it('keeps the page and the SDK out of the OpenAPI document', async () => {
    const paths = Object.keys((await get('/v2/openapi.json')).json().paths as Record<string, unknown>)
    assert.equal(
      paths.some((p) => p.startsWith('/sdk') || p === '/sandbox/' || p === '/sandbox' || p.startsWith('/sandbox/ui')),
      false,
    )
  })
})
