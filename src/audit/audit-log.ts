import { type Kysely, sql } from 'kysely'
import type { DB } from '../db/schema.js'
import { sha256Hex } from '../lib/crypto.js'

/** The `prev_hash` of the first record. */
export const AUDIT_GENESIS = '0'.repeat(64)
/** Serialises appends (advisory lock class of Plinth's, object 3): each record chains to the last committed one. */
const AUDIT_LOCK = sql`pg_advisory_xact_lock(1347177550, 3)`

export interface AuditEntry {
  /** Who: `cli:<os user>` for a `plinth admin` command, `user:<id>` for an operator in the console. */
  actor: string
  /** What, as a verb: `create-operator`, `grant-developer`, `create-app`, `issue`. */
  action: string
  /** Whom or what it was done to (a username, an app id). */
  target: string | null
  /** The arguments and outcome, never a secret (a password, a key, a seed). */
  details: Record<string, unknown>
}

export interface AuditRecord extends AuditEntry {
  id: string
  at: Date
  prev_hash: string
  hash: string
}

/**
 * The hash of a record: SHA-256 over the previous record's hash and this record's fields, as
 * JSON in a fixed order. `at` (the database's time) enters as microseconds since the epoch, the
 * stored timestamptz exactly.
 */
export function auditHash(prevHash: string, record: AuditEntry & { id: string; atMicros: string }): string {
  return sha256Hex(
    JSON.stringify([prevHash, record.id, record.atMicros, record.actor, record.action, record.target, canonical(record.details)]),
  )
}

/** The same JSON whatever the order its object keys were written in (jsonb reorders them). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    )
  }
  return value
}

/**
 * The audit log (docs/operators.md, "Audit log"): appended in the caller's transaction, so a
 * record commits with what it records, or neither does.
 */
export function auditLog(db: Kysely<DB>) {
  return {
    /** Takes the log's lock in `trx` (append takes it too): a check of earlier records made after it holds until commit. */
    async lock(trx: Kysely<DB>): Promise<void> {
      if (!trx.isTransaction) throw new Error('the audit lock is taken inside a transaction')
      await sql`select ${AUDIT_LOCK}`.execute(trx)
    },

    async append(trx: Kysely<DB>, entry: AuditEntry): Promise<AuditRecord> {
      // now() is the transaction's start, the same in every statement of it: the time hashed is the time stored.
      if (!trx.isTransaction) throw new Error('an audit record is appended inside the transaction that does what it records')
      await sql`select ${AUDIT_LOCK}`.execute(trx)
      const last = await trx.selectFrom('audit_log').select('hash').orderBy('id', 'desc').limit(1).executeTakeFirst()
      const prevHash = last?.hash ?? AUDIT_GENESIS
      const { rows } = await sql<{ id: string; at: Date; at_micros: string }>`
        select nextval(pg_get_serial_sequence('audit_log', 'id'))::text as id, now() as at,
          (extract(epoch from now()) * 1000000)::bigint::text as at_micros`.execute(trx)
      const head = rows[0]
      if (head === undefined) throw new Error('no audit id')
      // As stored: what JSON makes of the details (a value's toJSON, undefined fields gone) is what is hashed.
      const details = JSON.parse(JSON.stringify(entry.details)) as Record<string, unknown>
      const hash = auditHash(prevHash, { ...entry, details, id: head.id, atMicros: head.at_micros })
      await trx
        .insertInto('audit_log')
        .values({
          id: head.id,
          at: sql<Date>`now()`,
          actor: entry.actor,
          action: entry.action,
          target: entry.target,
          details: JSON.stringify(details),
          prev_hash: prevHash,
          hash,
        })
        .execute()
      return { ...entry, details, id: head.id, at: head.at, prev_hash: prevHash, hash }
    },

    /** Newest first. */
    async list(limit: number): Promise<AuditRecord[]> {
      const rows = await db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(limit).execute()
      // bigserial: text on PostgreSQL, a number on PGlite; ids are text here as everywhere else.
      return rows.map((row) => ({ ...row, id: String(row.id) }))
    },

    /**
     * Walks the whole chain: answers the id of the first record whose hash or link is wrong (an
     * edit, a removal, an insertion), or undefined when the chain is whole.
     */
    async verify(): Promise<string | undefined> {
      const { rows } = await sql<{
        id: string
        at_micros: string
        actor: string
        action: string
        target: string | null
        details: Record<string, unknown>
        prev_hash: string
        hash: string
      }>`select id::text as id, (extract(epoch from at) * 1000000)::bigint::text as at_micros, actor, action, target, details,
            prev_hash, hash from audit_log order by audit_log.id`.execute(db)
      let prev = AUDIT_GENESIS
      for (const row of rows) {
        if (row.prev_hash !== prev || auditHash(prev, { ...row, atMicros: row.at_micros }) !== row.hash) return row.id
        prev = row.hash
      }
      return undefined
    },
  }
}
