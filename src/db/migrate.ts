import { type Kysely, type Migration, type MigrationResultSet, Migrator } from 'kysely'
import * as identity from './migrations/0001-identity.js'
import * as ledger from './migrations/0002-ledger.js'
import * as payments from './migrations/0003-payments.js'
import * as adsNotifications from './migrations/0004-ads-notifications.js'
import * as appUrls from './migrations/0005-app-urls.js'
import * as credentialEvents from './migrations/0006-credential-events.js'
import * as notificationQuotaState from './migrations/0007-notification-quota-state.js'
import * as credentialEventsXid from './migrations/0008-credential-events-xid.js'
import * as clockEpoch from './migrations/0009-clock-epoch.js'
import * as requestLog from './migrations/0010-request-log.js'
import * as paymentEvents from './migrations/0011-payment-events.js'
import * as sandboxState from './migrations/0012-sandbox-state.js'
import * as ledgerHorizon from './migrations/0013-ledger-horizon.js'
import * as ledgerCloseAtCommit from './migrations/0014-ledger-close-at-commit.js'
import * as ledgerCloseTime from './migrations/0015-ledger-close-time.js'
import * as accounts from './migrations/0016-accounts.js'
import * as portal from './migrations/0017-portal.js'
import * as requestLogDetails from './migrations/0018-request-log-details.js'
import * as ledgerBatches from './migrations/0019-ledger-batches.js'
import * as operatorApprovals from './migrations/0020-operator-approvals.js'
import * as auditChainKeyed from './migrations/0021-audit-chain-keyed.js'
import * as reauthentication from './migrations/0022-reauthentication.js'
import * as listingFaucet from './migrations/0024-listing-faucet.js'
import * as personalTokens from './migrations/0025-personal-tokens.js'
import * as supportLookup from './migrations/0027-support-lookup.js'
import * as apiKeyPrefix from './migrations/0028-api-key-prefix.js'
import * as ledgerNetworks from './migrations/0029-ledger-networks.js'
import * as requestLogNoRequestIdIndex from './migrations/0030-request-log-no-request-id-index.js'
import { analyzeTables } from './statistics.js'

/** Ordered migrations. A new migration is a new file here, never an edit of an applied one. */
const MIGRATIONS: Record<string, Migration> = {
  '0001-identity': identity,
  '0002-ledger': ledger,
  '0003-payments': payments,
  '0004-ads-notifications': adsNotifications,
  '0005-app-urls': appUrls,
  '0006-credential-events': credentialEvents,
  '0007-notification-quota-state': notificationQuotaState,
  '0008-credential-events-xid': credentialEventsXid,
  '0009-clock-epoch': clockEpoch,
  '0010-request-log': requestLog,
  '0011-payment-events': paymentEvents,
  '0012-sandbox-state': sandboxState,
  '0013-ledger-horizon': ledgerHorizon,
  '0014-ledger-close-at-commit': ledgerCloseAtCommit,
  '0015-ledger-close-time': ledgerCloseTime,
  '0016-accounts': accounts,
  '0017-portal': portal,
  '0018-request-log-details': requestLogDetails,
  '0019-ledger-batches': ledgerBatches,
  '0020-operator-approvals': operatorApprovals,
  '0021-audit-chain-keyed': auditChainKeyed,
  '0022-reauthentication': reauthentication,
  '0024-listing-faucet': listingFaucet,
  '0025-personal-tokens': personalTokens,
  '0027-support-lookup': supportLookup,
  '0028-api-key-prefix': apiKeyPrefix,
  '0029-ledger-networks': ledgerNetworks,
  '0030-request-log-no-request-id-index': requestLogNoRequestIdIndex,
}

/**
 * Brings the schema up to date, then gives the planner statistics (src/db/statistics.ts): every
 * table holding rows is analyzed when a migration ran, else those that grew since their last ANALYZE. Safe to run
 * from several processes at once: Kysely holds an advisory lock while it migrates.
 */
export async function migrateToLatest(db: Kysely<unknown>, schema: string | undefined): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  const result = await migrating(() => migrator.migrateToLatest())
  await analyzeTables(db, (result.results ?? []).length > 0 ? 'all' : 'grown')
  return result
}

/**
 * Runs a migrator's step (to the latest, or to a named migration), again while it fails only
 * because another user of the server dropped a schema or table under Kysely's introspection
 * (`droppedUnderIntrospection`); throws any other failure.
 */
export async function migrating(step: () => Promise<MigrationResultSet>): Promise<MigrationResultSet> {
  for (let attempt = 1; ; attempt++) {
    const result = await step()
    if (result.error === undefined) return result
    if (attempt < INTROSPECTION_ATTEMPTS && droppedUnderIntrospection(result.error)) continue
    throw result.error instanceof Error ? result.error : new Error(String(result.error))
  }
}

/**
 * Kysely's migrator introspects every schema of the database to find its own tables, so a schema
 * (3F000 invalid_schema_name) or a table (42P01 undefined_table) that another user of the same
 * PostgreSQL server drops at that moment fails it. The failed attempt changed nothing (it rolled
 * back), and once the object is gone another attempt succeeds.
 */
const INTROSPECTION_ATTEMPTS = 5
function droppedUnderIntrospection(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code
  // 42703 undefined_column: a table whose columns another user of the server altered or dropped
  // while it was read (seen in CI: another test run's schema dropped under the introspection).
  return code === '3F000' || code === '42P01' || code === '42703'
}
