import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { GOOD_PASSWORD } from '../helpers/accounts.js'
import { assertOneLine, plinthCliArgs } from '../helpers/cli-process.js'
import { TEST_DB } from '../helpers/platform.js'
import { type BackendSetup, freePort, PlinthProcess, runPlinthCli, setUpBackend } from '../helpers/server-process.js'

/**
 * `plinth portal` (src/cli/portal.ts; docs/portal.md, "The portal from the command line"), spawned
 * as a user runs it against a production server process: a token made from a password, then a
 * developer's set-up scripted with it, each answer as documented, and its exit codes.
 */
describe(`plinth portal (${TEST_DB})`, () => {
  let setup: BackendSetup
  let server: PlinthProcess
  let token = ''
  const developer = `cli_dev_${process.pid}`
  const colleague = `cli_mate_${process.pid}`

  /** A person signed up over HTTP who takes the developer role (PLINTH_DEVELOPER_SIGNUP=open). */
  const signUpDeveloper = async (username: string) => {
    const json = { 'content-type': 'application/json' }
    const signup = await fetch(`${server.base}/account/signup`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ username, password: GOOD_PASSWORD }),
    })
    assert.equal(signup.status, 201, await signup.text())
    const cookie = signup.headers.getSetCookie()[0]?.split(';', 1)[0] ?? ''
    const role = await fetch(`${server.base}/portal/developer`, { method: 'POST', headers: { ...json, cookie }, body: '{}' })
    assert.equal(role.status, 200, await role.text())
  }
  const portal = async (args: string[], env: Record<string, string> = {}, input = '') =>
    runPlinthCli(['portal', ...args], { env: { PLINTH_URL: server.base, PLINTH_TOKEN: token, ...env }, input, node: await plinthCliArgs() })

  before(async () => {
    setup = await setUpBackend(TEST_DB)
    ;({ server } = await PlinthProcess.start(await freePort(), {
      ...setup.env,
      PLINTH_MODE: 'production',
      PLINTH_DEVELOPER_SIGNUP: 'open',
    }))
    await signUpDeveloper(developer)
    await signUpDeveloper(colleague)
  })
  after(async () => {
    await server?.stop()
    await setup?.cleanup()
  })

  it('login --username makes a token from the password on standard input; login then says whom it acts as', async () => {
    const made = await portal(['login', '--username', developer, '--scope', 'write', '--days', '7', '--json'], {}, `${GOOD_PASSWORD}\n`)
    assert.equal(made.code, 0, made.stderr)
    const body = JSON.parse(made.stdout) as { token: string; scope: string; name: string }
    assert.match(body.token, /^plinth_pat_/)
    assert.equal(body.scope, 'write')
    assert.equal(body.name, 'plinth CLI')
    token = body.token

    const who = await portal(['login'])
    assert.equal(who.code, 0, who.stderr)
    assert.equal(who.stdout.trim(), `${developer} (developer), token scope write`)

    const wrong = await portal(['login', '--username', developer], {}, 'not the password\n')
    assert.equal(wrong.code, 1)
    assertOneLine(wrong.stderr, /^plinth portal: .*\(invalid_credentials, 401\)\n$/)
  })

  it('scripts a set-up: apps create, apps list --json (an array), keys create and revoke, members add, payments list, payments export', async () => {
    const created = await portal(['apps', 'create', 'CLI Shop', '--app-url', 'http://127.0.0.1:9/', '--network', 'Pi Testnet', '--json'])
    assert.equal(created.code, 0, created.stderr)
    const { app, api_key: apiKey } = JSON.parse(created.stdout) as { app: { app_id: string; network: string }; api_key: string }
    assert.equal(app.network, 'Pi Testnet')
    assert.match(apiKey, /\S{20,}/)

    const listed = await portal(['apps', 'list', '--json'])
    assert.equal(listed.code, 0, listed.stderr)
    const apps = JSON.parse(listed.stdout) as { app_id: string; name: string }[]
    assert.ok(Array.isArray(apps))
    assert.deepEqual(
      apps.map((a) => [a.app_id, a.name]),
      [[app.app_id, 'CLI Shop']],
    )
    const text = await portal(['apps', 'list'])
    assert.equal(text.stdout.trim(), `${app.app_id}  CLI Shop  (owner)`)

    const key = await portal(['keys', 'create', '--app', app.app_id, '--name', 'ci', '--json'])
    assert.equal(key.code, 0, key.stderr)
    const { key_id: keyId, api_key: secondKey } = JSON.parse(key.stdout) as { key_id: string; api_key: string }
    const works = await fetch(`${server.base}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${secondKey}` } })
    assert.equal(works.status, 200)
    const revoked = await portal(['keys', 'revoke', '--app', app.app_id, keyId])
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.equal(revoked.stdout.trim(), `revoked ${keyId}`)
    const refused = await fetch(`${server.base}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${secondKey}` } })
    assert.equal(refused.status, 401, 'the revoked key is refused')

    const member = await portal(['members', 'add', '--app', app.app_id, colleague])
    assert.equal(member.code, 0, member.stderr)
    assert.equal(member.stdout.trim(), `${colleague} is a member`)

    const payments = await portal(['payments', 'list', '--app', app.app_id, '--json'])
    assert.equal(payments.code, 0, payments.stderr)
    assert.deepEqual(JSON.parse(payments.stdout), [])
    const csv = await portal(['payments', 'export', '--app', app.app_id, '--format', 'csv'])
    assert.equal(csv.code, 0, csv.stderr)
    assert.match(csv.stdout, /^"identifier","direction","state","amount","memo","metadata","user_uid",.*\r\n$/)
    const json = await portal(['payments', 'export', '--app', app.app_id, '--format', 'json', '--limit', '5'])
    assert.deepEqual(JSON.parse(json.stdout), { payments: [], exported: 0, truncated: false })
    const xml = await portal(['payments', 'export', '--app', app.app_id, '--format', 'xml'])
    assert.equal(xml.code, 2)
    assertOneLine(xml.stderr, /--format takes csv or json/)
  })

  it('exit codes: 1 refused (a read token writing, another app), 2 usage (no token, unknown command), 3 no server', async () => {
    const read = await portal(['login', '--username', developer, '--scope', 'read', '--json'], {}, `${GOOD_PASSWORD}\n`)
    assert.equal(read.code, 0, read.stderr)
    const readToken = (JSON.parse(read.stdout) as { token: string }).token
    const listed = await portal(['apps', 'list', '--json'], { PLINTH_TOKEN: readToken })
    assert.equal(listed.code, 0, listed.stderr)
    const writing = await portal(['apps', 'create', 'Nope', '--app-url', 'http://127.0.0.1:9/'], { PLINTH_TOKEN: readToken })
    assert.equal(writing.code, 1)
    assertOneLine(writing.stderr, /\(read_only_token, 403\)\n$/)

    const elsewhere = await portal(['payments', 'list', '--app', 'app_0000000000000000'])
    assert.equal(elsewhere.code, 1)
    assertOneLine(elsewhere.stderr, /\(app_not_found, 404\)\n$/)

    const revoked = await portal(['apps', 'list'], { PLINTH_TOKEN: `plinth_pat_${'x'.repeat(43)}` })
    assert.equal(revoked.code, 1)
    assertOneLine(revoked.stderr, /\(invalid_personal_token, 401\)\n$/)

    const noToken = await portal(['apps', 'list'], { PLINTH_TOKEN: '' })
    assert.equal(noToken.code, 2)
    assertOneLine(noToken.stderr, /PLINTH_TOKEN/)
    const unknown = await portal(['apps', 'delete'])
    assert.equal(unknown.code, 2)
    const missing = await portal(['keys', 'create'])
    assert.equal(missing.code, 2)
    assertOneLine(missing.stderr, /--app/)

    const nobody = await portal(['apps', 'list', '--url', `http://127.0.0.1:${await freePort()}`])
    assert.equal(nobody.code, 3)
    assertOneLine(nobody.stderr, /no platform answers/)
  })
})
