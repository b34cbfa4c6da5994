import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { CONSOLE_ROOT } from '../../src/console/console-routes.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'

/** The console's ES modules (js/ and js/pages/), as URLs. */
const MODULES = (readdirSync(`${CONSOLE_ROOT}js`, { recursive: true }) as string[])
  .filter((file) => file.endsWith('.js'))
  .map((file) => `/console/js/${file.replaceAll('\\', '/')}`)

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

describe('developer console', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform({ adminToken: 'console-admin-token-0123456789' })
  })
  after(() => platform.close())

  it('serves its page and scripts at /console/ with a strict content security policy', async () => {
    for (const [url, type] of [
      ['/console/', 'text/html'],
      ['/console/console.css', 'text/css'],
      ...MODULES.map((url) => [url, 'javascript'] as const),
    ]) {
      const response = await platform.app.inject({ method: 'GET', url })
      assert.equal(response.statusCode, 200, url)
      assert.match(String(response.headers['content-type']), new RegExp(type), url)
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(response.headers[name], value, `${url} ${name}`)
      const csp = String(response.headers['content-security-policy'])
      assert.match(csp, /default-src 'none'/)
      assert.match(csp, /script-src 'self'(;|$)/, 'no inline or foreign scripts')
      assert.match(csp, /frame-ancestors 'none'/)
    }
    const page = await platform.app.inject({ method: 'GET', url: '/console/' })
    assert.match(page.body, /<script type="module" src="js\/main.js"><\/script>/)
    assert.doesNotMatch(page.body, /<script>/, 'no inline script')
  })

  it('redirects /console to /console/ and keeps the headers on the redirect', async () => {
    const response = await platform.app.inject({ method: 'GET', url: '/console' })
    assert.equal(response.statusCode, 301)
    assert.equal(response.headers.location, '/console/')
    assert.equal(response.headers['x-frame-options'], 'DENY')
  })

  it('needs no admin token for its files (the sandbox API behind it does)', async () => {
    assert.equal((await platform.app.inject({ method: 'GET', url: '/console/' })).statusCode, 200)
    assert.equal((await platform.app.inject({ method: 'GET', url: '/sandbox/apps' })).statusCode, 401)
  })

  it('serves nothing outside its folder', async () => {
    for (const url of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2fpackage.json', '/console/nope.js']) {
      const response = await platform.app.inject({ method: 'GET', url })
      assert.notEqual(response.statusCode, 200, url)
      assert.doesNotMatch(response.body, /"name": "plinth"/, url)
    }
  })

  it('builds the page without parsing data as HTML', async () => {
    assert.ok(MODULES.length > 5, 'the console is split into modules')
    for (const url of MODULES) {
      const script = (await platform.app.inject({ method: 'GET', url })).body
      assert.doesNotMatch(script, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, url)
    }
  })

  it('does not exist in production mode', async () => {
    const production = await startPlatform({ mode: 'production' })
    try {
      assert.equal((await production.app.inject({ method: 'GET', url: '/console/' })).statusCode, 404)
      assert.equal((await production.app.inject({ method: 'GET', url: '/console/js/main.js' })).statusCode, 404)
    } finally {
      await production.close()
    }
  })
})
