/**
 * The client SDK's own scope checks, without a browser: src/web/sdk/pi-sdk-core.js run against a
 * fake parent window that answers as the sandbox page would. Ads need the payments scope of the
 * token (ADS_SCOPE in src/ads/ad-rules.ts); after an authenticate without it the Pi.Ads methods
 * reject with missing_scope and send the page nothing. (test/e2e/sandbox.e2e.ts drives the real page.)
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { ADS_SCOPE } from '../../src/ads/ad-rules.js'

const HOST = 'http://127.0.0.1:8080'
type Listener = (event: { source: unknown; origin: string; data: unknown }) => void
interface Message {
  type: string
  id?: number
  method?: string
  session?: string
  protocol?: string
}
interface PiLike {
  init(config: Record<string, unknown>): void
  authenticate(scopes: string[]): Promise<unknown>
  Ads: Record<'showAd' | 'isAdReady' | 'requestAd', (type: string) => Promise<unknown>>
}

/** A fresh SDK in a fake iframe whose parent answers every request; `asked` lists the methods the page received. */
function sdk(): { Pi: PiLike; asked: string[] } {
  const listeners: Listener[] = []
  const asked: string[] = []
  const answers: Record<string, unknown> = {
    authenticate: { accessToken: 'token', user: { uid: 'uid' } },
    showAd: { type: 'rewarded', result: 'AD_REWARDED', adId: 'ad' },
    isAdReady: { type: 'rewarded', ready: true },
  }
  const parent = {
    postMessage(message: Message) {
      const reply = (data: Record<string, unknown>) =>
        setImmediate(() => {
          for (const listener of listeners)
            listener({ source: parent, origin: HOST, data: { protocol: message.protocol, session: message.session, ...data } })
        })
      if (message.type === 'hello') return reply({ type: 'welcome', features: [] })
      // The origin probe (sent to any origin, naming only the SDK's host) asks the page nothing.
      if (message.type !== 'request') return
      asked.push(message.method ?? '')
      reply({ type: 'result', id: message.id, result: answers[message.method ?? ''] ?? {} })
    },
  }
  const window = {
    parent,
    addEventListener: (type: string, listener: Listener) => {
      if (type === 'message') listeners.push(listener)
    },
  }
  // As src/web/sdk-routes.ts serves it: the SDK's checks, then the SDK.
  const core = ['pi-sdk-checks.js', 'pi-sdk-core.js']
    .map((name) => readFileSync(new URL(`../../src/web/sdk/${name}`, import.meta.url), 'utf8'))
    .join('\n')
  const createPi = new Function('window', `${core}\nreturn createPi`)(window) as (env: { scriptUrl: string }) => { Pi: PiLike }
  const { Pi } = createPi({ scriptUrl: `${HOST}/sdk/pi-sdk.js` })
  Pi.init({ version: '2.0', sandbox: true })
  return { Pi, asked }
}

describe('client SDK scopes', () => {
  it(`Pi.Ads rejects with missing_scope after an authenticate without ${ADS_SCOPE}, asking the page nothing`, async () => {
    const { Pi, asked } = sdk()
    await Pi.authenticate(['username'])
    for (const method of ['showAd', 'isAdReady', 'requestAd'] as const) {
      await assert.rejects(Pi.Ads[method]('rewarded'), (error: { code: string; message: string }) => {
        assert.equal(error.code, 'missing_scope', method)
        assert.match(error.message, new RegExp(`"${ADS_SCOPE}" scope`))
        return true
      })
    }
    assert.deepEqual(asked, ['authenticate'])
  })

  it('two authenticate calls in the same tick (React StrictMode) send one request and both resolve with its answer', async () => {
    const { Pi, asked } = sdk()
    const [first, second] = await Promise.all([Pi.authenticate(['username', ADS_SCOPE]), Pi.authenticate([ADS_SCOPE, 'username'])])
    assert.deepEqual(first, second)
    assert.deepEqual(asked, ['authenticate'])
    // Other scopes wait their turn and get a request of their own.
    await Promise.all([Pi.authenticate(['username']), Pi.authenticate(['username', 'wallet_address'])])
    assert.deepEqual(asked, ['authenticate', 'authenticate', 'authenticate'])
  })

  it(`Pi.Ads reaches the page once ${ADS_SCOPE} was asked for`, async () => {
    const { Pi, asked } = sdk()
    await Pi.authenticate(['username', ADS_SCOPE])
    assert.deepEqual(await Pi.Ads.showAd('rewarded'), { type: 'rewarded', result: 'AD_REWARDED', adId: 'ad' })
    assert.deepEqual(await Pi.Ads.isAdReady('rewarded'), { type: 'rewarded', ready: true })
    assert.deepEqual(await Pi.Ads.requestAd('rewarded'), { type: 'rewarded', result: 'AD_LOADED' })
    assert.deepEqual(asked, ['authenticate', 'showAd', 'isAdReady', 'isAdReady'])
  })
})
