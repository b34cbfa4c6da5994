import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import type { Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, FrameLocator, Page } from 'playwright-core'
import { createShop } from '../../examples/shop/shop.js'
import { freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { freePort, REPO_ROOT, runCommand } from '../helpers/server-process.js'
import { walkSteps } from '../helpers/walks.js'
import { appFrame, launchBrowser, payArmed, waitFor } from './harness.js'
import { SIZES, type Size, signIn, signUp } from './walk-pages.js'

/**
 * The production operator's walk (issue #41): docs/production.md from §1 to its commands, then
 * docs/operators.md, as written, from a fresh clone of this repository (its node_modules linked in
 * for `npm ci`), with `npx plinth` in that clone and the local trial's settings
 * (PLINTH_PUBLIC_URL at `localhost`, PLINTH_ALLOW_PRIVATE_APP_URLS=1), on the embedded database
 * the doc's steps use without DATABASE_URL. Every page step runs at 1280×800 and at 390×844 (a
 * developer, an app with its demo shop, and a user for each size; one operator); command steps once.
 */
const FILE = 'test/e2e/walk-production-operator.e2e.ts'
const PROD = 'docs/production.md'
const OPS = 'docs/operators.md'
const doc = readFileSync(join(REPO_ROOT, PROD), 'utf8')
/** The doc's `sh` blocks, in order. */
const blocks = [...doc.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '')
const blockWith = (text: string) => {
  const found = blocks.find((block) => block.includes(text))
  if (found === undefined) throw new Error(`${PROD} has no sh block with ${text}`)
  return found
}

interface Walker {
  size: Size
  operator: Page
  developer: Page
  user: Page
  developerName: string
  userName: string
  appName: string
  appId: string
  apiKey: string
  shop?: Server
  shopUrl: string
  frame?: FrameLocator
}

describe('the production operator’s walk: docs/production.md and docs/operators.md, in Chromium at both sizes', () => {
  const { step, done } = walkSteps(FILE, it)
  const temp = mkdtempSync(join(tmpdir(), 'plinth-walk-operator-'))
  const clone = join(temp, 'clone')
  const operatorName = freshName('olga').slice(0, 32)
  let env: Record<string, string> = {}
  let publicUrl = ''
  let server: ChildProcess | undefined
  let browser: Browser
  const walkers = new Map<string, Walker>()

  /** `npx plinth …` in the clone, as the doc writes it. */
  const npxPlinth = (args: string[], input = '') => runCommand('npx', ['plinth', ...args], { cwd: clone, env, input })

  before(async () => {
    const root = execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim()
    execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${root}`, clone])
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    for (const walker of walkers.values()) {
      walker.shop?.closeAllConnections()
      walker.shop?.close()
    }
    if (server?.pid !== undefined && server.exitCode === null && server.signalCode === null) {
      try {
        process.kill(-server.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
    rmSync(temp, { recursive: true, force: true })
  })

  const each = (heading: string, docPath: string, what: string, fn: (walker: Walker) => Promise<void>) => {
    for (const size of SIZES) {
      step(docPath, heading, `${what} (${size.name})`, async () => {
        const walker = walkers.get(size.name)
        if (walker === undefined) throw new Error(`no walker at ${size.name}: an earlier step failed`)
        await fn(walker)
      })
    }
  }
  const operatorView = (walker: Walker) => walker.operator.locator('#operator-view')
  const portalView = (walker: Walker) => walker.developer.locator('#portal-view')
  const openOperator = async (walker: Walker, tab: string) => {
    await walker.operator.getByRole('button', { name: 'Operator', exact: true }).click()
    await operatorView(walker).getByRole('button', { name: tab, exact: true }).click()
  }
  const keyAnswer = async (key: string) => {
    const response = await fetch(`${publicUrl}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${key}` } })
    return { status: response.status, body: (await response.json()) as { error?: string } }
  }
  const findUser = async (walker: Walker, username: string) => {
    await openOperator(walker, 'Users')
    await operatorView(walker).getByLabel('Find users by name').fill(username)
    await operatorView(walker).getByRole('button', { name: 'Search' }).click()
  }
  /** Issue money: the confirmation's button is **Issue**, or **Ask for approval** above the approval threshold (operators.md). */
  const issue = async (walker: Walker, target: string, amount: string, reason: string, confirm = 'Issue') => {
    const view = operatorView(walker)
    await openOperator(walker, 'Issue money')
    await view.getByLabel('To: a username or an app id').fill(target)
    await view.getByLabel('Amount in Pi').fill(amount)
    await view.getByLabel('Reason (kept in the audit log)').fill(reason)
    await view.getByRole('button', { name: 'Issue', exact: true }).click()
    await walker.operator.getByRole('dialog').getByRole('button', { name: confirm, exact: true }).click()
  }

  step(PROD, '1. The database, the key, the mode', 'the exports run as written, in a fresh clone with nothing built', async () => {
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules')) // what `npm ci` makes
    // The block as written, but the database: the embedded one, as the doc says, without DATABASE_URL.
    const lines = blockWith('export PLINTH_MODE=production')
      .split('\n')
      .filter((line) => line.startsWith('export ') && !line.startsWith('export DATABASE_URL'))
    const printed = execFileSync('bash', ['-c', `${lines.join('\n')}\nenv -0`], {
      cwd: clone,
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    })
    const exported = Object.fromEntries(
      printed.split('\0').map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    )
    assert.match(exported.PLINTH_SECRET_KEY ?? '', /^[0-9a-f]{64}$/, 'a 256-bit key, from the doc’s command')
    assert.equal(exported.PLINTH_MODE, 'production')
    env = {
      PLINTH_SECRET_KEY: exported.PLINTH_SECRET_KEY ?? '',
      PLINTH_MODE: 'production',
      PLINTH_PUBLIC_URL: exported.PLINTH_PUBLIC_URL ?? '',
    }
    assert.equal(execFileSync('git', ['-C', clone, 'ls-files', 'dist'], { encoding: 'utf8' }), '', 'no dist/ in a fresh clone')
  })

  step(PROD, 'A trial on this machine', 'PLINTH_PUBLIC_URL at localhost and private app URLs allowed', async () => {
    const port = await freePort()
    // The doc's port is 8080; this machine's tests share it, so the walk takes a free one.
    for (const line of blockWith('PLINTH_ALLOW_PRIVATE_APP_URLS').split('\n')) {
      const match = /^export (\w+)=(\S+)/.exec(line)
      if (match?.[1] !== undefined && match[2] !== undefined) env[match[1]] = match[2].replace(':8080', `:${port}`)
    }
    assert.equal(env.PLINTH_PUBLIC_URL, `http://localhost:${port}`)
    assert.equal(env.PLINTH_ALLOW_PRIVATE_APP_URLS, '1')
    publicUrl = env.PLINTH_PUBLIC_URL ?? ''
  })

  step(PROD, '2. The operator', 'npx plinth admin create-operator, before anything is built', async () => {
    const command = blockWith('create-operator').trim().split(/\s+#/)[0]?.trim().split(/\s+/) ?? []
    assert.deepEqual(command.slice(0, 4), ['npx', 'plinth', 'admin', 'create-operator'])
    const made = await npxPlinth(['admin', 'create-operator', operatorName], `${GOOD_PASSWORD}\n`)
    assert.equal(made.code, 0, made.stderr)
    assert.match(made.stdout, new RegExp(`operator ${operatorName} \\(usr_`))
  })

  step(PROD, '3. Start the platform', 'npx plinth start --mode production; the page signs people in, no sandbox', async () => {
    assert.match(blockWith('npm start'), /npx plinth start --mode production/)
    const port = new URL(publicUrl).port
    server = spawn('npx', ['plinth', 'start', '--mode', 'production', '--port', port], {
      cwd: clone,
      env: { ...process.env, DATABASE_URL: '', PLINTH_DATA_DIR: '', ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let output = ''
    server.stdout?.on('data', (chunk) => {
      output += chunk
    })
    server.stderr?.on('data', (chunk) => {
      output += chunk
    })
    await waitFor(
      async () => {
        if (server?.exitCode !== null) throw new Error(`plinth start exited: ${output}`)
        return fetch(`${publicUrl}/readyz`)
          .then((r) => r.ok)
          .catch(() => false)
      },
      'the platform to be ready',
      120_000,
    )
    assert.match(output, /production mode/)
    assert.match(output, new RegExp(`Platform\\s+${publicUrl}/`))
    for (const path of ['/sandbox/', '/console/']) assert.equal((await fetch(`${publicUrl}${path}`)).status, 404, path)
    for (const size of SIZES) {
      const pages = await Promise.all([0, 1, 2].map(() => newSizedPage(browser, size)))
      const [operator, developer, user] = pages as [Page, Page, Page]
      await operator.goto(`${publicUrl}/`)
      await operator.getByRole('heading', { name: 'Sign in' }).waitFor()
      walkers.set(size.name, {
        size,
        operator,
        developer,
        user,
        developerName: freshName(`dana${size.width}`).slice(0, 32),
        userName: freshName(`ada${size.width}`).slice(0, 32),
        appName: `Dana’s Shop ${size.width}`,
        appId: '',
        apiKey: '',
        shopUrl: '',
      })
    }
  })

  each('4. A developer', PROD, 'signs up; the operator grants the role in Operator, Users', async (w) => {
    await signUp(w.developer, publicUrl, w.developerName)
    await w.developer.getByTestId('developer-signup-ask').getByText('operator grants the developer role').waitFor()
    await signIn(w.operator, publicUrl, operatorName)
    await findUser(w, w.developerName)
    await operatorView(w)
      .getByRole('button', { name: `Grant the developer role to ${w.developerName}` })
      .click()
    await operatorView(w)
      .getByRole('button', { name: `Withdraw the developer role from ${w.developerName}` })
      .waitFor()
    await w.developer.reload()
    await w.developer.getByRole('button', { name: 'Portal', exact: true }).waitFor()
  })

  each(
    '5. An app, its domain and its key',
    PROD,
    'registers in the Portal, verifies the domain, makes a key; Listings approves it',
    async (w) => {
      // The demo shop on a port of its own, registered at its URL (§11), restarted with what the portal shows.
      const shopPort = await freePort()
      w.shopUrl = `http://127.0.0.1:${shopPort}/`
      const page = w.developer
      const view = portalView(w)
      await page.getByRole('button', { name: 'Portal', exact: true }).click()
      await view.getByRole('button', { name: 'Register an app' }).click()
      await view.getByLabel('Name').fill(w.appName)
      await view.getByLabel('Frontend URL (http or https)').fill(w.shopUrl)
      await view.getByLabel('Description').fill('Mugs and rewards, in π.')
      // Its network: Pi Testnet is preselected; the shop's users pay real π, so Pi Network.
      assert.equal(await view.getByLabel('Network').inputValue(), 'Pi Testnet')
      await view.getByLabel('Network').selectOption('Pi Network')
      await view.getByRole('button', { name: 'Register', exact: true }).click()
      const once = view.getByTestId('shown-once')
      await once.getByText('Shown once: copy it now.').waitFor()
      w.apiKey = await once.getByTestId('secret-api-key').inputValue()
      const seed = await once.getByTestId('secret-wallet-seed').inputValue()
      assert.match(seed, /^S[A-Z2-7]{55}$/)
      w.appId = await view.getByTestId('portal-app-id').innerText()
      const validationKey = await view.getByTestId('validation-key').inputValue()
      assert.match(validationKey, /^plinth-/)
      ;({ server: w.shop } = createShop({ plinthUrl: publicUrl, apiKey: w.apiKey, walletSeed: seed, validationKey }))
      await new Promise<void>((resolve) => w.shop?.listen(shopPort, '127.0.0.1', resolve))
      await view.getByRole('button', { name: 'Verify the domain' }).click()
      await view
        .getByTestId('verified-line')
        .getByText(`Verified at ${w.shopUrl.slice(0, -1)}`)
        .waitFor()
      await view.getByLabel('A new key’s name').fill('backend')
      await view.getByRole('button', { name: 'Make a key' }).click()
      await view.getByTestId('shown-once').getByText('New server API key “backend”').waitFor()
      assert.equal((await keyAnswer(w.apiKey)).status, 200)
      // A Pi Network app waits for the operator's review before it is in the directory.
      await view.getByTestId('listing-state').getByText('waiting for the platform’s review').waitFor()
      await openOperator(w, 'Listings')
      await operatorView(w)
        .locator(`li[data-app-id="${w.appId}"]`)
        .getByRole('button', { name: `Approve ${w.appName}` })
        .click()
      await w.operator.getByRole('dialog').getByRole('button', { name: 'Approve' }).click()
      await operatorView(w).locator(`li[data-app-id="${w.appId}"]`).waitFor({ state: 'detached' })
    },
  )

  each('6. A user signs up', PROD, 'Create account; the wallet is empty', async (w) => {
    await signUp(w.user, publicUrl, w.userName)
    await w.user.locator('#wallet-button').getByText('0 π').waitFor()
  })

  each('7. Money', PROD, 'the operator issues to the user and to the app’s id, with reasons', async (w) => {
    await issue(w, w.userName, '20', 'launch grant')
    await operatorView(w).getByTestId('issue-result').getByText(`Issued 20 π to ${w.userName}.`).waitFor()
    await issue(w, w.appId, '10', `rewards budget for ${w.appName}`)
    await operatorView(w).getByTestId('issue-result').getByText(`Issued 10 π to ${w.appId}.`).waitFor()
    await w.user.reload()
    await w.user.locator('#wallet-button').getByText('20 π').waitFor()
  })

  each('Test-π from the faucet', PROD, 'Get test-π in the wallet pays test-π and says so', async (w) => {
    await w.user.locator('#wallet-button').click()
    const faucet = w.user.getByTestId('faucet')
    await faucet.getByRole('button', { name: 'Get test-π' }).click()
    await faucet.getByTestId('faucet-result').getByText('The faucet paid you 100 test-π on Pi Testnet.').waitFor()
    await w.user.locator('#drawer-close').click()
  })

  each('8. The user opens the app and consents', PROD, 'Open in the directory, Allow', async (w) => {
    await w.user.getByRole('button', { name: `Open ${w.appName}` }).click()
    await appFrame(w.user, w.shopUrl.slice(0, -1))
    w.frame = w.user.frameLocator('#app-frame')
    await w.frame.getByTestId('signin').click()
    await w.user.getByRole('dialog').getByRole('button', { name: 'Allow' }).click()
    await w.frame.getByTestId('whoami').getByText(`@${w.userName}`).waitFor()
  })

  step(PROD, '9. The app’s backend verifies the user', 'the curl of /v2/me with the user’s access token', async () => {
    const w = walkers.get(SIZES[0].name) as Walker
    const accessToken = String(
      await w.user.evaluate(
        `fetch('/account/apps/${w.appId}/authenticate', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ scopes: ['username'] }) }).then((r) => r.json()).then((b) => b.accessToken)`,
      ),
    )
    const line = blockWith('/v2/me').trim().replace('https://pi.example.org', publicUrl)
    const me = execFileSync('bash', ['-c', `curl -s ${line.slice('curl '.length)}`], {
      env: { PATH: process.env.PATH, ACCESS_TOKEN: accessToken },
    })
    assert.equal((JSON.parse(String(me)) as { username: string }).username, w.userName)
  })

  each('10. A user-to-app payment', PROD, 'the shop approves, the dialog’s Pay, the shop completes', async (w) => {
    const frame = w.frame as FrameLocator
    await frame.getByTestId('buy-pi-mug').click()
    const dialog = w.user.getByRole('dialog')
    await dialog.getByText('3.14').first().waitFor()
    const pay = dialog.getByRole('button', { name: 'Pay' })
    await payArmed(pay)
    await pay.click()
    await frame.getByTestId('owned-pi-mug').getByText('π mug × 1').waitFor()
    await dialog.getByRole('button', { name: 'Close' }).click()
  })

  each('11. An app-to-user payment', PROD, 'the shop pays a reward from its issued wallet; the wallet names it', async (w) => {
    const frame = w.frame as FrameLocator
    await frame.getByTestId('claim-pi').click()
    await frame
      .getByTestId('log')
      .getByText(/0\.5 Pi sent to your wallet/)
      .waitFor()
    await w.user.locator('#wallet-button').click()
    await w.user.locator('#drawer').getByText(`${w.appName}: Pi reward`).waitFor()
    await w.user.locator('#drawer').getByTestId('wallet-balance').getByText('17.35999 π').waitFor()
    await w.user.locator('#drawer-close').click()
  })

  each('12. The operator reviews', PROD, 'every act in the Audit log, and Verify the chain', async (w) => {
    const view = operatorView(w)
    await openOperator(w, 'Audit log')
    await view.getByLabel('Target (username or app id)').fill(w.appId)
    await view.getByRole('button', { name: 'Search' }).click()
    const table = view.getByRole('table', { name: 'Audit records, newest first' })
    for (const action of ['register-app', 'verify-app-domain', 'create-key', 'approve-listing', 'issue']) {
      await table.locator(`tr[data-action="${action}"]`).first().waitFor()
    }
    await view.getByRole('button', { name: 'Verify the chain' }).click()
    await view.getByTestId('audit-verify').getByText('The chain is whole').waitFor()
    await view.getByRole('link', { name: 'Export JSON lines' }).waitFor()
  })

  each('Support lookup', OPS, '“I paid but got nothing”: the username, Search, Open the payment', async (w) => {
    const view = operatorView(w)
    await openOperator(w, 'Support')
    await view.getByLabel('Payment id, transaction hash, username, uid, wallet address or app').fill(w.userName)
    await view.getByRole('button', { name: 'Search', exact: true }).click()
    const row = view.locator('tr[data-payment-id]', { hasText: '3.14' }).first()
    await row.getByRole('button', { name: /^Open the payment / }).click()
    const timeline = view.getByTestId('support-timeline')
    await timeline.getByRole('heading', { name: /^Payment / }).waitFor()
    await timeline.getByText('3.14 π').first().waitFor()
    for (const state of ['approved', 'transaction_verified', 'completed']) await timeline.locator(`tr[data-step="${state}"]`).waitFor()
  })

  each('Suspending', OPS, 'the app with a reason: its key refused, out of the directory; restored', async (w) => {
    const view = operatorView(w)
    const dialog = w.operator.getByRole('dialog')
    await openOperator(w, 'Apps')
    await view.getByLabel('Find apps by name or id').fill(w.appId)
    await view.getByRole('button', { name: 'Search' }).click()
    await view.getByRole('button', { name: `Suspend ${w.appName}` }).click()
    await dialog.getByLabel('Reason (kept in the audit log)').fill('Reported; under review')
    await dialog.getByRole('button', { name: 'Suspend' }).click()
    await view.locator(`li[data-app-id="${w.appId}"]`).getByText('Suspended').waitFor()
    const refused = await keyAnswer(w.apiKey)
    assert.equal(refused.body.error, 'app_suspended')
    await w.user.goto(`${publicUrl}/`)
    await w.user.getByRole('heading', { name: 'Open an app' }).waitFor()
    const directory = (await w.user.evaluate(
      `fetch('/account/apps', { credentials: 'same-origin' }).then((r) => r.json()).then((b) => b.apps.map((a) => a.name))`,
    )) as string[]
    assert.equal(directory.includes(w.appName), false, 'out of the directory')
    await view.getByRole('button', { name: `Restore ${w.appName}` }).click()
    await dialog.getByLabel('Reason (kept in the audit log)').fill('Review found nothing wrong')
    await dialog.getByRole('button', { name: 'Restore' }).click()
    await view.getByRole('button', { name: `Suspend ${w.appName}` }).waitFor()
    assert.equal((await keyAnswer(w.apiKey)).status, 200)
  })

  each('Roles', OPS, 'grants and withdraws the developer role; the button says the opposite act', async (w) => {
    const view = operatorView(w)
    await findUser(w, w.userName)
    await view.getByRole('button', { name: `Grant the developer role to ${w.userName}` }).click()
    await view.getByRole('button', { name: `Withdraw the developer role from ${w.userName}` }).click()
    await view.getByRole('button', { name: `Grant the developer role to ${w.userName}` }).waitFor()
  })

  each('Password resets', OPS, 'a one-time link sets a new password and signs the person in', async (w) => {
    const view = operatorView(w)
    await view.getByRole('button', { name: `Issue a password reset link for ${w.userName}` }).click()
    await w.operator.getByRole('dialog').getByRole('button', { name: 'Issue the link' }).click()
    const link = await view.getByTestId('secret-reset-url').inputValue()
    assert.ok(link.startsWith(`${publicUrl}/#/reset/`), link)
    await w.user.goto(link)
    await w.user.getByRole('heading', { name: 'Set a new password' }).waitFor()
    await w.user.getByLabel('Your new password').fill('harbor quill meadow tundra')
    await w.user.getByRole('button', { name: 'Set the password and sign in' }).click()
    await w.user.getByRole('heading', { name: 'Open an app' }).waitFor()
  })

  each('Issuing money', OPS, 'above the approval threshold the issue waits for another operator', async (w) => {
    await issue(w, w.userName, '1500', 'launch prizes', 'Ask for approval')
    await operatorView(w).getByTestId('issue-pending').getByText('waits for another operator').waitFor()
  })

  each('The listing queue', OPS, 'the approved app left the queue; the approval is audited', async (w) => {
    await openOperator(w, 'Listings')
    await operatorView(w).getByText('No app waits for a listing review.').waitFor()
    const records = await w.operator.evaluate(
      `fetch('/operator/audit?action=approve-listing&target=${w.appId}', { credentials: 'same-origin' }).then((r) => r.json()).then((b) => b.records.length)`,
    )
    assert.equal(records, 1)
  })

  each('The ledger check', OPS, 'the Ledger tab: the books balance', async (w) => {
    await openOperator(w, 'Ledger')
    await operatorView(w).getByTestId('ledger-check').getByText('Balanced: every Pi issued').waitFor()
  })

  each('The audit log', OPS, 'the suspension with its reason and its operator; the chain whole', async (w) => {
    const view = operatorView(w)
    await openOperator(w, 'Audit log')
    await view.getByLabel('Target (username or app id)').fill(w.appId)
    await view.getByRole('button', { name: 'Search' }).click()
    const suspended = view.getByRole('table', { name: 'Audit records, newest first' }).locator('tr[data-action="suspend-app"]')
    await suspended.getByText('Reported; under review').waitFor()
    await suspended.getByText(operatorName, { exact: true }).waitFor()
    await view.getByRole('button', { name: 'Verify the chain' }).click()
    await view.getByTestId('audit-verify').getByText('The chain is whole').waitFor()
  })

  step(PROD, 'The commands', 'with the server stopped: audit verify, ledger check, grant-developer again', async () => {
    if (server?.pid !== undefined) process.kill(-server.pid, 'SIGTERM')
    await waitFor(async () => server?.exitCode !== null || server?.signalCode !== null, 'the server to stop', 30_000)
    const verified = await npxPlinth(['admin', 'audit', 'verify'])
    assert.equal(verified.code, 0, verified.stderr)
    assert.match(verified.stdout, /chain: whole \(\d+ records\)/)
    const checked = await npxPlinth(['admin', 'ledger', 'check'])
    assert.equal(checked.code, 0, checked.stderr)
    const developer = (walkers.get(SIZES[0].name) as Walker).developerName
    const again = await npxPlinth(['admin', 'users', 'grant-developer', developer])
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stdout, /already/)
  })

  done()
})

async function newSizedPage(browser: Browser, size: Size): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
  // A machine shared with other suites can be slow: the walk waits on conditions, never sleeps.
  context.setDefaultTimeout(30_000)
  context.setDefaultNavigationTimeout(60_000)
  return context.newPage()
}
