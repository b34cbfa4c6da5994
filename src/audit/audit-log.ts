import { type Kysely, sql } from 'kysely'
import type { DB } from '../db/schema.js'
import { constantTimeEqual, hmacSha256Hex, sha256Hex, subkey } from '../lib/crypto.js'

/** The `prev_hash` of the first record. */
export const AUDIT_GENESIS = '0'.repeat(64)
/** Serialises appends (advisory lock class of Plinth's, object 3): each record chains to the last committed one. */
const AUDIT_LOCK = sql`pg_advisory_xact_lock(1347177550, 3)`
/** What `audit_log.mac_version` says of a record's `hash` (migration 0021). */
const UNKEYED = 0
const KEYED = 1
/** Records re-keyed per statement. */
const REKEY_BATCH = 500

/**
 * The chain's key: a subkey of PLINTH_SECRET_KEY bound to this one purpose. It is never stored in
 * the database, so whoever can only write the database cannot compute a record's MAC.
 */
export function auditChainKey(secretKey: Buffer): Buffer {
  return subkey(secretKey, 'plinth audit chain v1')
}

export interface AuditEntry {
  /** Who: `cli:<os user>` for a `plinth admin` command, `user:<id>` for a signed-in user, `platform` for the platform itself. */
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

/** The newest record's id and MAC: kept outside the database, it shows a truncation (`verify --head`). */
export interface AuditHead {
  id: string
  mac: string
}

/**
 * A walk of the chain. `broken_at` is the first record that does not verify, and `problem` says
 * why: `changed` (its MAC or its link to the one before is wrong: an edit, a removal or an
 * insertion at or before it), `unkeyed` (a SHA-256 record of before migration 0021 that was
 * never re-keyed, or one written after the chain was keyed). `expected_head`, when a head was
 * given: `reached` (that record is in the chain with that MAC), `missing` (the chain no longer
 * reaches it: truncated), `changed` (it is there with another MAC: rewritten).
 */
export interface ChainCheck {
  records: number
  broken_at: string | null
  problem: 'changed' | 'unkeyed' | null
  head: AuditHead | null
  expected_head?: 'reached' | 'missing' | 'changed'
}

/** `<id>:<mac>` as `plinth admin audit head` prints it; undefined when it is not one. */
export function parseAuditHead(text: string): AuditHead | undefined {
  const match = /^([1-9]\d{0,18}):([0-9a-f]{64})$/.exec(text.trim())
  return match?.[1] === undefined || match[2] === undefined ? undefined : { id: match[1], mac: match[2] }
}

export const formatAuditHead = (head: AuditHead): string => `${head.id}:${head.mac}`

interface Hashed extends AuditEntry {
  id: string
  atMicros: string
}

/** The fields a record's MAC covers: the previous record's, then this one's, as JSON in a fixed order. */
const hashInput = (prev: string, record: Hashed): string =>
  JSON.stringify([prev, record.id, record.atMicros, record.actor, record.action, record.target, canonical(record.details)])

/**
 * A record's MAC: HMAC-SHA-256 under the chain's key over the previous record's MAC and this
 * record's fields. `at` (the database's time) enters as microseconds since the epoch, the stored
 * timestamptz exactly.
 */
export function auditMac(key: Buffer, prevMac: string, record: Hashed): string {
  return hmacSha256Hex(key, hashInput(prevMac, record))
}

/** The hash records had before migration 0021: SHA-256 over the same input, which anyone can compute. */
function unkeyedHash(prevHash: string, record: Hashed): string {
  return sha256Hex(hashInput(prevHash, record))
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

interface StoredRow {
  id: string
  at_micros: string
  actor: string
  action: string
  target: string | null
  details: Record<string, unknown>
  prev_hash: string
  hash: string
  mac_version: number
}

const readChain = async (db: Kysely<DB>): Promise<StoredRow[]> =>
  (
    await sql<StoredRow>`select id::text as id, (extract(epoch from at) * 1000000)::bigint::text as at_micros, actor, action, target,
      details, prev_hash, hash, mac_version from audit_log order by audit_log.id`.execute(db)
  ).rows

const asHashed = (row: StoredRow): Hashed => ({ ...row, atMicros: row.at_micros })

/**
 * Walks stored rows from the first. Unkeyed rows verify by their SHA-256 only as a prefix (the log
 * as it was before the chain was keyed, awaiting its re-keying); one after a keyed row, or one
 * that records a re-keying (which only keyed code writes), is a problem. Every comparison is in
 * constant time.
 */
function walk(key: Buffer, rows: StoredRow[], expected?: AuditHead): ChainCheck & { unkeyed: number; onlyUnkeyed: boolean } {
  let prev = AUDIT_GENESIS
  let keyedSeen = false
  let unkeyedFrom: string | undefined
  let unkeyed = 0
  let found: 'reached' | 'changed' | undefined
  let broken: { at: string; problem: 'changed' | 'unkeyed' } | undefined
  for (const row of rows) {
    if (row.mac_version === UNKEYED) {
      if (keyedSeen || row.action === 'audit-rekey') {
        broken = { at: row.id, problem: 'unkeyed' }
        break
      }
      if (!constantTimeEqual(row.prev_hash, prev) || !constantTimeEqual(unkeyedHash(prev, asHashed(row)), row.hash)) {
        broken = { at: row.id, problem: 'changed' }
        break
      }
      unkeyedFrom ??= row.id
      unkeyed++
    } else {
      const macOk = row.mac_version === KEYED && constantTimeEqual(auditMac(key, prev, asHashed(row)), row.hash)
      if (!constantTimeEqual(row.prev_hash, prev) || !macOk) {
        broken = { at: row.id, problem: 'changed' }
        break
      }
      keyedSeen = true
    }
    if (expected !== undefined && row.id === expected.id) found = constantTimeEqual(row.hash, expected.mac) ? 'reached' : 'changed'
    prev = row.hash
  }
  // Whole but for an unkeyed prefix: what re-keying may key.
  const onlyUnkeyed = broken === undefined && unkeyedFrom !== undefined
  if (broken === undefined && unkeyedFrom !== undefined) broken = { at: unkeyedFrom, problem: 'unkeyed' }
  const last = rows[rows.length - 1]
  return {
    records: rows.length,
    broken_at: broken?.at ?? null,
    problem: broken?.problem ?? null,
    head: last === undefined ? null : { id: last.id, mac: last.hash },
    ...(expected === undefined ? {} : { expected_head: found ?? 'missing' }),
    unkeyed,
    onlyUnkeyed,
  }
}

/** What re-keying at start-up did: nothing to do, the records it re-keyed, or why it would not. */
export type RekeyOutcome =
  | { kind: 'keyed' }
  | { kind: 'rekeyed'; records: number; audit_id: string }
  | { kind: 'refused'; broken_at: string; problem: 'changed' | 'unkeyed' }

/**
 * The audit log (docs/operators.md, "Audit log"): appended in the caller's transaction, so a
 * record commits with what it records, or neither does. `key` is auditChainKey(PLINTH_SECRET_KEY).
 */
export function auditLog(db: Kysely<DB>, key: Buffer) {
  const append = async (trx: Kysely<DB>, entry: AuditEntry): Promise<AuditRecord> => {
    // now() is the transaction's start, the same in every statement of it: the time MACed is the time stored.
    if (!trx.isTransaction) throw new Error('an audit record is appended inside the transaction that does what it records')
    await sql`select ${AUDIT_LOCK}`.execute(trx)
    const last = await trx.selectFrom('audit_log').select('hash').orderBy('id', 'desc').limit(1).executeTakeFirst()
    const prevHash = last?.hash ?? AUDIT_GENESIS
    const { rows } = await sql<{ id: string; at: Date; at_micros: string }>`
      select nextval(pg_get_serial_sequence('audit_log', 'id'))::text as id, now() as at,
        (extract(epoch from now()) * 1000000)::bigint::text as at_micros`.execute(trx)
    const head = rows[0]
    if (head === undefined) throw new Error('no audit id')
    // As stored: what JSON makes of the details (a value's toJSON, undefined fields gone) is what is MACed.
    const details = JSON.parse(JSON.stringify(entry.details)) as Record<string, unknown>
    const hash = auditMac(key, prevHash, { ...entry, details, id: head.id, atMicros: head.at_micros })
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
        mac_version: KEYED,
      })
      .execute()
    return { ...entry, details, id: head.id, at: head.at, prev_hash: prevHash, hash }
  }

  return {
    /** Takes the log's lock in `trx` (append takes it too): a check of earlier records made after it holds until commit. */
    async lock(trx: Kysely<DB>): Promise<void> {
      if (!trx.isTransaction) throw new Error('the audit lock is taken inside a transaction')
      await sql`select ${AUDIT_LOCK}`.execute(trx)
    },

    append,

    /** Newest first. */
    async list(limit: number): Promise<AuditRecord[]> {
      const rows = await db
        .selectFrom('audit_log')
        .select(['id', 'at', 'actor', 'action', 'target', 'details', 'prev_hash', 'hash'])
        .orderBy('id', 'desc')
        .limit(limit)
        .execute()
      // bigserial: text on PostgreSQL, a number on PGlite; ids are text here as everywhere else.
      return rows.map((row) => ({ ...row, id: String(row.id) }))
    },

    /** The newest record's id and MAC, or null for an empty log. */
    async head(): Promise<AuditHead | null> {
      const last = await db.selectFrom('audit_log').select(['id', 'hash']).orderBy('id', 'desc').limit(1).executeTakeFirst()
      return last === undefined ? null : { id: String(last.id), mac: last.hash }
    },

    /** Walks the whole chain (ChainCheck); with `expected`, also whether it still reaches that head. */
    async verify(expected?: AuditHead): Promise<ChainCheck> {
      const { unkeyed: _unkeyed, onlyUnkeyed: _only, ...check } = walk(key, await readChain(db), expected)
      return check
    },

    /**
     * Keys the records written before migration 0021 (SHA-256 only), once, at start-up: under the
     * log's lock, the whole chain is verified as it stands (the unkeyed prefix by its SHA-256, any
     * keyed record after it by its MAC); only if it is whole is every record given its MAC from the
     * first, and an `audit-rekey` record says so, in the same transaction. A chain that does not
     * verify is left exactly as it is (its break stays visible to `verify`): re-keying it would
     * launder the break.
     */
    async rekey(actor: string): Promise<RekeyOutcome> {
      const pending = await db.selectFrom('audit_log').select('id').where('mac_version', '=', UNKEYED).limit(1).executeTakeFirst()
      if (pending === undefined) return { kind: 'keyed' }
      return db.transaction().execute(async (trx): Promise<RekeyOutcome> => {
        await sql`select ${AUDIT_LOCK}`.execute(trx)
        const rows = await readChain(trx)
        const checked = walk(key, rows)
        if (checked.unkeyed === 0) return { kind: 'keyed' }
        if (!checked.onlyUnkeyed) {
          return { kind: 'refused', broken_at: checked.broken_at ?? '', problem: checked.problem ?? 'changed' }
        }
        let prev = AUDIT_GENESIS
        const macs = rows.map((row) => {
          const mac = auditMac(key, prev, asHashed(row))
          const link = prev
          prev = mac
          return { id: row.id, prev: link, mac }
        })
        for (let start = 0; start < macs.length; start += REKEY_BATCH) {
          const batch = macs.slice(start, start + REKEY_BATCH)
          await sql`update audit_log a set prev_hash = v.prev, hash = v.mac, mac_version = ${KEYED}
            from unnest(${batch.map((m) => m.id)}::bigint[], ${batch.map((m) => m.prev)}::text[], ${batch.map((m) => m.mac)}::text[])
              as v(id, prev, mac)
            where a.id = v.id`.execute(trx)
        }
        const last = rows[rows.length - 1]
        const record = await append(trx, {
          actor,
          action: 'audit-rekey',
          target: null,
          details: { records: checked.unkeyed, last_unkeyed_id: last?.id ?? null, last_unkeyed_hash: last?.hash ?? null },
        })
        return { kind: 'rekeyed', records: checked.unkeyed, audit_id: record.id }
      })
    },
  }
}
