/**
 * The README's and docs/testing.md's snippets, run as written (issue #27: "every doc true as
 * written"). Every fenced block of both files is either run here or named in NOT_RUN with the
 * reason and the test that covers it instead; a new block fails `every block is run or accounted
 * for` until it is one or the other.
 *
 * The platform is a real server process started as `npm start` starts it (`node dist/server.js`
 * after the build, or the source through tsx when dist/ is stale), in an empty folder, with a
 * terminal for standard output (`script`), so the banner is the one a developer sees. The snippets'
 * `localhost:8080` and `127.0.0.1:8080` are rewritten to the test's port; nothing else is changed.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { freePort, nodeArgs, REPO_ROOT } from '../helpers/server-process.js'

interface Block {
  file: string
  lang: string
  /** The first line of the block: how NOT_RUN names it. */
  first: string
  text: string
}

function blocks(file: string): Block[] {
  const found: Block[] = []
  const text = readFileSync(join(REPO_ROOT, file), 'utf8')
  for (const match of text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const body = match[2] ?? ''
    found.push({ file, lang: match[1] ?? '', first: body.split('\n')[0] ?? '', text: body })
  }
  return found
}

const DOCS = ['README.md', 'docs/testing.md']
const all = DOCS.flatMap(blocks)
/** Blocks run by this file, by their first line. */
const RUN = new Set<string>()
/** Blocks not run here, by their first line: why, and what runs them instead. */
const NOT_RUN: Record<string, string> = {
  'npm test': 'this suite',
  'export DATABASE_URL=postgres://postgres@127.0.0.1:5432/plinth':
    'needs a database named plinth; several processes on one PostgreSQL: test/integration/cluster tests (startCluster)',
  '{': 'the `plinth seed` file: test/integration/cli-fixtures.test.ts seeds a file with every field this one has',
  '# .github/workflows/test.yml (GitHub Actions)': 'a GitHub Actions workflow; it calls npm test, which startPlinth() makes self-contained',
  'DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run test:loaded -- --backend=postgres test/integration test/clients':
    'runs the whole loaded suite; scripts/test-loaded.mjs is run by hand (docs/testing.md says when)',
  '# The next approve of this app fails with 500, before anything changes:':
    'faults are run through the API by test/integration/faults.test.ts, with these bodies',
}

let dir: string
let server: ChildProcess
let port: number
let terminal = ''
let base: string

/** Every block not run here, and not yet claimed by a test below, is named in NOT_RUN. */
const claim = (first: string) => {
  const block = all.find((b) => b.first.startsWith(first))
  assert.ok(block, `no block starts with ${JSON.stringify(first)}`)
  RUN.add(block.first)
  return block.text.replaceAll('localhost:8080', `localhost:${port}`).replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)
}

/** `node dist/server.js`, or the source through tsx when dist/ is stale (tsx named by its path: the
 * server runs in a folder without node_modules). */
const serverArgs = () => nodeArgs('src/server.ts').map((arg) => (arg === 'tsx' ? import.meta.resolve('tsx') : arg))

/** Waits for `probe`; on failure, names the process waited for and what it printed (the README's server unless told). */
async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 120_000,
  of: { process: ChildProcess; output: () => string } = { process: server, output: () => terminal },
): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value !== undefined) return value
    if (of.process.exitCode !== null)
      throw new Error(`the server exited (${of.process.exitCode}) before ${what}; terminal:\n${of.output()}`)
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; terminal:\n${of.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function api(path: string, init: RequestInit & { json?: unknown } = {}) {
  const headers = new Headers(init.headers)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  else headers.set('x-plinth-client', 'doc-test')
  const response = await fetch(`${base}${path}`, {
    ...init,
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  })
  const text = await response.text()
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) }
}

describe('the README and docs/testing.md, as written', () => {
  before(async () => {
    port = await freePort()
    base = `http://127.0.0.1:${port}`
    dir = mkdtempSync(join(tmpdir(), 'plinth-doc-'))
    // What `npm start` runs once it has built, in a folder of its own (./.plinth lands there), with
    // a terminal on standard output: `script` gives it one, as a developer's shell does.
    const command = [process.execPath, '--max-old-space-size=384', ...serverArgs()].map((a) => `'${a}'`).join(' ')
    const { DATABASE_URL: _u, PLINTH_DB_SCHEMA: _s, PLINTH_SECRET_KEY: _k, PLINTH_DATA_DIR: _d, LOG_LEVEL: _l, ...env } = process.env
    server = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: dir,
      env: { ...env, PORT: String(port), NODE_OPTIONS: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    })
    server.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      terminal += chunk.replaceAll('\r', '')
    })
    await until('the server', async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined))
    await until('the banner', async () => (terminal.includes('then: curl') ? true : undefined))
  })

  after(async () => {
    if (server.pid !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve))
      process.kill(-server.pid, 'SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('README, quick start: the terminal shows the banner as the README gives it, then the JSON log lines it names', async () => {
    claim('npm install')
    const shown = all.find((b) => b.file === 'README.md' && b.first.startsWith('Plinth 0.1.0: sandbox mode'))
    assert.ok(shown, 'the README shows the banner')
    RUN.add(shown.first)
    // pino writes its lines asynchronously: wait for the second of them ("plinth ready").
    await until('the JSON log lines', async () => (terminal.includes('"msg":"plinth ready"') ? true : undefined))
    const lines = terminal.split('\n')
    const start = lines.findIndex((line) => line.startsWith('Plinth '))
    assert.ok(start >= 0, terminal)
    const expected = shown.text.trimEnd().split('\n')
    for (const [i, line] of expected.entries()) {
      // The README's `…` stands for the rest of an id or key, `/home/you/plinth` for the folder,
      // and a number of milliseconds for this start's.
      const pattern = line
        .replaceAll(/[A-Za-z0-9]*…/g, '\u0000')
        .replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replaceAll('/home/you/plinth', '/\\S+')
        .replaceAll('\u0000', '[A-Za-z0-9_-]+')
        .replace(/ready in \d+ ms/, 'ready in \\d+ ms')
        .replaceAll(':8080', `:${port}`)
      assert.match(lines[start + i] ?? '', new RegExp(`^${pattern}$`), `banner line ${i + 1}`)
    }
    // Around the banner: pino's JSON lines, as the README says, and nothing else.
    const around = [...lines.slice(0, start), ...lines.slice(start + expected.length)].filter((line) => line.trim() !== '')
    assert.ok(around.length >= 2, 'JSON log lines come with the banner')
    for (const line of around) assert.equal(typeof JSON.parse(line).msg, 'string', line)
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
    assert.match(readme, /JSON log lines/, 'the README says the JSON log lines come with the banner')
  })

  it('README, quick start: with LOG_LEVEL=warn the banner is all a start and a request print', async () => {
    const quietPort = await freePort()
    const { DATABASE_URL: _u, PLINTH_DB_SCHEMA: _s, PLINTH_SECRET_KEY: _k, ...env } = process.env
    const quiet = spawn(process.execPath, serverArgs(), {
      cwd: dir,
      env: { ...env, PORT: String(quietPort), LOG_LEVEL: 'warn', PLINTH_DATA_DIR: 'memory' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let printed = ''
    quiet.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      printed += chunk
    })
    quiet.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      printed += chunk
    })
    const exited = new Promise((resolve) => quiet.once('exit', resolve))
    try {
      const of = { process: quiet, output: () => printed }
      await until(
        'the quiet server',
        async () => ((await fetch(`http://127.0.0.1:${quietPort}/healthz`)).ok ? true : undefined),
        120_000,
        of,
      )
      await until('its banner', async () => (printed.includes('then: curl') ? true : undefined), 120_000, of)
      assert.equal((await fetch(`http://127.0.0.1:${quietPort}/v2/me`)).status, 401)
    } finally {
      quiet.kill('SIGTERM')
      await exited
    }
    const lines = printed.split('\n').filter((line) => line.trim() !== '')
    assert.ok(lines[0]?.startsWith('Plinth '), printed)
    assert.deepEqual(
      lines.filter((line) => line.startsWith('{')),
      [],
      'no JSON log line at warn for a start, a request and a stop',
    )
    assert.match(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'), /`LOG_LEVEL=warn npm start` leaves the banner alone/)
  })

  it('README, "Point an app backend at Plinth": the curl pair gives /v2/me the shape the comment shows', async () => {
    const demo = await api('/sandbox/apps')
    const appId = demo.body.apps.find((a: { name: string }) => a.name === 'Plinth Demo').app_id
    const users = await api('/sandbox/users')
    const userId = users.body.users.find((u: { username: string }) => u.username === 'demo_pioneer').user_id
    const script = claim("# What the frontend's Pi.authenticate() hands the backend:")
    const out = execFileSync('bash', ['-eo', 'pipefail', '-c', script], {
      env: { ...process.env, APP_ID: appId, USER_ID: userId },
      encoding: 'utf8',
    })
    const me = JSON.parse(out)
    const shown = JSON.parse(/^# (\{"uid".*)$/m.exec(script)?.[1]?.replaceAll('…', '') ?? '{}')
    assert.deepEqual(Object.keys(me).sort(), Object.keys(shown).sort())
    assert.equal(me.username, 'demo_pioneer')
    assert.deepEqual(me.credentials.scopes, shown.credentials.scopes)
  })

  it('README, axios as the official demo backend: me, approve, then complete with the txid', async () => {
    const script = claim('const platformAPIClient = axios.create(')
    const demo = await api('/sandbox/apps')
    const appId = demo.body.apps.find((a: { name: string }) => a.name === 'Plinth Demo').app_id
    const apiKey = (await api(`/sandbox/apps/${appId}/keys`, { method: 'POST' })).body.api_key
    const users = await api('/sandbox/users')
    const userId = users.body.users.find((u: { username: string }) => u.username === 'demo_pioneer').user_id
    const auth = await api(`/sandbox/apps/${appId}/authenticate`, {
      method: 'POST',
      json: { user_id: userId, scopes: ['username', 'payments'] },
    })
    const accessToken = auth.body.accessToken
    const bearer = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
    const created = await fetch(`${base}/v2/client/payments`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ amount: 1, memo: 'Doc test', metadata: {} }),
    }).then((r) => r.json() as Promise<{ identifier: string }>)
    const paymentId = created.identifier
    // The user pays between the backend's approve and its complete, as the browser does: the
    // snippet's lines run as written, with the user's submit in between.
    const lines = script.trimEnd().split('\n')
    const approveAt = lines.findIndex((line) => line.includes('/approve'))
    assert.ok(approveAt > 0)
    const submit = async () =>
      (
        (await fetch(`${base}/v2/client/payments/${paymentId}/submit`, {
          method: 'POST',
          headers: { authorization: `Bearer ${accessToken}` },
        }).then((r) => r.json())) as { transaction: { txid: string } }
      ).transaction.txid
    const { default: axios } = await import('axios')
    const body = [...lines.slice(0, approveAt + 1), 'const txid = await submit()', ...lines.slice(approveAt + 1), 'return me.data']
    const run = new Function('axios', 'apiKey', 'accessToken', 'paymentId', 'submit', `return (async () => {\n${body.join('\n')}\n})()`)
    const me = await run(axios, apiKey, accessToken, paymentId, submit)
    assert.equal(me.username, 'demo_pioneer')
    const payment = await fetch(`${base}/v2/payments/${paymentId}`, { headers: { authorization: `Key ${apiKey}` } }).then(
      (r) => r.json() as Promise<{ status: { developer_completed: boolean } }>,
    )
    assert.equal(payment.status.developer_completed, true)
  })

  it('README, the official pi-backend SDK: the snippet runs as written, in a process of its own, and completes an A2U payment on /ledger', async () => {
    const script = claim("import { createRequire } from 'node:module'")
    const created = await api('/sandbox/apps', { method: 'POST', json: { name: 'pi-backend doc' } })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const app = created.body
    const user = (await api('/sandbox/users', { method: 'POST', json: { username: `pibackend_${process.pid}` } })).body
    const auth = await api(`/sandbox/apps/${app.app_id}/authenticate`, {
      method: 'POST',
      json: { user_id: user.user_id, scopes: ['username', 'payments', 'wallet_address'] },
    })
    // The snippet's free names are the app's, as a backend holds them; imports are hoisted, so
    // they can come first. Inside the repository, pi-backend resolves from its node_modules.
    const given = { apiKey: app.api_key, walletSeed: app.wallet.seed, uid: auth.body.user.uid }
    const preamble = Object.entries(given).map(([name, value]) => `const ${name} = ${JSON.stringify(value)}`)
    const scratch = join(REPO_ROOT, '.build', `doc-snippet-pi-${process.pid}`)
    mkdirSync(scratch, { recursive: true })
    const file = join(scratch, 'pi-backend.mjs')
    writeFileSync(file, `${preamble.join('\n')}\n${script}\nconsole.log(JSON.stringify({ paymentId, txid }))\n`)
    let out: string
    try {
      out = execFileSync(process.execPath, [file], { cwd: scratch, encoding: 'utf8' })
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
    const { paymentId, txid } = JSON.parse(out.trim().split('\n').at(-1) ?? '{}')
    assert.match(txid, /^[0-9a-f]{64}$/)
    const payment = await api(`/v2/payments/${paymentId}`, { headers: { authorization: `Key ${app.api_key}` } })
    assert.equal(payment.body.direction, 'app_to_user')
    assert.equal(payment.body.status.developer_completed, true)
    assert.equal(payment.body.transaction.txid, txid)
    assert.equal((await api(`/ledger/transactions/${txid}`)).body.memo, paymentId)
    // docs/payments.md gives the same block, and says why it is not `import PiNetwork from 'pi-backend'`.
    const payments = blocks('docs/payments.md').find((b) => b.first === "import { createRequire } from 'node:module'")
    assert.equal(payments?.text, all.find((b) => b.first === "import { createRequire } from 'node:module'")?.text)
    const imported = execFileSync(process.execPath, ['--input-type=module', '-e', "import P from 'pi-backend'; console.log(typeof P)"], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    assert.equal(imported.trim(), 'object', "an ES module's default import of pi-backend is not its class")
  })

  it('docs/testing.md, "Reset and snapshots": each curl answers as its comment says', async () => {
    const script = claim('# An empty platform again (every app, key, user, token, payment, ledger entry, ad,')
    const runLine = (line: string) =>
      execFileSync('bash', ['-eo', 'pipefail', '-c', `${line.replace(/\s+#.*$/, '')} -w '\\n%{http_code}'`], {
        env: { ...process.env, PLINTH: base },
        encoding: 'utf8',
      })
    const commands = script.split('\n').filter((line) => line.startsWith('curl '))
    assert.equal(commands.length, 6)
    const answers = commands.map(runLine).map((out) => {
      const at = out.lastIndexOf('\n')
      return { status: Number(out.slice(at + 1)), body: out.slice(0, at) }
    })
    assert.equal(JSON.parse(answers[0]?.body ?? '').seed, 'empty')
    const demo = JSON.parse(answers[1]?.body ?? '')
    // → {"seed":"demo","took_ms":61.2,"demo":{"app_id":"app_…","api_key":"…","user_id":"usr_…", …}}
    assert.equal(demo.seed, 'demo')
    assert.equal(typeof demo.took_ms, 'number')
    assert.match(demo.demo.app_id, /^app_/)
    assert.match(demo.demo.user_id, /^usr_/)
    assert.equal(typeof demo.demo.api_key, 'string')
    assert.equal(answers[2]?.status, 201)
    assert.equal(answers[3]?.status, 200)
    // {"snapshots":[{"name","created_at","bytes"}]}
    const list = JSON.parse(answers[4]?.body ?? '')
    assert.deepEqual(Object.keys(list.snapshots[0]).sort(), ['bytes', 'created_at', 'name'])
    assert.equal(answers[5]?.status, 204)
  })

  it('docs/testing.md, "Starting Plinth in a test suite": the startPlinth() block runs as written, from the package', async () => {
    const script = claim("import { startPlinth } from 'plinth'")
    // Inside the repository, `plinth` resolves to the package itself (its exports: dist/index.js),
    // as it does in a project that installed it.
    const scratch = join(REPO_ROOT, '.build', `doc-snippet-${process.pid}`)
    mkdirSync(scratch, { recursive: true })
    const file = join(scratch, 'start-plinth.mjs')
    writeFileSync(file, `${script}\nconsole.log(JSON.stringify({ app: shop.app_id, user: user.user_id, token: typeof accessToken }))\n`)
    try {
      const out = execFileSync(process.execPath, [file], { cwd: REPO_ROOT, encoding: 'utf8' })
      const seen = JSON.parse(out.trim().split('\n').at(-1) ?? '{}')
      assert.match(seen.app, /^app_/)
      assert.match(seen.user, /^usr_/)
      assert.equal(seen.token, 'string')
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it('every block is run or accounted for', () => {
    for (const block of all) {
      const accounted = RUN.has(block.first) || NOT_RUN[block.first] !== undefined
      assert.ok(
        accounted,
        `${block.file}: the block starting ${JSON.stringify(block.first)} is neither run by doc-snippets.test.ts nor in NOT_RUN`,
      )
    }
    for (const first of Object.keys(NOT_RUN)) {
      assert.ok(
        all.some((b) => b.first === first),
        `NOT_RUN names a block that no longer exists: ${first}`,
      )
    }
  })
})
