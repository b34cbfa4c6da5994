/**
 * The browser tests' harness (`test/e2e/*.e2e.ts`, run by `npm run test:e2e`).
 *
 * - `startPlinth()`: a whole platform (test/helpers/platform.ts, a fresh PGlite, or PostgreSQL
 *   with PLINTH_TEST_DB=postgres) listening on a random port of 127.0.0.1, with `api`, a
 *   real-HTTP client for the sandbox API and the server endpoints.
 * - `serve(routes)`: a small HTTP server on another random port, so pages it serves are
 *   another origin than Plinth (an app's frontend and backend, a foreign site).
 * - `launchBrowser()`: Debian's Chromium (`/usr/bin/chromium`, or PLINTH_CHROMIUM) through
 *   playwright-core, headless, on a fresh temporary profile; `newPage()` one isolated page.
 * - `openSandbox()`, `appFrame()`, `inFrame()`, `waitFor()` and `screenshot()` (into
 *   docs/screenshots/, unless PLINTH_E2E_SCREENSHOTS=0).
 *
 * Page code is passed to Playwright as strings: functions compiled by tsx carry helpers that
 * do not exist in the page.
 */
import { mkdirSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach } from 'node:test'
import { type Browser, chromium, type Frame, type Locator, type Page } from 'playwright-core'
import { type PlatformOptions, startPlatform, type TestPlatform, uniqueName } from '../helpers/platform.js'

export const CHROMIUM = process.env.PLINTH_CHROMIUM ?? '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
]
export const SCREENSHOT_DIR = new URL('../../docs/screenshots/', import.meta.url)

/** Headless Chromium; Playwright gives every launch a new temporary user-data-dir and removes it on close. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 })
}

/**
 * Closes the pages a test opened (each in a context of its own, newPage) when it ends, for suites
 * whose tests each open their own. An open sandbox page keeps polling the platform and its app frame
 * keeps running: left open, twenty of them slowed the later tests of one file threefold.
 */
export function closePagesAfterEach(browser: () => Browser | undefined): void {
  afterEach(async () => {
    await Promise.all((browser()?.contexts() ?? []).map((context) => context.close()))
  })
}

/** A page in a context of its own (no storage shared with other tests), with the page's errors collected. */
export async function newPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1180, height: 860 } })
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  return { page, errors }
}

export interface HttpAnswer<T = Record<string, unknown>> {
  status: number
  body: T
}

export interface ApiOptions {
  body?: unknown
  key?: string
  token?: string
}

/** A real-HTTP JSON client of one origin. */
export function httpClient(base: string, headers: Record<string, string> = {}) {
  return async function request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: ApiOptions = {},
  ): Promise<HttpAnswer<T>> {
    const sent: Record<string, string> = { 'x-plinth-client': 'test', ...headers }
    if (options.body !== undefined) sent['content-type'] = 'application/json'
    if (options.key !== undefined) sent.authorization = `Key ${options.key}`
    if (options.token !== undefined) sent.authorization = `Bearer ${options.token}`
    const response = await fetch(`${base}${path}`, {
      method,
      headers: sent,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    })
    const text = await response.text()
    return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as T }
  }
}

/** Fails with the answer when its status is not the expected one. */
export function expectStatus<T>(answer: HttpAnswer<T>, status: number, what: string): T {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status}: ${JSON.stringify(answer.body)}`)
  return answer.body
}

export interface CreatedApp {
  app_id: string
  name: string
  api_key: string
  wallet: { address: string; seed: string }
}

export interface CreatedUser {
  user_id: string
  username: string
  wallet: { address: string; seed: string }
}

export interface RunningPlinth {
  /** `http://127.0.0.1:<port>`: the sandbox page is `${url}/sandbox/`, the SDK `${url}/sdk/pi-sdk.js`. */
  url: string
  platform: TestPlatform
  api: ReturnType<typeof httpClient>
  /** `network`: Pi Testnet when left out, as the sandbox API's. */
  createApp(name: string, url?: string, network?: 'Pi Testnet' | 'Pi Network'): Promise<CreatedApp>
  createUser(username?: string): Promise<CreatedUser>
  advanceClock(seconds: number): Promise<void>
  close(): Promise<void>
}

export async function startPlinth(options: PlatformOptions = {}): Promise<RunningPlinth> {
  const platform = await startPlatform(options)
  await platform.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = platform.app.server.address() as AddressInfo
  const url = `http://127.0.0.1:${port}`
  const api = httpClient(url, options.adminToken === undefined ? {} : { 'x-admin-token': options.adminToken })
  return {
    url,
    platform,
    api,
    createApp: async (name, appUrl, network) =>
      expectStatus(
        await api<CreatedApp>('POST', '/sandbox/apps', {
          body: { name, ...(appUrl === undefined ? {} : { url: appUrl }), ...(network === undefined ? {} : { network }) },
        }),
        201,
        'create app',
      ),
    createUser: async (username = uniqueName('e2e').slice(0, 32)) =>
      expectStatus(await api<CreatedUser>('POST', '/sandbox/users', { body: { username } }), 201, 'create user'),
    advanceClock: async (seconds) => {
      expectStatus(await api('POST', '/sandbox/clock', { body: { advance_seconds: seconds } }), 200, 'advance clock')
    },
    close: () => platform.close(),
  }
}

export type Handler = (request: IncomingMessage, body: string) => Promise<{ status?: number; type?: string; body: string }>
export type Route = string | Handler

export interface Served {
  /** `http://127.0.0.1:<port>`, another origin than Plinth's. */
  url: string
  close(): Promise<void>
}

/** Serves HTML pages (string routes) and handlers on a random port of 127.0.0.1. */
export async function serve(routes: Record<string, Route>): Promise<Served> {
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    const route = routes[path]
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    try {
      if (route === undefined) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
      } else if (typeof route === 'string') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(route)
      } else {
        const answer = await route(request, Buffer.concat(chunks).toString('utf8'))
        response.writeHead(answer.status ?? 200, { 'content-type': answer.type ?? 'application/json' }).end(answer.body)
      }
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** Short intervals for tests: callbacks re-sent every 400 ms, payments polled every 150 ms, 1 s ads. */
export const FAST = { resend_ms: '400', poll_ms: '150', ad_ms: '1000', refresh_ms: '400' }

/** Opens the sandbox page; with `user` it is signed in, with `app` too the app is open. */
export async function openSandbox(page: Page, plinthUrl: string, query: Record<string, string> = {}): Promise<void> {
  const search = new URLSearchParams({ ...FAST, ...query })
  await page.goto(`${plinthUrl}/sandbox/?${search.toString()}`)
}

/** The app's iframe, once its document from `origin` has loaded. */
export async function appFrame(page: Page, origin: string): Promise<Frame> {
  const handle = await page.waitForSelector('#app-frame')
  await waitFor(async () => (await handle.contentFrame())?.url().startsWith(origin), `the app frame to load ${origin}`)
  const frame = await handle.contentFrame()
  if (frame === null) throw new Error('the app frame has no document')
  await frame.waitForLoadState('load')
  return frame
}

/** Evaluates an expression (or an async IIFE) in a page or frame. */
export function inFrame<T>(frame: Frame | Page, expression: string): Promise<T> {
  return frame.evaluate<T>(expression)
}

/** Polls `check` until it answers something truthy. */
export async function waitFor<T>(check: () => Promise<T | undefined | false | null>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false && value !== null) return value
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Saves a screenshot of the page as docs/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.PLINTH_E2E_SCREENSHOTS === '0') return
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: new URL(`${name}.png`, SCREENSHOT_DIR).pathname })
}

/**
 * Waits until the payment dialog's Pay is armed (docs/sandbox-browser.md, "The payment dialog's
 * safety rules"): enabled, and shown and still long enough that a press now counts, as a person
 * reading the dialog would wait before pressing it.
 */
export async function payArmed(pay: Locator, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    async () => ((await pay.getAttribute('data-armed')) === 'true' && (await pay.isEnabled())) || undefined,
    'Pay to be armed',
    timeoutMs,
  )
}
