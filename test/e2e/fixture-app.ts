import { type CreatedApp, type RunningPlinth, type Served, serve } from './harness.js'

/**
 * A minimal app for the browser tests: a frontend page that loads the SDK from Plinth (the
 * classic script at `/`, the ES module at `/module.html`) and a backend on the same origin that
 * approves and completes payments with the app's server API key, as an app backend would.
 *
 * The page records what the SDK did in `window.events` (`{name, args}`); its payment callbacks
 * call the backend unless `window.autoApprove` / `window.autoComplete` is false. `window.addFrame(url)` embeds another
 * page (a foreign origin, for the postMessage tests).
 */
export interface FixtureApp extends Served {
  appId: string
  apiKey: string
  name: string
  /** What the backend was asked to do, in order. */
  backendCalls: Array<{ action: 'approve' | 'complete'; paymentId: string; status: number }>
}

const pageScript = `
  window.events = []
  window.autoApprove = true
  window.autoComplete = true
  const log = (name, ...args) => {
    window.events.push({ name, args })
    document.getElementById('last').textContent = name
  }
  window.log = log
  const backend = (path, body) =>
    fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json())
  window.paymentCallbacks = {
    onReadyForServerApproval: (id) => {
      log('approval', id)
      if (window.autoApprove) return backend('/backend/approve', { paymentId: id })
    },
    onReadyForServerCompletion: (id, txid) => {
      log('completion', id, txid)
      if (window.autoComplete) return backend('/backend/complete', { paymentId: id, txid })
    },
    onCancel: (id) => log('cancel', id),
    onError: (error, payment) => log('error', error.code, error.message, payment ? payment.identifier : null),
  }
  window.onIncomplete = (payment) => log('incomplete', payment.identifier)
  window.addFrame = (url) =>
    new Promise((resolve) => {
      const frame = document.createElement('iframe')
      frame.src = url
      frame.onload = () => resolve(true)
      document.body.append(frame)
    })
  window.settle = (promise) => promise.then((value) => ({ ok: true, value }), (error) => ({ ok: false, code: error.code, name: error.name, message: error.message }))
`

const page = (title: string, sdk: string) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${title}</title>${sdk}</head>
<body style="font-family: sans-serif; padding: 1rem">
  <h1>${title}</h1>
  <p>A fixture app of the browser tests. It loads the SDK from Plinth and asks its backend to approve and complete payments.</p>
  <p>Last SDK event: <strong id="last">none</strong></p>
  <script>${pageScript}</script>
</body>
</html>`

export async function startFixtureApp(
  plinth: RunningPlinth,
  name = 'Fixture Shop',
  network?: 'Pi Testnet' | 'Pi Network',
): Promise<FixtureApp> {
  const backendCalls: FixtureApp['backendCalls'] = []
  let apiKey = ''
  const backend = (action: 'approve' | 'complete') => async (_request: unknown, body: string) => {
    const { paymentId, txid } = JSON.parse(body) as { paymentId: string; txid?: string }
    const answer = await plinth.api('POST', `/v2/payments/${encodeURIComponent(paymentId)}/${action}`, {
      key: apiKey,
      body: action === 'complete' ? { txid } : undefined,
    })
    backendCalls.push({ action, paymentId, status: answer.status })
    return { status: answer.status, body: JSON.stringify(answer.body) }
  }
  const served = await serve({
    '/': page(name, `<script src="${plinth.url}/sdk/pi-sdk.js"></script>`),
    '/module.html': page(
      `${name} (module)`,
      `<script type="module">import { Pi, PiSdkError } from '${plinth.url}/sdk/pi-sdk.mjs'; window.PiModule = Pi; window.PiSdkErrorClass = PiSdkError; window.globalPi = 'Pi' in window</script>`,
    ),
    '/backend/approve': backend('approve'),
    '/backend/complete': backend('complete'),
  })
  const app = await plinth.createApp(name, `${served.url}/`, network)
  apiKey = app.api_key
  return { ...served, appId: app.app_id, apiKey: app.api_key, name, backendCalls }
}

/**
 * Serves an app's page (`html`, given the SDK's URL) with a backend that passes `/approve` and
 * `/complete` on to Plinth with the app's key, as a developer's server does; registers the app.
 */
export async function servePayingApp(
  plinth: RunningPlinth,
  name: string,
  html: (sdkUrl: string) => string,
): Promise<{ served: Served; app: CreatedApp }> {
  let key = ''
  const backend = (action: 'approve' | 'complete') => async (_request: unknown, body: string) => {
    const { paymentId, txid } = JSON.parse(body) as { paymentId: string; txid?: string }
    const answer = await plinth.api('POST', `/v2/payments/${paymentId}/${action}`, { key, body: txid ? { txid } : undefined })
    return { status: answer.status, body: JSON.stringify(answer.body) }
  }
  const served = await serve({ '/': html(`${plinth.url}/sdk/pi-sdk.js`), '/approve': backend('approve'), '/complete': backend('complete') })
  const app = await plinth.createApp(name, `${served.url}/`)
  key = app.api_key
  return { served, app }
}
