import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { DB } from '../../src/db/schema.js'

/**
 * The money a refused issue must leave as it was (docs/operators.md, "Issuing money"): the sum of
 * balances, the supply funded, the ledger's transactions, the audit log's issue records (of both
 * networks), and the issuing account's balance on Pi Network, where operators issue.
 */
export async function supplySnapshot(db: Kysely<DB>) {
  const { rows } = await sql<{ balances: string; funded: string; transactions: string; issues: string; issuer: string | null }>`
    select (select coalesce(sum(balance), 0)::text from ledger_accounts) as balances,
      (select coalesce(sum(amount), 0)::text from ledger_fundings) as funded,
      (select count(*)::text from ledger_transactions) as transactions,
      (select count(*)::text from audit_log where action = 'issue') as issues,
      (select a.balance::text from ledger_accounts a join platform_meta m on m.key = 'issuer'
        where a.network = 'Pi Network' and a.address = (m.value::jsonb)->>'address') as issuer`.execute(db)
  return rows[0]
}

/** The issuing account's address (it exists once something was issued). */
export async function issuerAddress(db: Kysely<DB>): Promise<string> {
  const issuer = await db.selectFrom('platform_meta').select('value').where('key', '=', 'issuer').executeTakeFirstOrThrow()
  return (JSON.parse(issuer.value) as { address: string }).address
}
