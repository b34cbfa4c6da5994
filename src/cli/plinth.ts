#!/usr/bin/env node
/**
 * The `plinth` command (docs/testing.md, "The CLI"). `plinth start` runs a platform in this
 * process; every other command talks to a running one over its sandbox API. Exit codes: 0 done,
 * 1 the platform refused (its error_message is printed), 2 usage, 3 no platform at --url.
 */
import { parseArgs } from 'node:util'
import { createSandboxClient, SandboxError } from '../client/sandbox-client.js'

const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const

const HELP = `plinth <command> [options]

Commands
  start [--port N] [--host H] [--data-dir D] [--database-url URL] [--mode sandbox|production]
        [--admin-token T] [--seed demo|empty]       run a platform in this process (Ctrl-C stops it)
  apps create <name> [--app-url URL]                 create an app: prints its id, server API key and wallet
  apps list
  keys create --app <id>                             a new server API key (shown once)
  keys revoke --app <id> <key-id>
  users create <username>
  login <username> --app <id> [--scopes username,payments]
                                                     sign a user in to an app: prints an access token
  clock show | clock advance <90s|30m|1h|2d> | clock reset
  fund <address> <amount>                            give test Pi to a wallet
  reset [--empty]                                    the demo platform again (or an empty one)
  snapshot save <name> | snapshot restore <name> | snapshot list
  logs tail --app <id>                               follow an app's request log (Ctrl-C stops)
  admin <command>                                    the operator's commands, on the database itself
                                                     (plinth admin --help)

Options
  --url URL            the platform (default $PLINTH_URL or http://127.0.0.1:8080)
  --admin-token T      its admin token (default $PLINTH_ADMIN_TOKEN)
  --json               machine-readable output
  -h, --help

Exit codes: 0 done, 1 the platform refused, 2 usage, 3 no platform at --url.`

class UsageError extends Error {}

const DURATION = /^(\d+(?:\.\d+)?)(s|m|h|d)$/
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 }

export function parseDuration(text: string): number {
  const match = DURATION.exec(text)
  if (match === null) throw new UsageError(`"${text}" is not a duration: write 90s, 30m, 1h or 2d`)
  return Math.round(Number(match[1]) * (UNIT_SECONDS[match[2] as string] ?? 1))
}

async function run(argv: string[], out: (line: string) => void): Promise<number> {
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
          `app ${created.app_id} (${created.name})\n  server API key ${created.api_key}   (shown once)\n  wallet ${created.wallet.address}`,
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
        show(user, `user ${user.user_id} (${user.username})\n  wallet ${user.wallet.address}`)
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
      show(reset, `reset (${reset.seed}) in ${reset.took_ms} ms`)
      return EXIT.ok
    }
    case 'snapshot':
      if (sub === 'list') {
        const { snapshots } = await api.snapshots.list()
        show(snapshots, snapshots.map((s) => `${s.name}  ${s.created_at}`).join('\n') || '(no snapshots)')
        return EXIT.ok
      }
      if (sub === 'save') {
        const saved = await api.snapshots.save(need(rest[0], '<name>'), true)
        show(saved, `saved ${saved.name}`)
        return EXIT.ok
      }
      if (sub === 'restore') {
        const restored = await api.snapshots.restore(need(rest[0], '<name>'))
        show(restored, `restored ${restored.name} in ${restored.took_ms} ms`)
        return EXIT.ok
      }
      break
    case 'logs':
      if (sub === 'tail') return tail(api, app(), values.json, out)
      break
  }
  throw new UsageError(`unknown command: ${positionals.join(' ')}`)
}

async function tail(
  api: ReturnType<typeof createSandboxClient>,
  appId: string,
  json: boolean,
  out: (line: string) => void,
): Promise<number> {
  let stopped = false
  process.once('SIGINT', () => {
    stopped = true
  })
  // Start from the newest entry: only calls made from now on are printed.
  let after = (await api.requests.list(appId, { limit: 1 })).newest_cursor ?? undefined
  while (!stopped) {
    const page = await api.requests.list(appId, after === undefined ? { limit: 100 } : { after, limit: 100 })
    for (const entry of page.requests) {
      out(
        json
          ? JSON.stringify(entry)
          : `${entry.at}  ${entry.status}  ${entry.method} ${entry.path}  ${entry.latency_ms} ms${entry.error_code === null ? '' : `  ${entry.error_code}`}${entry.fault === null ? '' : '  [injected fault]'}`,
      )
    }
    if (page.next_cursor !== null) after = page.next_cursor
    if (page.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 500))
  }
  return EXIT.ok
}

async function start(values: Record<string, string | boolean | undefined>, adminToken: string | undefined): Promise<number> {
  const set = (name: string, value: string | boolean | undefined) => {
    if (typeof value === 'string') process.env[name] = value
  }
  set('PORT', values.port)
  set('HOST', values.host)
  set('PLINTH_DATA_DIR', values['data-dir'])
  set('DATABASE_URL', values['database-url'])
  set('PLINTH_MODE', values.mode)
  set('PLINTH_ADMIN_TOKEN', adminToken)
  const { loadConfig } = await import('../config.js')
  const { startServer } = await import('../start.js')
  const server = await startServer(loadConfig(), { seed: values.seed !== 'empty' })
  process.stdout.write(`plinth: listening on ${loadConfig().publicUrl} (${server.databaseKind}), ready in ${server.readyMs} ms\n`)
  await new Promise<void>((resolve) => {
    const stop = () => {
      server.close().then(resolve, resolve)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  return EXIT.ok
}

run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`plinth: ${(error as Error).message}\n(plinth --help lists the commands)\n`)
      process.exit(EXIT.usage)
    }
    if (error instanceof SandboxError) {
      process.stderr.write(`plinth: ${error.message} (${error.code}, ${error.status})\n`)
      process.exit(EXIT.refused)
    }
    // fetch refuses with TypeError('fetch failed') and the socket's error as its cause.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    if (error instanceof TypeError && cause !== undefined) {
      process.stderr.write(
        `plinth: no platform answers at that URL (${cause.code ?? cause.message}); start one with "plinth start" or pass --url\n`,
      )
      process.exit(EXIT.unreachable)
    }
    process.stderr.write(`plinth: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(EXIT.refused)
  },
)
