import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { chooseEncoding } from '../../src/web/docs-routes.js'
import { markdownToHtml } from '../../src/web/markdown.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'

/** /docs (Swagger UI, branded, compressed), /docs/errors (the error table) and the hub at `/`, in both modes. */
describe('API reference, error table and hub', () => {
  let platform: TestPlatform
  let production: TestPlatform
  before(async () => {
    platform = await startPlatform()
    production = await startPlatform({ mode: 'production', sharing: platform })
  })
  after(async () => {
    await production.close()
    await platform.close()
  })
  const get = (url: string, headers: Record<string, string> = {}, on = platform) => on.app.inject({ method: 'GET', url, headers })

  const decode = (body: Buffer, encoding: unknown): Buffer =>
    encoding === 'br' ? brotliDecompressSync(body) : encoding === 'gzip' ? gunzipSync(body) : body

  it('serves Swagger UI, its theme and the document compressed: br over gzip, identical bytes once decoded', async () => {
    for (const url of [
      '/docs/static/swagger-ui-bundle.js',
      '/docs/static/swagger-ui.css',
      '/docs/json',
      '/docs/static/theme/plinth-docs.js',
    ]) {
      const plain = await get(url, { 'accept-encoding': 'identity' })
      assert.equal(plain.statusCode, 200, url)
      assert.equal(plain.headers['content-encoding'], undefined, url)
      assert.match(String(plain.headers.vary), /accept-encoding/i, url)
      for (const [accept, encoding] of [
        ['gzip, deflate, br', 'br'],
        ['gzip', 'gzip'],
        ['br;q=0, gzip', 'gzip'],
      ] as const) {
        // Twice: the second answer comes from the cache and must be the same.
        for (const round of [1, 2]) {
          const response = await get(url, { 'accept-encoding': accept })
          assert.equal(response.statusCode, 200, `${url} ${accept} ${round}`)
          assert.equal(response.headers['content-encoding'], encoding, `${url} ${accept}`)
          assert.ok(response.rawPayload.length < plain.rawPayload.length / 2, `${url} ${accept}: ${response.rawPayload.length} bytes`)
          assert.ok(decode(response.rawPayload, encoding).equals(plain.rawPayload), `${url} ${accept} ${round}`)
        }
      }
    }
    const bundle = await get('/docs/static/swagger-ui-bundle.js', { 'accept-encoding': 'br' })
    // 1.7 MB as stored; about 390 KB on the wire (docs/api.md).
    assert.ok(bundle.rawPayload.length < 420_000, `${bundle.rawPayload.length}`)
  })

  it('chooses the encoding as the Accept-Encoding header says', () => {
    assert.equal(chooseEncoding(undefined), undefined)
    assert.equal(chooseEncoding('identity'), undefined)
    assert.equal(chooseEncoding('br'), 'br')
    assert.equal(chooseEncoding('gzip;q=0.5, br;q=0.1'), 'br')
    assert.equal(chooseEncoding('BR;q=0, GZIP'), 'gzip')
    assert.equal(chooseEncoding('*'), 'gzip')
    assert.equal(chooseEncoding('gzip;q=0, br;q=0'), undefined)
  })

  it('a HEAD first does not poison the cache: the GET after it is the whole file', async () => {
    const url = '/docs/static/swagger-ui-standalone-preset.js'
    const head = await platform.app.inject({ method: 'HEAD', url, headers: { 'accept-encoding': 'br' } })
    assert.equal(head.statusCode, 200)
    const plain = await get(url)
    const response = await get(url, { 'accept-encoding': 'br' })
    assert.equal(response.headers['content-encoding'], 'br')
    assert.ok(brotliDecompressSync(response.rawPayload).equals(plain.rawPayload))
  })

  it('404s under /docs stay uncompressed JSON errors, and the query string does not make a new cache entry', async () => {
    const missing = await get('/docs/static/nope.js', { 'accept-encoding': 'br' })
    assert.equal(missing.statusCode, 404)
    assert.equal(missing.headers['content-encoding'], undefined)
    assert.equal(missing.json().error, 'not_found')
    const withQuery = await get('/docs/json?x=1', { 'accept-encoding': 'gzip' })
    assert.equal(withQuery.headers['content-encoding'], 'gzip')
    assert.equal(JSON.parse(gunzipSync(withQuery.rawPayload).toString()).info.title, 'Plinth Platform API')
  })

  it("is branded: Plinth's title, logo and CSS; no Fastify logo; links back to the console (sandbox) or / (production)", async () => {
    const index = await get('/docs/')
    assert.equal(index.statusCode, 200)
    assert.match(index.body, /<title>Plinth API reference<\/title>/)
    assert.match(index.body, /theme\/plinth-docs\.css/)
    assert.match(index.body, /theme\/plinth-docs\.js/)
    assert.match(index.body, /theme\/plinth-try-it\.js/)
    const initializer = (await get('/docs/static/swagger-initializer.js')).body
    const logo = readFileSync(new URL('../../src/web/docs/logo.svg', import.meta.url))
    assert.ok(initializer.includes(logo.toString('base64')), 'the logo the initializer puts in is Plinth’s')
    const fastifyLogo = readFileSync(new URL('../../node_modules/@fastify/swagger-ui/static/logo.svg', import.meta.url))
    assert.ok(!initializer.includes(fastifyLogo.toString('base64')), 'no Fastify logo')
    const docsJs = (await get('/docs/static/theme/plinth-docs.js')).body
    assert.match(docsJs, /"home":"\/console\/"/)
    assert.match(docsJs, /\["Console","\/console\/"\]/)

    const prodIndex = await get('/docs/', {}, production)
    assert.equal(prodIndex.statusCode, 200)
    assert.doesNotMatch(prodIndex.body, /plinth-try-it/, 'no sandbox selector in production')
    assert.equal((await get('/docs/static/theme/plinth-try-it.js', {}, production)).statusCode, 404)
    const prodJs = (await get('/docs/static/theme/plinth-docs.js', {}, production)).body
    assert.match(prodJs, /"home":"\/"/)
    assert.doesNotMatch(prodJs, /\/console\//)
  })

  it('the document links the error table served here instead of naming docs/errors.md', async () => {
    const doc = (await get('/docs/json')).json() as { info: { description: string } }
    assert.doesNotMatch(doc.info.description, /see docs\/errors\.md/)
    assert.match(doc.info.description, /\[the error table\]\(http:\/\/[^)]+\/docs\/errors\)/)
  })

  it('/docs/errors renders docs/errors.md: every code in a table, escaped, no script, in both modes', async () => {
    for (const on of [platform, production]) {
      const page = await get('/docs/errors', { 'accept-encoding': 'gzip' }, on)
      assert.equal(page.statusCode, 200)
      assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'/)
      assert.doesNotMatch(String(page.headers['content-security-policy']), /script-src/)
      const html = gunzipSync(page.rawPayload).toString()
      const md = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
      const codes = [...md.matchAll(/^\| `([a-z_]+)` \| (\d{3})/gm)].map((m) => m[1])
      assert.ok(codes.length > 30)
      for (const code of codes) assert.ok(html.includes(`<td><code>${code}</code></td>`), code)
      assert.doesNotMatch(html, /<script/i)
    }
  })

  it('the Markdown renderer escapes everything and links only safe targets', () => {
    const html = markdownToHtml(
      [
        '# Title <b>',
        '',
        'Text <script>alert(1)</script> and `<i>code</i>` and [x](javascript:alert(1)) and [y](/docs) and [z](other.md) **b**',
        '',
        '| a | b |',
        '|---|---|',
        '| `x|y` | "q" & \' |',
        '',
        '```',
        '<img src=x onerror=alert(1)>',
        '```',
        '- one',
        '- [two](https://example.com/?a=1&b="2")',
      ].join('\n'),
    )
    assert.doesNotMatch(html, /<script|<b>|<i>|<img|javascript:/)
    assert.match(html, /<h1 id="title-b">Title &lt;b&gt;<\/h1>/)
    assert.match(html, /<code>&lt;i&gt;code&lt;\/i&gt;<\/code>/)
    assert.match(html, /<a href="\/docs">y<\/a>/)
    assert.match(html, / z /)
    assert.match(html, /<strong>b<\/strong>/)
    assert.match(html, /<td><code>x\|y<\/code><\/td><td>&quot;q&quot; &amp; &#39;<\/td>/)
    assert.match(html, /<pre><code>&lt;img src=x onerror=alert\(1\)&gt;<\/code><\/pre>/)
    assert.match(html, /<a href="https:\/\/example.com\/\?a=1&amp;b=&quot;2&quot;">two<\/a>/)
  })

  describe('GET /', () => {
    const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

    it('sandbox: a browser gets the hub, linking the console, sandbox, docs and ledger, naming the demo app', async () => {
      // The test platform starts with no demo app; the page says so, then names it after a demo reset.
      assert.match((await get('/', { accept: BROWSER })).body, /No demo app/)
      const reset = await platform.app.inject({ method: 'POST', url: '/sandbox/reset', payload: { seed: 'demo' } })
      assert.equal(reset.statusCode, 200, reset.body)
      const hub = await get('/', { accept: BROWSER })
      assert.equal(hub.statusCode, 200)
      assert.doesNotMatch(hub.body, /No demo app/)
      assert.equal(hub.headers['content-type'], 'text/html; charset=utf-8')
      assert.match(String(hub.headers['content-security-policy']), /default-src 'none'/)
      for (const href of ['/console/', '/sandbox/', '/docs', '/docs/errors', '/ledger'])
        assert.ok(hub.body.includes(`href="${href}"`), href)
      const row = await platform.db.selectFrom('platform_meta').select('value').where('key', '=', 'demo').executeTakeFirstOrThrow()
      const demo = JSON.parse(row.value) as { appId: string; appName: string; username: string }
      assert.equal(demo.appName, 'Plinth Demo')
      assert.ok(hub.body.includes(`<code>${demo.appId}</code>`))
      assert.ok(hub.body.includes(`>${demo.appName}</a>`))
      assert.ok(hub.body.includes(demo.username))
    })

    it('sandbox: JSON clients and curl get the JSON 404 they always got', async () => {
      for (const accept of ['application/json', '*/*', 'application/json, text/html;q=0.5', '']) {
        const response = await get('/', accept === '' ? {} : { accept })
        assert.equal(response.statusCode, 404, accept)
        assert.deepEqual(response.json(), { error: 'not_found', error_message: 'No route GET /' }, accept)
      }
    })

    it('production: `/` stays the platform page people sign in on; no hub, no sandbox links', async () => {
      const page = await get('/', { accept: BROWSER }, production)
      assert.equal(page.statusCode, 200)
      assert.doesNotMatch(page.body, /Plinth sandbox<\/h1>|href="\/console\/"/)
      assert.match(page.body, /<title>Plinth sandbox browser<\/title>|id="brand-mode"/)
    })
  })
})
