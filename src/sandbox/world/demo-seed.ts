import type { Kysely } from 'kysely'
import { appsServiceFactory } from '../../apps/apps-service.js'
import type { Clock } from '../../clock/clock.js'
import type { DB } from '../../db/schema.js'
import { inTransaction } from '../../db/transaction.js'
import { identityServiceFactory } from '../../identity/identity-service.js'
import { networkLedgers } from '../../ledger/network-ledgers.js'
import { ledgerWallets } from '../../ledger/wallets.js'
import { decryptSecret, encryptSecret } from '../../lib/crypto.js'

export interface DemoInfo {
  appId: string
  appName: string
  userId: string
  username: string
  /** Present only on the start that created the demo: keys are shown once. */
  apiKey?: string
  /**
   * The demo app wallet's seed, sealed under PLINTH_SECRET_KEY (stored in the demo's record only):
   * a sandbox fixture the developer plays the platform for, which `GET /sandbox/demo` answers so
   * that A2U fixtures can sign for it (docs/testing.md). Absent for a demo made before it was kept.
   */
  appWalletSeedSealed?: string
}

const demoSeedContext = (appId: string) => `demo-app-wallet:${appId}`

/** The demo app wallet's seed from its record, or null when the record keeps none. */
export function openDemoAppSeed(secretKey: Buffer, info: DemoInfo): string | null {
  return info.appWalletSeedSealed === undefined ? null : decryptSecret(secretKey, info.appWalletSeedSealed, demoSeedContext(info.appId))
}

const DEMO_KEY = 'demo'

/**
 * Creates the demo app and demo user on the platform's first start, all or nothing. Later
 * starts (and other processes starting at the same time) find the record and create nothing.
 * A sandbox reset calls it inside its own transaction (world-service.ts).
 */
export async function seedDemo(db: Kysely<DB>, deps: { clock: Clock; secretKey: Buffer }): Promise<DemoInfo> {
  return inTransaction(db, async (trx) => {
    const claimed = await trx
      .insertInto('platform_meta')
      .values({ key: DEMO_KEY, value: '' })
      .onConflict((oc) => oc.column('key').doNothing())
      .returning('key')
      .executeTakeFirst()
    if (claimed === undefined) {
      const row = await trx.selectFrom('platform_meta').select('value').where('key', '=', DEMO_KEY).executeTakeFirstOrThrow()
      return JSON.parse(row.value) as DemoInfo
    }

    const wallets = ledgerWallets(networkLedgers({ db: trx, clock: deps.clock }))
    const apps = appsServiceFactory({ db: trx, clock: deps.clock, wallets })
    const identity = identityServiceFactory({
      db: trx,
      clock: deps.clock,
      secretKey: deps.secretKey,
      defaultTokenTtlSeconds: 3600,
      wallets,
    })
    const app = await apps.createApp({ name: 'Plinth Demo', network: 'Pi Testnet' })
    const user = await identity.createUser('demo_pioneer')
    const info: DemoInfo = {
      appId: app.app.id,
      appName: app.app.name,
      userId: user.userId,
      username: user.username,
      appWalletSeedSealed: encryptSecret(deps.secretKey, app.wallet.seed, demoSeedContext(app.app.id)),
    }
    await trx
      .updateTable('platform_meta')
      .set({ value: JSON.stringify(info) })
      .where('key', '=', DEMO_KEY)
      .execute()
    return { ...info, apiKey: app.apiKey }
  })
}
