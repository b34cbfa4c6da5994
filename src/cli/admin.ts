import { userInfo } from 'node:os'
import { parseArgs } from 'node:util'
import { adminServiceFactory } from '../admin/admin-service.js'
import { type ChainCheck, formatAuditHead, parseAuditHead } from '../audit/audit-log.js'
import { createPlatformClock } from '../clock/clock.js'
import { clockRepo } from '../clock/clock-repo.js'
import { ConfigError, loadConfig } from '../config.js'
import { ApiError } from '../core/errors.js'
import { openDatabase } from '../db/database.js'
import { resolveSecretKey } from '../lib/secret-key.js'
import { readPasswordInput } from './password-input.js'

/** `plinth admin`: exit codes as the other commands' (0 done, 1 refused, 2 usage), and 3 when the database cannot be opened. */
export const ADMIN_EXIT = { ok: 0, refused: 1, usage: 2, noDatabase: 3 } as const

export const ADMIN_HELP = `plinth admin <command> [options]   (docs/production.md)

Talks to the platform's database directly: DATABASE_URL (or --database-url), else the embedded
database in PLINTH_DATA_DIR (or --data-dir; stop the server that uses it first). Wallet seeds are
sealed and the audit chain is keyed under PLINTH_SECRET_KEY (or the data directory's secret.key).
Every command that acts writes an audit record.

Commands
  create-operator <username>                     a user with the operator role; the password is read
                                                 from standard input (or asked for), never a flag
  users grant-developer <username>               give a user the developer role
  apps create --owner <username> --name <name> --url <url>
                                                 an app owned by a developer: prints its id, a server
                                                 API key, and its wallet's address and seed (once)
  wallets issue <username | app id> <amount> --reason <text>
                                                 issue new money into a wallet (a ledger transaction
                                                 from the platform's issuing account)
  ledger check                                   the supply three ways: issued = balances + fees = the audit
                                                 log's issue records; exit 1 and the one that differs if not
  audit [--limit N]                              the newest audit records, and whether the chain is whole
  audit verify [--head <id>:<mac>]               walk the whole chain: exit 0 when whole, 1 at the first
                                                 record edited, removed, inserted or not keyed; with
                                                 --head, also 1 when the chain no longer reaches that
                                                 record with that MAC (truncated or rewritten)
  audit head                                     the newest record's id and MAC (<id>:<mac>), to keep
                                                 outside the database (docs/operators.md)

Options
  --json                machine-readable output
  --database-url URL    a PostgreSQL server
  --data-dir DIR        the embedded database's directory
  -h, --help`

export class AdminUsageError extends Error {}

/** `audit verify`'s lines: the chain, then the head given, if one was. */
function describeCheck(checked: ChainCheck): string {
  const lines = [
    checked.broken_at === null
      ? `chain: whole (${checked.records} records)`
      : checked.problem === 'unkeyed'
        ? `chain: BROKEN at record ${checked.broken_at}: not keyed (${checked.records} records)`
        : `chain: BROKEN at record ${checked.broken_at} (${checked.records} records)`,
  ]
  if (checked.expected_head === 'reached') lines.push('head: reached')
  if (checked.expected_head === 'missing') lines.push('head: MISSING: the chain no longer reaches that record (truncated)')
  if (checked.expected_head === 'changed') lines.push('head: CHANGED: that record is there with another MAC (rewritten)')
  return lines.join('\n')
}

/** The password: standard input when it is not a terminal (its first line), else asked for twice without echo. */
async function readPassword(): Promise<string> {
  const [first = '', again = first] = await readPasswordInput(['Password: ', 'Again: '])
  if (again !== first) throw new AdminUsageError('the two passwords differ')
  return first
}

export async function runAdmin(argv: string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      'database-url': { type: 'string' },
      'data-dir': { type: 'string' },
      owner: { type: 'string' },
      name: { type: 'string' },
      url: { type: 'string' },
      reason: { type: 'string' },
      limit: { type: 'string' },
      head: { type: 'string' },
    },
  })
  if (values.help || positionals.length === 0) {
    out(ADMIN_HELP)
    return values.help ? ADMIN_EXIT.ok : ADMIN_EXIT.usage
  }
  const need = (value: string | undefined, what: string): string => {
    if (value === undefined || value === '') throw new AdminUsageError(`missing ${what}`)
    return value
  }
  const [command, sub, ...rest] = positionals
  // Checked before the database is opened: a usage error costs nothing.
  const commands: Record<string, () => void> = {
    'create-operator': () => need(sub, '<username>'),
    users: () => (sub === 'grant-developer' ? need(rest[0], '<username>') : need(undefined, 'grant-developer <username>')),
    apps: () => {
      if (sub !== 'create') throw new AdminUsageError('apps takes: create --owner <username> --name <name> --url <url>')
      need(values.owner, '--owner <username>')
      need(values.name, '--name <name>')
      need(values.url, '--url <url>')
    },
    wallets: () => {
      if (sub !== 'issue') throw new AdminUsageError('wallets takes: issue <username | app id> <amount> --reason <text>')
      need(rest[0], '<username | app id>')
      need(rest[1], '<amount>')
      need(values.reason, '--reason <text>')
    },
    ledger: () => {
      if (sub !== 'check') throw new AdminUsageError('ledger takes: check')
    },
    audit: () => {
      if (sub !== undefined && sub !== 'verify' && sub !== 'head')
        throw new AdminUsageError('audit takes: [verify [--head <id>:<mac>] | head] [--limit N]')
      if (values.limit !== undefined && !/^[1-9]\d{0,3}$/.test(values.limit)) throw new AdminUsageError('--limit takes 1 to 9999')
      if (values.head !== undefined && (sub !== 'verify' || parseAuditHead(values.head) === undefined)) {
        throw new AdminUsageError('--head takes <id>:<mac> as `plinth admin audit head` printed it, with audit verify')
      }
    },
  }
  const check = command === undefined ? undefined : commands[command]
  if (check === undefined) throw new AdminUsageError(`unknown admin command: ${positionals.join(' ')}`)
  check()
  const password = command === 'create-operator' ? await readPassword() : undefined

  const env = { ...process.env }
  if (values['database-url'] !== undefined) env.DATABASE_URL = values['database-url']
  if (values['data-dir'] !== undefined) env.PLINTH_DATA_DIR = values['data-dir']
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) throw new AdminUsageError(error.message)
    throw error
  }
  const secretKey = resolveSecretKey(config)
  let database: Awaited<ReturnType<typeof openDatabase>>
  try {
    database = await openDatabase({
      databaseUrl: config.databaseUrl,
      schema: config.databaseSchema,
      dataDir: config.dataDir,
      poolSize: 2,
    })
  } catch (error) {
    process.stderr.write(`plinth admin: cannot open the database: ${error instanceof Error ? error.message : String(error)}\n`)
    return ADMIN_EXIT.noDatabase
  }
  const clock = await createPlatformClock({ store: clockRepo(database.db) })
  let actor = 'cli'
  try {
    actor = `cli:${userInfo().username}`
  } catch {
    // No user name in this environment: "cli" alone.
  }
  const admin = adminServiceFactory({ db: database.db, clock, secretKey, publicUrl: config.publicUrl, actor })
  const show = (value: unknown, text: string) => out(values.json ? JSON.stringify(value) : text)
  try {
    // A chain written before migration 0021 is keyed by the first command or server start that holds the key.
    const rekeyed = await admin.rekeyAudit()
    if (rekeyed.kind === 'rekeyed') process.stderr.write(`plinth admin: the audit chain was re-keyed (${rekeyed.records} records)\n`)
    if (rekeyed.kind === 'refused') {
      process.stderr.write(
        `plinth admin: the audit chain was NOT re-keyed: it does not verify as it stands (record ${rekeyed.broken_at}, ${rekeyed.problem})\n`,
      )
    }
    switch (command) {
      case 'create-operator': {
        const created = await admin.createOperator(need(sub, '<username>'), password ?? '')
        show(created, `operator ${created.username} (${created.user_id})\n  wallet ${created.wallet_address}`)
        break
      }
      case 'users': {
        const granted = await admin.grant(need(rest[0], '<username>'), 'developer')
        show(granted, `${granted.username} ${granted.already ? 'was already' : 'is now'} a developer`)
        break
      }
      case 'apps': {
        const app = await admin.createApp({
          owner: need(values.owner, '--owner'),
          name: need(values.name, '--name'),
          url: need(values.url, '--url'),
        })
        show(
          app,
          `app ${app.app_id} (${app.name}), owned by ${app.owner}\n  url ${app.url}\n  server API key ${app.api_key}   (shown once)\n` +
            `  wallet ${app.wallet.address}\n  wallet seed ${app.wallet.seed}   (shown once)`,
        )
        break
      }
      case 'wallets': {
        const issued = await admin.issue({
          target: need(rest[0], 'target'),
          amount: need(rest[1], 'amount'),
          reason: need(values.reason, '--reason'),
        })
        show(
          issued,
          `issued ${issued.amount} Pi to ${issued.target} (${issued.address}) in ledger ${issued.ledger}\n  transaction ${issued.transaction}\n  balance ${issued.balance}`,
        )
        break
      }
      case 'ledger': {
        const books = await admin.ledgerCheck()
        const names = { issued: 'issued', balances_and_fees: 'balances + fees', audit: "the audit log's issues" }
        show(
          books,
          `issued ${books.total_issued} = balances ${books.total_balances} + fees ${books.total_fees} = audited issues ${books.total_audited}` +
            (books.total_faucet === '0.0000000' ? '' : ` (faucet ${books.total_faucet})`) +
            ': ' +
            (books.balanced ? 'balanced' : 'NOT BALANCED') +
            (books.differs.length === 0
              ? ''
              : ` (${books.differs.length === 3 ? 'no two agree' : `${names[books.differs[0] ?? 'issued']} differs`})`) +
            (books.negative_balances + books.mismatched_accounts === 0
              ? ''
              : ` (${books.negative_balances} negative balances, ${books.mismatched_accounts} accounts whose balance is not their history)`),
        )
        if (!books.balanced) return ADMIN_EXIT.refused
        break
      }
      case 'audit': {
        if (sub === 'head') {
          const head = await admin.auditHead()
          show(
            { head: head === null ? null : formatAuditHead(head), ...(head ?? {}) },
            head === null ? 'audit log: empty' : formatAuditHead(head),
          )
          break
        }
        if (sub === 'verify') {
          const expected = values.head === undefined ? undefined : parseAuditHead(values.head)
          const checked = await admin.verifyAudit(expected)
          show(checked, describeCheck(checked))
          if (checked.broken_at !== null || (checked.expected_head ?? 'reached') !== 'reached') return ADMIN_EXIT.refused
          break
        }
        const trail = await admin.auditTrail(Number(values.limit ?? 20))
        show(
          trail,
          [
            ...trail.records.map(
              (r) => `${r.id}  ${r.at.toISOString()}  ${r.actor}  ${r.action}  ${r.target ?? ''}  ${JSON.stringify(r.details)}`,
            ),
            trail.broken_at === null ? 'chain: whole' : `chain: BROKEN at record ${trail.broken_at}`,
          ].join('\n'),
        )
        if (trail.broken_at !== null) return ADMIN_EXIT.refused
        break
      }
    }
    return ADMIN_EXIT.ok
  } catch (error) {
    if (error instanceof ApiError) {
      if (values.json) out(JSON.stringify(error.toBody()))
      process.stderr.write(`plinth admin: ${error.message} (${error.code})\n`)
      return ADMIN_EXIT.refused
    }
    throw error
  } finally {
    clock.stop()
    await database.close()
  }
}
