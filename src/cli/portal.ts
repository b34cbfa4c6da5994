import { parseArgs } from 'node:util'
import { readPasswordInput } from './password-input.js'

/**
 * `plinth portal`: the developer portal from a terminal or a CI job (docs/portal.md, "The portal
 * from the command line"), over the /portal API with a personal access token. Exit codes as the
 * other commands': 0 done, 1 the server refused (its code and message on standard error), 2 usage
 * (no token included), 3 no server at the URL.
 */
export const PORTAL_EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const

export const PORTAL_HELP = `plinth portal <command> [options]   (docs/portal.md)

Talks to a production platform's /portal API as the account of a personal access token:
PLINTH_TOKEN (make one in the portal's Account page, or with login --username below).

Commands
  login                                  check PLINTH_TOKEN: prints the account it acts as and its scope
  login --username <name> [--token-name N] [--scope read|write] [--days 1-365]
                                         sign in with the password read from standard input (its
                                         first line; typed without echo at a terminal), make a
                                         token (default: write, 30 days) and print it, shown once
  apps list                              the apps you own or are a member of
  apps create <name> --app-url URL [--network "Pi Network"|"Pi Testnet"] [--description D]
                                         register an app: prints its id, validation key, first
                                         server API key and wallet seed (both shown once)
  keys create --app <id> [--name N]      a new server API key (shown once)
  keys revoke --app <id> <key-id>
  members add --app <id> <username>      add a developer as a member of the app
  payments list --app <id> [--state S] [--q TEXT] [--limit 1-200] [--before CURSOR]
                                         the app's payments, newest first
  payments export --app <id> --format csv|json [--state S] [--q TEXT] [--limit 1-10000]
                                         the app's payments as a file on standard output (the
                                         newest 10,000 at most; --limit fewer)

Options
  --url URL     the platform (default $PLINTH_URL or http://127.0.0.1:8080)
  --json        machine-readable output: one JSON value (a list is a JSON array)
  -h, --help

Exit codes: 0 done, 1 the server refused (its error code and message on standard error),
2 usage (a missing option or PLINTH_TOKEN), 3 no server answers at the URL.`

class PortalUsageError extends Error {}

/** An answer of the server other than 2xx: its `{error, error_message}`. */
class Refused extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message)
  }
}

type Json = Record<string, unknown>
interface App {
  app_id: string
  name: string
  role: string
  verified: boolean
}
interface Payment {
  identifier: string
  amount: number
  state: string
  memo: string
  created_at: string
}

function portalClient(baseUrl: string, token: string | undefined) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(new URL(path, baseUrl), {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.text()
    let parsed: Json = {}
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Json)
    } catch {
      parsed = { error: 'unknown_error', error_message: text.slice(0, 200) }
    }
    if (!response.ok) {
      throw new Refused(String(parsed.error ?? 'unknown_error'), String(parsed.error_message ?? response.statusText), response.status)
    }
    return { body: parsed, response, text }
  }
  return call
}

/** Signs in with a password, makes a token with the session, and ends the session: the token is what remains. */
async function tokenFromPassword(baseUrl: string, values: Record<string, string | boolean | undefined>): Promise<Json> {
  const username = String(values.username)
  const scope = values.scope ?? 'write'
  if (scope !== 'read' && scope !== 'write') throw new PortalUsageError(`--scope takes read or write, got "${String(scope)}"`)
  const days = values.days ?? '30'
  if (typeof days !== 'string' || !/^\d{1,3}$/.test(days)) throw new PortalUsageError(`--days takes 1 to 365, got "${String(days)}"`)
  const [password = ''] = await readPasswordInput(['Password: '])
  if (password === '') throw new PortalUsageError('no password on standard input')
  const call = portalClient(baseUrl, undefined)
  const signedIn = await call('POST', '/account/signin', { username, password })
  const cookie = signedIn.response.headers
    .getSetCookie()
    .map((line) => line.split(';', 1)[0] ?? '')
    .find((pair) => pair.startsWith('__Host-plinth_session='))
  if (cookie === undefined) throw new Refused('session_required', 'the server set no session cookie', signedIn.response.status)
  try {
    const name = typeof values['token-name'] === 'string' ? values['token-name'] : 'plinth CLI'
    const made = await call('POST', '/account/tokens', { name, scope, expires_in_days: Number(days) }, { cookie })
    return made.body
  } finally {
    await call('POST', '/account/signout', {}, { cookie }).catch(() => undefined)
  }
}

async function portalCommand(argv: string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      app: { type: 'string' },
      'app-url': { type: 'string' },
      network: { type: 'string' },
      description: { type: 'string' },
      name: { type: 'string' },
      username: { type: 'string' },
      'token-name': { type: 'string' },
      scope: { type: 'string' },
      days: { type: 'string' },
      state: { type: 'string' },
      q: { type: 'string' },
      limit: { type: 'string' },
      before: { type: 'string' },
      format: { type: 'string' },
    },
  })
  if (values.help || positionals.length === 0) {
    out(PORTAL_HELP)
    return positionals.length === 0 && !values.help ? PORTAL_EXIT.usage : PORTAL_EXIT.ok
  }
  const baseUrl = values.url ?? process.env.PLINTH_URL ?? 'http://127.0.0.1:8080'
  const show = (value: unknown, text: string) => out(values.json ? JSON.stringify(value) : text)
  const need = (value: string | undefined, what: string): string => {
    if (value === undefined || value === '') throw new PortalUsageError(`missing ${what}`)
    return value
  }
  const [command, sub, ...rest] = positionals

  if (command === 'login' && values.username !== undefined) {
    const made = await tokenFromPassword(baseUrl, values)
    show(
      made,
      `token ${String(made.token)}   (shown once)\n  ${String(made.scope)}, expires ${String(made.expires_at)}\n  export PLINTH_TOKEN=<the token> to use it`,
    )
    return PORTAL_EXIT.ok
  }
  const token = process.env.PLINTH_TOKEN
  if (token === undefined || token === '') {
    throw new PortalUsageError('set PLINTH_TOKEN to a personal access token (plinth portal login --username <name> makes one)')
  }
  const call = portalClient(baseUrl, token)
  const app = () => encodeURIComponent(need(values.app, '--app <app id>'))

  switch (`${command ?? ''} ${sub ?? ''}`.trim()) {
    case 'login': {
      const { body } = await call('GET', '/portal/me')
      const grant = body.token as { scope?: string } | null
      show(body, `${String(body.username)} (${(body.roles as string[]).join(', ') || 'no role'}), token scope ${grant?.scope ?? 'none'}`)
      return PORTAL_EXIT.ok
    }
    case 'apps list': {
      const apps = (await call('GET', '/portal/apps')).body.apps as App[]
      show(apps, apps.map((a) => `${a.app_id}  ${a.name}  (${a.role}${a.verified ? ', verified' : ''})`).join('\n') || '(no apps)')
      return PORTAL_EXIT.ok
    }
    case 'apps create': {
      const body: Json = { name: need(rest[0], '<name>'), url: need(values['app-url'], '--app-url <url>') }
      if (values.network !== undefined) body.network = values.network
      if (values.description !== undefined) body.description = values.description
      const made = (await call('POST', '/portal/apps', body)).body
      const created = made.app as App & { validation_key: string | null }
      show(
        made,
        `app ${created.app_id} (${created.name})\n  validation key ${created.validation_key ?? '-'}   (publish it at <app origin>/validation-key.txt)\n` +
          `  server API key ${String(made.api_key)}   (shown once)\n  wallet seed ${String(made.wallet_seed)}   (shown once)`,
      )
      return PORTAL_EXIT.ok
    }
    case 'keys create': {
      const made = (await call('POST', `/portal/apps/${app()}/keys`, values.name === undefined ? {} : { name: values.name })).body
      show(made, `key ${String(made.key_id)}\n  server API key ${String(made.api_key)}   (shown once)`)
      return PORTAL_EXIT.ok
    }
    case 'keys revoke': {
      const keyId = need(rest[0], '<key-id>')
      const done = (await call('DELETE', `/portal/apps/${app()}/keys/${encodeURIComponent(keyId)}`)).body
      show(done, `revoked ${keyId}`)
      return PORTAL_EXIT.ok
    }
    case 'members add': {
      const added = (await call('POST', `/portal/apps/${app()}/members`, { username: need(rest[0], '<username>') })).body
      show(added, `${String(added.username)} is a member`)
      return PORTAL_EXIT.ok
    }
    case 'payments list': {
      const query = new URLSearchParams()
      for (const name of ['state', 'q', 'limit', 'before'] as const) {
        const value = values[name]
        if (value !== undefined) query.set(name, value)
      }
      const page = (await call('GET', `/portal/apps/${app()}/payments${query.size === 0 ? '' : `?${query}`}`)).body
      const payments = page.payments as Payment[]
      const lines = payments.map((p) => `${p.identifier}  ${p.state}  ${p.amount}  ${p.created_at}  ${p.memo}`)
      if (page.next_cursor !== null) lines.push(`(more: --before ${String(page.next_cursor)})`)
      show(payments, lines.join('\n') || '(no payments)')
      return PORTAL_EXIT.ok
    }
    case 'payments export': {
      const format = need(values.format, '--format csv|json')
      if (format !== 'csv' && format !== 'json') throw new PortalUsageError(`--format takes csv or json, got "${format}"`)
      const query = new URLSearchParams({ format })
      for (const name of ['state', 'q', 'limit'] as const) {
        const value = values[name]
        if (value !== undefined) query.set(name, value)
      }
      const { text, response } = await call('GET', `/portal/apps/${app()}/payments/export?${query}`)
      // The file as the server wrote it; whether older payments were left out goes to standard error.
      process.stdout.write(text)
      if (response.headers.get('x-plinth-export-truncated') === 'true') {
        process.stderr.write('plinth portal: the export holds the newest payments only (more match: narrow it with --state or --q)\n')
      }
      return PORTAL_EXIT.ok
    }
  }
  throw new PortalUsageError(`unknown command: portal ${positionals.join(' ')}`)
}

/** Runs `plinth portal …` and answers its exit code; its errors are one line on standard error. */
export async function runPortal(argv: string[], out: (line: string) => void): Promise<number> {
  const fail = (code: number, line: string) => {
    process.stderr.write(`plinth portal: ${line.replace(/\s*\n\s*/g, ' ')}\n`)
    return code
  }
  try {
    return await portalCommand(argv, out)
  } catch (error) {
    if (error instanceof Refused) return fail(PORTAL_EXIT.refused, `${error.message} (${error.code}, ${error.status})`)
    if (error instanceof PortalUsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      return fail(PORTAL_EXIT.usage, `${(error as Error).message} (plinth portal --help lists the commands)`)
    }
    // fetch refuses with TypeError('fetch failed') and the socket's error as its cause.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    if (error instanceof TypeError && cause !== undefined) {
      return fail(PORTAL_EXIT.unreachable, `no platform answers at that URL (${cause.code ?? cause.message}); pass --url or set PLINTH_URL`)
    }
    throw error
  }
}
