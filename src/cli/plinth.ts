#!/usr/bin/env node
/**
 * The `plinth` command (docs/testing.md, "The CLI"). `plinth start` runs a platform in this
 * process; every other command talks to a running one over its sandbox API. Exit codes: 0 done,
 * 1 the platform refused (its error_message is printed) or an unexpected error, 2 usage (also a
 * port in use at start), 3 no platform at --url. Every error is one line on standard error; the
 * stack of an unexpected one only with PLINTH_DEBUG=1.
 */
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createSandboxClient, SandboxError } from '../client/sandbox-client.js'
import { describeFault, faultBody } from './faults-options.js'
import { tail } from './logs-tail.js'
import { start } from './start-command.js'
import { checkAmount, checkCount, checkSeedFile, FIXTURES, FixtureUsageError, type Made, seed, trigger } from './trigger.js'
import { EXIT, parseDuration, readText, UsageError } from './usage.js'

const HELP = `plinth <command> [options]

Commands
  start [--port N] [--host H] [--data-dir D] [--database-url URL] [--mode sandbox|production]
        [--admin-token T] [--seed demo|empty]       run a platform in this process (Ctrl-C stops it)
  apps create <name> [--app-url URL]                 create an app: prints its id, server API key and wallet seed (shown once)
  apps list
  keys create --app <id>                             a new server API key (shown once)
  keys revoke --app <id> <key-id>
  users create <username>                            a user: prints its wallet seed (shown once)
  login <username> --app <id> [--scopes username,payments]
                                                     sign a user in to an app: prints an access token
  clock show | clock advance <90s|30m|1h|2d> | clock reset
  fund <address> <amount>                            give test Pi to a wallet
  reset [--empty]                                    the demo platform again (prints the new demo key, shown once) or an empty one
  snapshot save <name> [--force] | snapshot restore <name> | snapshot list | snapshot delete <name>
                                                     an existing name is refused unless --force (then replaced)
  snapshot export <name> --file F                    the snapshot as a JSON file
  snapshot import --file F [--name N] [--force]      a file from snapshot export, saved as a snapshot
  faults add --app <id> (--status 500|502|503|429 [--retry-after S] | --delay-ms N | --drop)
        [--route "POST /v2/payments/{payment_id}/approve"] [--operation approvePayment] [--user-uid U]
        [--when before|after] [--times N] [--probability P]
                                                     make chosen /v2 calls of an app fail
  faults list [--app <id>] | faults delete <fault-id> | faults clear [--app <id>]
  trigger <fixture> [--app <id>] [--count N] [--user U] [--amount A] [--balance B] [--app-seed S]
                                                     fixtures, made through the API: ${FIXTURES.join(', ')}
                                                     (--app: default the demo app; --count: 1 to 1000)
  seed <file.json> [--app <id>]                      users with balances, payments in given states, notifications
  logs tail --app <id>                               follow an app's request log (Ctrl-C stops)
  admin <command>                                    the operator's commands, on the database itself
                                                     (plinth admin --help)
  portal <command>                                   the developer portal with a personal access token (plinth portal --help)

Options
  --url URL            the platform (default $PLINTH_URL or http://127.0.0.1:8080)
  --admin-token T      its admin token (default $PLINTH_ADMIN_TOKEN)
  --json               machine-readable output
  -h, --help

Exit codes: 0 done, 1 the platform refused, 2 usage, 3 no platform at --url.
(1 also for an unexpected error, printed as one line; PLINTH_DEBUG=1 prints its stack.)`

/** A balance may be 0 (an empty wallet). */
function checkAmount0(text: string): string {
  return /^0+(\.0{1,7})?$/.test(text) ? '0' : checkAmount(text, '--balance')
}

/**
 * A taken snapshot name: the API's message advises its own field (`"replace": true`), which a
 * user of the command cannot send; the command's way is --force (docs/testing.md, #41 D9).
 */
async function forceHinted<T>(call: Promise<T>): Promise<T> {
  try {
    return await call
  } catch (error) {
    if (!(error instanceof SandboxError) || error.code !== 'snapshot_exists') throw error
    throw new SandboxError(error.status, error.code, `${error.message.split(';')[0]}; pass --force to replace it.`)
  }
}

/** What trigger and seed made: one line each (--json: the records, wallet seeds of new users included). */
function showMade(result: { made: Made[]; note?: string }, json: boolean, out: (line: string) => void): void {
  if (json) {
    out(JSON.stringify(result))
    return
  }
  for (const m of result.made) {
    const parts = [m.fixture.padEnd(18)]
    if (m.payment_id !== undefined) parts.push(`payment ${m.payment_id}`)
    if (m.notification_id !== undefined) parts.push(`notification ${m.notification_id}`)
    parts.push(`user ${m.username} (${m.user_id}${m.uid === undefined ? '' : `, uid ${m.uid}`})`)
    if (m.txid !== undefined) parts.push(`txid ${m.txid}`)
    if (m.balance !== undefined) parts.push(`balance ${m.balance}`)
    out(parts.join('  '))
  }
  if (result.made.some((m) => m.wallet_seed !== undefined)) out('(--json has the wallet seed of each new user, shown once)')
  if (result.note !== undefined) out(`note: ${result.note}`)
}

async function run(argv: string[], out: (line: string) => void): Promise<number> {
  if (argv[0] === 'portal') return (await import('./portal.js')).runPortal(argv.slice(1), out)
  if (argv[0] === 'admin') {
    // Its own options (--owner, --name, …); it opens the database, so it is loaded only when used.
    const { runAdmin, AdminUsageError } = await import('./admin.js')
    try {
      return await runAdmin(argv.slice(1), out)
    } catch (error) {
      if (error instanceof AdminUsageError) throw new UsageError(error.message)
      throw error
    }
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      'admin-token': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      app: { type: 'string' },
      'app-url': { type: 'string' },
      scopes: { type: 'string' },
      empty: { type: 'boolean', default: false },
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      mode: { type: 'string' },
      seed: { type: 'string' },
      force: { type: 'boolean', default: false },
      file: { type: 'string' },
      name: { type: 'string' },
      count: { type: 'string' },
      user: { type: 'string' },
      amount: { type: 'string' },
      balance: { type: 'string' },
      'app-seed': { type: 'string' },
      status: { type: 'string' },
      'retry-after': { type: 'string' },
      'delay-ms': { type: 'string' },
      drop: { type: 'boolean', default: false },
      route: { type: 'string' },
      operation: { type: 'string' },
      'user-uid': { type: 'string' },
      when: { type: 'string' },
      times: { type: 'string' },
      probability: { type: 'string' },
    },
  })
  if (values.help || positionals.length === 0) {
    out(HELP)
    return positionals.length === 0 && !values.help ? EXIT.usage : EXIT.ok
  }
  const [command, sub, ...rest] = positionals
  const adminToken = values['admin-token'] ?? process.env.PLINTH_ADMIN_TOKEN
  const api = createSandboxClient(values.url ?? process.env.PLINTH_URL ?? 'http://127.0.0.1:8080', { adminToken, clientName: 'plinth-cli' })
  const show = (value: unknown, text: string) => out(values.json ? JSON.stringify(value) : text)
  const need = (value: string | undefined, what: string): string => {
    if (value === undefined || value === '') throw new UsageError(`missing ${what}`)
    return value
  }
  const app = () => need(values.app, '--app <app id>')

  switch (command) {
    case 'start':
      return start(values, adminToken)
    case 'apps':
      if (sub === 'create') {
        const created = await api.apps.create(need(rest[0], '<name>'), values['app-url'])
        show(
          created,
          `app ${created.app_id} (${created.name})\n  server API key ${created.api_key}   (shown once)\n  wallet ${created.wallet.address}\n  wallet seed ${created.wallet.seed}   (shown once)`,
        )
        return EXIT.ok
      }
      if (sub === 'list') {
        const { apps } = await api.apps.list()
        show(apps, apps.map((a) => `${a.app_id}  ${a.name}`).join('\n') || '(no apps)')
        return EXIT.ok
      }
      break
    case 'keys':
      if (sub === 'create') {
        const key = await api.keys.create(app())
        show(key, `key ${key.key_id}\n  server API key ${key.api_key}   (shown once)`)
        return EXIT.ok
      }
      if (sub === 'revoke') {
        const keyId = need(rest[0], '<key-id>')
        await api.keys.revoke(app(), keyId)
        show({ revoked: keyId }, `revoked ${keyId}`)
        return EXIT.ok
      }
      break
    case 'users':
      if (sub === 'create') {
        const user = await api.users.create(need(rest[0], '<username>'))
        show(
          user,
          `user ${user.user_id} (${user.username})\n  wallet ${user.wallet.address}\n  wallet seed ${user.wallet.seed}   (shown once)`,
        )
        return EXIT.ok
      }
      break
    case 'login': {
      const username = need(sub, '<username>')
      const found = (await api.users.find(username)).users[0]
      if (found === undefined) throw new SandboxError(404, 'user_not_found', `No user named ${username}.`)
      const scopes = (values.scopes ?? 'username,payments').split(',').filter((s) => s !== '')
      const signedIn = await api.authenticate(app(), found.user_id, scopes)
      show(signedIn, signedIn.accessToken)
      return EXIT.ok
    }
    case 'clock': {
      const clock =
        sub === 'show' || sub === undefined
          ? await api.clock.show()
          : sub === 'advance'
            ? await api.clock.advance(parseDuration(need(rest[0], '<duration>')))
            : sub === 'reset'
              ? await api.clock.reset()
              : undefined
      if (clock === undefined) break
      show(clock, `${clock.now}   (${clock.offset_seconds} s ahead of real time)`)
      return EXIT.ok
    }
    case 'fund': {
      const funded = await api.ledger.fund(need(sub, '<address>'), need(rest[0], '<amount>'))
      show(funded, `${funded.address} now holds ${funded.balance} Pi`)
      return EXIT.ok
    }
    case 'reset': {
      const reset = await api.reset(values.empty ? 'empty' : 'demo')
      const demo = reset.demo
      show(
        reset,
        `reset (${reset.seed}) in ${reset.took_ms} ms` +
          (demo === undefined
            ? ''
            : `\n  demo app ${demo.app_id} (${demo.app_name})\n  server API key ${demo.api_key}   (shown once)\n  demo user ${demo.username}, user_id ${demo.user_id}`),
      )
      return EXIT.ok
    }
    case 'snapshot':
      if (sub === 'list') {
        const { snapshots } = await api.snapshots.list()
        show(snapshots, snapshots.map((s) => `${s.name}  ${s.created_at}`).join('\n') || '(no snapshots)')
        return EXIT.ok
      }
      if (sub === 'save') {
        // The API's own rule: a taken name is 409 snapshot_exists unless replaced on purpose.
        const saved = await forceHinted(api.snapshots.save(need(rest[0], '<name>'), values.force))
        show(saved, `saved ${saved.name}`)
        return EXIT.ok
      }
      if (sub === 'restore') {
        const restored = await api.snapshots.restore(need(rest[0], '<name>'))
        show(restored, `restored ${restored.name} in ${restored.took_ms} ms`)
        return EXIT.ok
      }
      if (sub === 'delete') {
        const name = need(rest[0], '<name>')
        await api.snapshots.delete(name)
        show({ deleted: name }, `deleted ${name}`)
        return EXIT.ok
      }
      if (sub === 'export') {
        const name = need(rest[0], '<name>')
        const file = need(values.file, '--file <path>')
        const text = await api.snapshots.export(name)
        writeFileSync(file, text)
        show({ name, file, bytes: Buffer.byteLength(text) }, `exported ${name} to ${file} (${Buffer.byteLength(text)} bytes)`)
        return EXIT.ok
      }
      if (sub === 'import') {
        const file = need(values.file, '--file <path>')
        const text = readText(file)
        const imported = await forceHinted(
          api.snapshots.import(text, {
            ...(values.name === undefined ? {} : { name: values.name }),
            replace: values.force,
          }),
        )
        show(imported, `imported ${file} as ${imported.name}; plinth snapshot restore ${imported.name} puts the platform back to it`)
        return EXIT.ok
      }
      break
    case 'faults':
      if (sub === 'add') {
        const created = await api.faults.add(faultBody(values, app()))
        show(created, `fault ${describeFault(created)}`)
        return EXIT.ok
      }
      if (sub === 'list') {
        const { faults } = await api.faults.list(values.app)
        show(faults, faults.map(describeFault).join('\n') || '(no faults)')
        return EXIT.ok
      }
      if (sub === 'delete') {
        const faultId = need(rest[0], '<fault-id>')
        await api.faults.delete(faultId)
        show({ deleted: faultId }, `deleted ${faultId}`)
        return EXIT.ok
      }
      if (sub === 'clear') {
        await api.faults.clear(values.app)
        show({ cleared: values.app ?? 'all' }, values.app === undefined ? 'cleared every fault' : `cleared the faults of ${values.app}`)
        return EXIT.ok
      }
      break
    case 'trigger': {
      const fixture = need(sub, `<fixture>: one of ${FIXTURES.join(', ')}`)
      const result = await trigger(api, fixture, {
        app: values.app,
        appSeed: values['app-seed'],
        count: checkCount(values.count),
        user: values.user,
        amount: checkAmount(values.amount ?? '1', '--amount'),
        balance: values.balance === undefined ? '5000' : checkAmount0(values.balance),
      })
      showMade(result, values.json, out)
      return EXIT.ok
    }
    case 'seed': {
      const file = need(sub, '<file.json>')
      let parsed: unknown
      try {
        parsed = JSON.parse(readText(file))
      } catch (error) {
        if (error instanceof UsageError) throw error
        throw new UsageError(`${file} is not JSON: ${(error as Error).message}`)
      }
      const result = await seed(api, checkSeedFile(parsed), values.app)
      showMade(result, values.json, out)
      return EXIT.ok
    }
    case 'logs':
      if (sub === 'tail') return tail(api, app(), values.json, out)
      break
  }
  throw new UsageError(`unknown command: ${positionals.join(' ')}`)
}

run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const fail = (code: number, line: string) => {
      // One line, whatever the message (parseArgs writes some over three).
      process.stderr.write(`plinth: ${line.replace(/\s*\n\s*/g, ' ')}\n`)
      if (process.env.PLINTH_DEBUG === '1' && error instanceof Error && error.stack !== undefined) process.stderr.write(`${error.stack}\n`)
      process.exit(code)
    }
    if (
      error instanceof UsageError ||
      error instanceof FixtureUsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      return fail(EXIT.usage, `${(error as Error).message} (plinth --help lists the commands)`)
    }
    if (error instanceof SandboxError) return fail(EXIT.refused, `${error.message} (${error.code}, ${error.status})`)
    // fetch refuses with TypeError('fetch failed') and the socket's error as its cause.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    if (error instanceof TypeError && cause !== undefined) {
      return fail(
        EXIT.unreachable,
        `no platform answers at that URL (${cause.code ?? cause.message}); start one with "plinth start" or pass --url`,
      )
    }
    // Anything else: one line; the stack only when asked for (PLINTH_DEBUG=1).
    const message = error instanceof Error ? error.message : String(error)
    return fail(EXIT.refused, message.split('\n', 1)[0] ?? message)
  },
)
