import type { SqlAccess } from '../../helpers/server-process.js'
import type { Problems } from './client.js'

/** SQL invariants, against the database itself once the run is over. */

export interface SqlCheck {
  name: string
  /** Rows that break the invariant; the check passes when it answers none. */
  sql: string
}

export const SQL_CHECKS: SqlCheck[] = [
  {
    name: 'no payment is left incomplete (neither completed nor cancelled)',
    sql: `select identifier from payments where not developer_completed and not cancelled and not user_cancelled`,
  },
  {
    name: 'every completed payment has a verified transaction on the ledger',
    sql: `select p.identifier from payments p left join ledger_transactions t on t.hash = p.txid
          where p.developer_completed and (p.txid is null or p.tx_verified is not true or t.hash is null)`,
  },
  {
    name: "the verified transaction pays exactly the payment's amount from payer to payee, in one operation",
    sql: `select p.identifier from payments p
          where p.tx_verified and not exists (
            select 1 from ledger_transactions t join ledger_operations o on o.transaction_hash = t.hash
            where t.hash = p.txid and t.operation_count = 1 and o."from" = p.from_address and o."to" = p.to_address and o.amount = p.amount)`,
  },
  {
    name: 'no payment is cancelled with its transaction verified (the money moved for it: it must be completable)',
    sql: `select identifier from payments where (cancelled or user_cancelled) and txid is not null and tx_verified`,
  },
  {
    name: 'no transaction is linked to two payments',
    sql: `select txid from payments where txid is not null group by txid having count(*) > 1`,
  },
  {
    name: "a linked transaction is the payer's and carries the payment's identifier",
    sql: `select p.identifier from payments p join ledger_transactions t on t.hash = p.txid
          where t.memo is distinct from p.identifier or t.source_account <> p.from_address`,
  },
  {
    name: "no payer's transaction for an open-at-the-time payment went unlinked (a link commits with its transaction)",
    sql: `select p.identifier from payments p where p.txid is null and exists (
            select 1 from ledger_transactions t where t.memo_type = 'text' and t.memo = p.identifier and t.source_account = p.from_address
              and (p.cancelled_at is null or t.created_at < p.cancelled_at))`,
  },
  {
    name: 'no negative balance',
    sql: `select address from ledger_accounts where balance < 0`,
  },
  {
    name: 'total supply = total funded - total fees',
    sql: `select 1 where (select coalesce(sum(balance), 0) from ledger_accounts)
            <> (select coalesce(sum(amount), 0) from ledger_fundings) - (select coalesce(sum(fee_charged), 0) from ledger_transactions) / 10000000.0`,
  },
  {
    name: 'every account balance = fundings + received - sent - fees, on its network',
    sql: `select a.address, a.network from ledger_accounts a where a.balance <>
              coalesce((select sum(f.amount) from ledger_fundings f where f.address = a.address and f.network = a.network), 0)
            + coalesce((select sum(o.amount) from ledger_operations o where o."to" = a.address and o.network = a.network), 0)
            - coalesce((select sum(o.amount) from ledger_operations o where o."from" = a.address and o.network = a.network), 0)
            - coalesce((select sum(t.fee_charged) from ledger_transactions t where t.source_account = a.address and t.network = a.network), 0) / 10000000.0`,
  },
  {
    name: 'every ledger transaction has its operations',
    sql: `select t.hash from ledger_transactions t where t.operation_count <> (select count(*) from ledger_operations o where o.transaction_hash = t.hash)`,
  },
]

/** Runs every SQL check against the stopped platform's database; answers how many passed, each broken one added to `problems`. */
export async function runSqlChecks(sql: Pick<SqlAccess, 'query'>, problems: Problems): Promise<number> {
  let passed = 0
  for (const check of SQL_CHECKS) {
    const rows = await sql.query<Record<string, unknown>>(check.sql)
    if (rows.length === 0) passed += 1
    else problems.add(`SQL invariant "${check.name}" broken by ${rows.length} rows: ${JSON.stringify(rows.slice(0, 5))}`)
  }
  return passed
}
