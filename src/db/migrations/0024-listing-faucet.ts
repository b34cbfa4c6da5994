import { type Kysely, sql } from 'kysely'

/**
 * Mainnet listing and the faucet (docs/portal.md, "Listing"; docs/ledger.md, "Friendbot"):
 *
 * - `apps.listing`: a Mainnet ("Pi Network") app of production waits for an operator's review
 *   before it is in the directory and before anyone but its members pays it or is paid by it:
 *   `pending`, `approved` or `rejected` (with `listing_reason`, the operator's); null where
 *   listing does not apply (a Testnet app, a sandbox app). `listing_changed_at`: the queue's order.
 *   The Mainnet apps that exist already were open to everyone: they stay so (`approved`).
 * - `audit_log_faucet`: the faucet's daily limits count the last 24 hours of its records.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table apps
      add column listing text check (listing in ('pending', 'approved', 'rejected')),
      add column listing_reason text,
      add column listing_changed_at timestamptz`.execute(db)
  await sql`update apps set listing = 'approved', listing_changed_at = now() where network = 'Pi Network'`.execute(db)
  await sql`create index apps_listing_pending on apps (listing_changed_at, id) where listing = 'pending'`.execute(db)
  await sql`create index audit_log_faucet on audit_log (at) where action = 'faucet'`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index audit_log_faucet`.execute(db)
  await sql`drop index apps_listing_pending`.execute(db)
  await sql`alter table apps drop column listing, drop column listing_reason, drop column listing_changed_at`.execute(db)
}
