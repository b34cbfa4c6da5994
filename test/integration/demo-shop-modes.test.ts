import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { bannerLines, type PlinthMode, plinthMode } from '../../examples/shop/banner.js'
import { createShop } from '../../examples/shop/shop.js'
import { adminOf, signedUp } from '../helpers/accounts.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'
import { freePort, scriptArgs } from '../helpers/server-process.js'

/**
 * The demo shop (examples/shop) run against either mode (docs/production.md §11): `npm run demo`'s
 * banner points only at pages that Plinth in that mode serves, and in production the shop serves
 * the app's validation key, so the portal's **Verify the domain** can prove it.
 */

/** What a test started, closed when the file's suite ends (in its describe: files share a process). */
const running: Array<{ close(): Promise<void> }> = []

async function listening(mode: PlinthMode): Promise<{ platform: TestPlatform; url: string }> {
  const platform = await startPlatform({ mode, portal: { allowPrivateAppUrls: true } })
  running.push(platform)
  await platform.app.listen({ port: 0, host: '127.0.0.1' })
  return { platform, url: `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}` }
}

async function shopOn(port: number, options: { plinthUrl: string; validationKey?: string }): Promise<Server> {
  const { server } = createShop({ apiKey: 'unused', walletSeed: 'unused', ...options })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  running.push({
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  })
  return server
}

/** `npm run demo` (examples/shop/server.ts) with `env`, until its banner's line starting `last`; the banner. */
async function demo(env: NodeJS.ProcessEnv, last: string): Promise<string> {
  const child = spawn(process.execPath, scriptArgs('examples/shop/server.ts'), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  running.push({
    close: async () => {
      child.kill('SIGTERM')
      await exited
    },
  })
  let printed = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    printed += chunk
  })
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      printed += chunk
      if (printed.includes(`\n  ${last}`)) resolve(printed)
    })
    child.once('exit', (code) => reject(new Error(`the shop exited (${code}) before its banner:\n${printed}`)))
  })
}

/** Every Plinth page the banner tells the reader to open, without its fragment (the browser keeps that). */
const plinthUrls = (lines: string[], plinthUrl: string) =>
  lines
    .filter((line) => /^ {2}(Try it|Console|Portal) /.test(line))
    .flatMap((line) => [...line.matchAll(/https?:\/\/[^\s,]+/g)].map((match) => match[0]))
    .filter((url) => url.startsWith(plinthUrl))
    .map((url) => url.split('#')[0] ?? url)

describe('the demo shop in each mode', () => {
  after(async () => {
    for (const thing of running.splice(0).reverse()) await thing.close()
  })

  for (const mode of ['sandbox', 'production'] as const) {
    it(`${mode}: the shop tells the mode, and every Plinth page its banner names answers 200`, async () => {
      const { url } = await listening(mode)
      assert.equal(await plinthMode(url), mode)
      const lines = bannerLines({
        mode,
        plinthUrl: url,
        shopUrl: 'http://127.0.0.1:3000/',
        appId: 'app_x',
        credentials: 'from the environment',
        validationKey: false,
      })
      const urls = plinthUrls(lines, url)
      assert.ok(urls.length >= 2, lines.join('\n'))
      for (const page of urls) assert.equal((await fetch(page)).status, 200, `${page} (banner:\n${lines.join('\n')})`)
      if (mode === 'production') {
        assert.deepEqual(
          urls.filter((page) => /\/(sandbox|console)\b/.test(page)),
          [],
        )
        assert.match(lines.join('\n'), /SHOP_VALIDATION_KEY/)
      }
    })
  }

  it('production: the shop serves SHOP_VALIDATION_KEY at /validation-key.txt, and the portal verifies the app with it', async () => {
    const { platform, url } = await listening('production')
    const dev = await signedUp(() => platform.app)
    await adminOf(platform).grant(dev.username, 'developer')
    // Without a key the shop has no such file.
    const bare = await shopOn(0, { plinthUrl: url })
    assert.equal((await fetch(`http://127.0.0.1:${(bare.address() as AddressInfo).port}/validation-key.txt`)).status, 404)

    // As `SHOP_VALIDATION_KEY=… npm run demo` starts it, on the URL the developer registered.
    const shopUrl = `http://127.0.0.1:${await freePort()}/`
    const created = await dev.call('POST', '/portal/apps', { name: 'Demo Shop', url: shopUrl, network: 'Pi Testnet' })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const app = created.body.app as { app_id: string; validation_key: string }
    const env = {
      ...process.env,
      PLINTH_URL: url,
      PORT: new URL(shopUrl).port,
      SHOP_APP_ID: app.app_id,
      SHOP_API_KEY: String(created.body.api_key),
      SHOP_WALLET_SEED: String(created.body.wallet_seed),
      SHOP_VALIDATION_KEY: app.validation_key,
    }
    const banner = await demo(env, 'Portal ')
    assert.match(banner, /\(production mode\)/)
    assert.doesNotMatch(banner, /\/sandbox\/|\/console\//)
    assert.match(banner, new RegExp(`${shopUrl}validation-key.txt serves SHOP_VALIDATION_KEY`))
    const served = await fetch(`${shopUrl}validation-key.txt`)
    assert.equal(served.headers.get('content-type'), 'text/plain; charset=utf-8')
    assert.equal((await served.text()).trim(), app.validation_key)
    const verified = await dev.call('POST', `/portal/apps/${app.app_id}/verify`)
    assert.equal(verified.status, 200, JSON.stringify(verified.body))
    assert.equal(verified.body.verified, true)

    // Without the app's credentials, production has no app for the shop to make: it says what to do.
    const { SHOP_API_KEY: _k, ...keyless } = env
    // (Not spawnSync: Plinth runs in this process.)
    const child = spawn(process.execPath, scriptArgs('examples/shop/server.ts'), {
      env: { ...keyless, PORT: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    assert.equal(await new Promise((resolve) => child.once('close', resolve)), 1)
    assert.match(stderr, /production mode, where the shop cannot create its own app: register it in the portal/)
  })
})
