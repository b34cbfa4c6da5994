import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, Frame, Page } from 'playwright-core'
import { freePort, REPO_ROOT, runCommand } from '../helpers/server-process.js'
import { walkSteps } from '../helpers/walks.js'
import { appFrame, FAST, launchBrowser, payArmed, type Served, serve, waitFor } from './harness.js'
import { SIZES } from './walk-pages.js'

/**
 * The sandbox developer's walk (issue #41): README.md's quick start, then docs/sandbox-browser.md's
 * "Try an app" and docs/testing.md's fixtures, as written, in a fresh clone of this repository
 * (its node_modules linked in for `npm install`): `npm start` (which builds), the banner's curl
 * commands, `npm run demo` and the demo shop in the sandbox page, an app of one's own with the
 * doc's SDK snippet, and `plinth trigger a2u-submitted` for the demo app. The page steps run at
 * 1280×800 and at 390×844; the command steps once. The walk's platform listens on a free port, not
 * the docs' 8080 (which other suites on this machine may hold): the one change to what is written.
 */
const FILE = 'test/e2e/walk-sandbox-developer.e2e.ts'
const README = 'README.md'
const TRY = 'docs/sandbox-browser.md'
const TESTING = 'docs/testing.md'
const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8')

/** A process of the walk, in its own group so that it and its children end together. */
function started(command: string, args: string[], cwd: string, env: Record<string, string>) {
  const child = spawn(command, args, { cwd, env: { ...process.env, DATABASE_URL: '', PLINTH_DATA_DIR: '', ...env }, detached: true })
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  return { child, output: () => output }
}
const stop = (child: ChildProcess | undefined) => {
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGKILL')
}

describe('the sandbox developer’s walk: README’s quick start, sandbox-browser.md and testing.md, in Chromium at both sizes', () => {
  const { step, done } = walkSteps(FILE, it)
  const temp = mkdtempSync(join(tmpdir(), 'plinth-walk-sandbox-'))
  const clone = join(temp, 'clone')
  let port = 0
  let base = ''
  let platform: ReturnType<typeof started> | undefined
  let shop: ReturnType<typeof started> | undefined
  let browser: Browser
  let demoUser = ''
  let ownApp = ''
  let ownSite: Served | undefined

  before(async () => {
    const root = execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim()
    execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${root}`, clone])
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules')) // what `npm install` makes
    port = await freePort()
    base = `http://127.0.0.1:${port}`
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await ownSite?.close()
    stop(shop?.child)
    stop(platform?.child)
    rmSync(temp, { recursive: true, force: true })
  })

  const sized = async (size: (typeof SIZES)[number]): Promise<Page> => {
    const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
    // A machine shared with other suites can be slow: the walk waits on conditions, never sleeps.
    context.setDefaultTimeout(30_000)
    context.setDefaultNavigationTimeout(60_000)
    return context.newPage()
  }

  step(README, 'Quick start', 'npm start builds and starts the sandbox; the banner names the demo app and user', async () => {
    assert.match(read(README), /```sh\nnpm install\nnpm start\n```/)
    platform = started('npm', ['start'], clone, { PORT: String(port) })
    await waitFor(
      async () => {
        if (platform?.child.exitCode !== null) throw new Error(`npm start exited: ${platform?.output()}`)
        return /Demo user/.test(platform.output()) && /Sign the demo user in/.test(platform.output())
      },
      'the banner',
      240_000,
    )
    const banner = platform.output()
    assert.match(banner, new RegExp(`Sandbox\\s+${base}/sandbox/`))
    assert.match(banner, new RegExp(`Console\\s+${base}/console/`))
    assert.match(banner, /Demo app\s+Plinth Demo, app_id app_/)
    demoUser = /Demo user\s+(\S+), user_id/.exec(banner)?.[1] ?? ''
    assert.equal(demoUser, 'demo_pioneer')
  })

  step(README, 'Quick start', 'the banner’s curl commands: a key for the demo app, the demo user signed in, /v2/me', async () => {
    const banner = platform?.output() ?? ''
    const mint = /make one: (curl .*)$/m.exec(banner)?.[1]
    assert.ok(mint, 'piped output prints the command that mints a key, not the key')
    const key = JSON.parse(execFileSync('bash', ['-c', mint], { encoding: 'utf8' })) as { api_key: string }
    assert.match(key.api_key, /^[A-Za-z0-9_-]{43}$/)
    const signIn = /^\s+(curl -s -X POST .*\/authenticate .*)$/m.exec(banner)?.[1]
    assert.ok(signIn)
    const { accessToken } = JSON.parse(execFileSync('bash', ['-c', signIn], { encoding: 'utf8' })) as { accessToken: string }
    const me = /then: (curl .*)$/m.exec(banner)?.[1]?.replace('<accessToken>', accessToken)
    assert.ok(me)
    assert.equal((JSON.parse(execFileSync('bash', ['-c', me], { encoding: 'utf8' })) as { username: string }).username, demoUser)
  })

  step(README, 'Quick start', 'npm run demo in a second terminal: the shop registers itself with the sandbox', async () => {
    const shopPort = await freePort()
    shop = started('npm', ['run', 'demo'], clone, { PLINTH_URL: base, PORT: String(shopPort) })
    await waitFor(
      async () => {
        if (shop?.child.exitCode !== null) throw new Error(`npm run demo exited: ${shop?.output()}`)
        return fetch(`http://127.0.0.1:${shopPort}/`)
          .then((r) => r.ok)
          .catch(() => false)
      },
      'the demo shop',
      120_000,
    )
  })

  for (const size of SIZES) {
    step(
      README,
      'Quick start',
      `open /sandbox/, sign in as demo_pioneer, open Demo Shop: sign in, buy, an ad, a reward, a notification (${size.name})`,
      async () => {
        const page = await sized(size)
        await page.goto(`${base}/sandbox/?${new URLSearchParams(FAST)}`)
        await page.getByRole('button', { name: `Sign in as ${demoUser}` }).click()
        await page.getByRole('button', { name: 'Open Demo Shop' }).click()
        await appFrame(page, 'http://127.0.0.1:')
        const frame = page.frameLocator('#app-frame')
        const dialog = page.getByRole('dialog')
        const log = frame.getByTestId('log')
        await frame.getByTestId('signin').click()
        if (size.name === SIZES[0].name) await dialog.getByRole('button', { name: 'Allow' }).click()
        await frame.getByTestId('whoami').getByText(`@${demoUser}`).waitFor()
        await frame.getByTestId('buy-pi-mug').click()
        const pay = dialog.getByRole('button', { name: 'Pay' })
        await payArmed(pay)
        await pay.click()
        await log.getByText('Paid and completed: π mug is yours!').waitFor()
        await dialog.getByRole('button', { name: 'Close' }).click()
        await frame.getByTestId('watch-ad').click()
        await log.getByText('+10 coins for watching!').waitFor()
        await frame.getByTestId('claim-pi').click()
        await log.getByText(/0\.5 Pi sent to your wallet/).waitFor()
        await frame.getByTestId('notify').click()
        await log.getByText('Notification sent').waitFor()
        await page.locator('#bell').click()
        await page.locator('#drawer').getByText('Hello from Demo Shop').first().waitFor()
        await page.context().close()
      },
    )
  }

  step(TRY, 'Try an app › 1', 'the doc’s curl creates an app with a frontend URL', async () => {
    const snippet = /```html\n([\s\S]*?)```/.exec(read(TRY))?.[1] ?? ''
    // The app's page is the doc's snippet, with the SDK from this platform (the doc's is on 8080).
    ownSite = await serve({
      '/': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>My Shop</title></head><body>${snippet.replaceAll('http://127.0.0.1:8080', base)}</body></html>`,
    })
    const curl = /```sh\n\s*(curl -s -X POST localhost:8080\/sandbox\/apps[\s\S]*?)```/.exec(read(TRY))?.[1]
    assert.ok(curl, 'the doc’s curl')
    const line = curl
      .replace(/\\\n\s*/g, '')
      .replace('localhost:8080', base)
      .replace('http://localhost:3000/', `${ownSite.url}/`)
    const made = JSON.parse(execFileSync('bash', ['-c', line], { encoding: 'utf8' })) as { app_id: string; name: string }
    assert.equal(made.name, 'My Shop')
    ownApp = made.app_id
  })

  step(TRY, 'Try an app › 2', 'the page loads the SDK from Plinth and initialises it (the doc’s snippet)', async () => {
    const sdk = await fetch(`${base}/sdk/pi-sdk.js`)
    assert.equal(sdk.status, 200)
    assert.equal(sdk.headers.get('access-control-allow-origin'), '*')
    const page = await fetch(`${ownSite?.url}/`).then((r) => r.text())
    assert.match(page, new RegExp(`<script src="${base}/sdk/pi-sdk.js"></script>`))
  })

  for (const size of SIZES) {
    step(TRY, 'Try an app › 3', `open /sandbox/?user=&app=: consent, and the snippet signs in (${size.name})`, async () => {
      const page = await sized(size)
      const users = (await fetch(`${base}/sandbox/users`).then((r) => r.json())) as { users: { user_id: string; username: string }[] }
      const user = users.users.find((candidate) => candidate.username === demoUser)
      assert.ok(user)
      const said: string[] = []
      page.on('console', (message) => said.push(message.text()))
      await page.goto(`${base}/sandbox/?${new URLSearchParams({ ...FAST, user: user.user_id, app: ownApp })}`)
      const frame: Frame = await appFrame(page, ownSite?.url ?? '')
      assert.ok(frame)
      if (size.name === SIZES[0].name) await page.getByRole('dialog').getByRole('button', { name: 'Allow' }).click()
      await waitFor(async () => said.includes(`Signed in as ${demoUser}`), 'the snippet’s “Signed in as”')
      await page.context().close()
    })
  }

  step(
    TESTING,
    'Fixtures: trigger and seed',
    'trigger a2u-submitted for the demo app: the seed is the sandbox’s, read by the CLI',
    async () => {
      const demo = (await fetch(`${base}/sandbox/demo`).then((r) => r.json())) as { app_wallet_seed: string | null }
      assert.match(demo.app_wallet_seed ?? '', /^S[A-Z2-7]{55}$/, 'GET /sandbox/demo answers the demo app’s seed')
      const made = await runCommand('npx', ['plinth', 'trigger', 'a2u-submitted', '--json'], { cwd: clone, env: { PLINTH_URL: base } })
      assert.equal(made.code, 0, made.stderr)
      const [record] = (JSON.parse(made.stdout) as { made: { fixture: string; txid?: string }[] }).made
      assert.equal(record?.fixture, 'a2u-submitted')
      assert.match(record?.txid ?? '', /^[0-9a-f]{64}$/)
    },
  )

  done()
})
