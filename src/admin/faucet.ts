import { StrKey } from '@stellar/stellar-base'
import { type Kysely, sql } from 'kysely'
import type { Clock } from '../clock/clock.js'
import type { FaucetSettings } from '../config.js'
import { ApiError } from '../core/errors.js'
import type { DB } from '../db/schema.js'
import { formatAmount } from '../ledger/amounts.js'
import { ledgerServiceFactory } from '../ledger/ledger-service.js'
import type { SubmittedTransaction } from '../ledger/ledger-types.js'
import { TESTNET } from '../ledger/networks.js'
import { type IssueNetwork, issueStroops, issuingFactory } from './issuing.js'

/** The network the faucet pays on: test-π only. */
const FAUCET_NETWORK = TESTNET
const FAUCET_MEMO = 'faucet'

export interface FaucetRequest {
  /** The network asked for: anything but Pi Testnet is refused (403 faucet_not_on_network). */
  network: IssueNetwork
  address: string
  /** The signed-in user who asked (the platform page), counted against the per-user limit. */
  userId?: string | undefined
  requestId?: string | undefined
}

export interface FaucetGrant {
  address: string
  amount: string
  transaction: SubmittedTransaction
  audit_id: string
}

/**
 * The faucet (docs/ledger.md, "Friendbot"): pays PLINTH_FAUCET_AMOUNT test-π to an address on Pi
 * Testnet as an issue (issuing.ts's one atomic act: minted, paid and recorded as a `faucet` audit
 * record in the transaction that closes the ledger, or nothing). With `limited` (production), the
 * daily limits per address and per signed-in user are counted from those records under the audit
 * log's lock, in that same transaction: requests racing on any number of processes cannot pass a
 * limit together. A refused request moves nothing. An address new to the ledger is opened (empty)
 * before it is paid, once the limits were seen to allow it.
 */
export function faucetFactory(deps: { db: Kysely<DB>; clock: Clock; secretKey: Buffer; settings: FaucetSettings; limited: boolean }) {
  const { db, clock, settings, limited } = deps
  const issuing = issuingFactory({ db, clock, secretKey: deps.secretKey, actor: 'faucet' })
  const ledger = ledgerServiceFactory({ db, clock, network: FAUCET_NETWORK })

  /** 429 faucet_limit_reached when the address or the user already had their share of the last 24 hours. */
  async function checkLimits(trx: Kysely<DB>, address: string, userId: string | undefined): Promise<void> {
    // Each count reads its own index (migration 0029): the records of this address, of this person.
    const { rows } = await sql<{ by_address: string; by_user: string }>`
      select
        (select count(*) from audit_log
          where action = 'faucet' and details->>'to' = ${address} and at > now() - interval '24 hours')::text as by_address,
        (select count(*) from audit_log
          where action = 'faucet' and details->>'user_id' = ${userId ?? ''} and at > now() - interval '24 hours')::text as by_user`.execute(
      trx,
    )
    const counted = rows[0] ?? { by_address: '0', by_user: '0' }
    if (settings.dailyPerAddress === 0) {
      throw new ApiError(
        'faucet_limit_reached',
        'The faucet is off on this platform (PLINTH_FAUCET_DAILY_PER_ADDRESS=0): ask its operator for test-π.',
      )
    }
    if (Number(counted.by_address) >= settings.dailyPerAddress) {
      throw new ApiError(
        'faucet_limit_reached',
        `The faucet pays one address at most ${settings.dailyPerAddress} times in 24 hours (PLINTH_FAUCET_DAILY_PER_ADDRESS): try again later.`,
      )
    }
    if (userId !== undefined && Number(counted.by_user) >= settings.dailyPerUser) {
      throw new ApiError(
        'faucet_limit_reached',
        `The faucet pays one person at most ${settings.dailyPerUser} times in 24 hours (PLINTH_FAUCET_DAILY_PER_USER): try again later.`,
      )
    }
  }

  return {
    settings,

    async grant(request: FaucetRequest): Promise<FaucetGrant> {
      if (request.network !== FAUCET_NETWORK) {
        throw new ApiError('faucet_not_on_network', `The faucet pays test-π on ${FAUCET_NETWORK} only, never on ${request.network}.`)
      }
      const { address, userId } = request
      if (!StrKey.isValidEd25519PublicKey(address)) {
        throw new ApiError('invalid_arguments', 'addr must be a Stellar account address (G…, 56 characters).')
      }
      const stroops = issueStroops(settings.amount)
      // Seen first outside the lock, so that a refused request opens no account; counted again under it.
      if (limited) await checkLimits(db, address, userId)
      if ((await ledger.getAccount(address)) === undefined) {
        await ledger.openAccount(address, '0').catch(async (error: unknown) => {
          // Opened by a racing request meanwhile: that is what was wanted.
          if ((await ledger.getAccount(address)) === undefined) throw error
        })
      }
      const { applied, auditId } = await issuing.mintAndPay({
        network: FAUCET_NETWORK,
        to: address,
        stroops,
        memo: FAUCET_MEMO,
        actor: userId === undefined ? 'faucet' : `user:${userId}`,
        policy: limited
          ? async (trx) => {
              await checkLimits(trx, address, userId)
              return undefined
            }
          : undefined,
        record: {
          action: 'faucet',
          target: address,
          details: {
            network: FAUCET_NETWORK,
            ...(userId === undefined ? {} : { user_id: userId }),
            ...(request.requestId === undefined ? {} : { request_id: request.requestId }),
          },
        },
      })
      return { address, amount: formatAmount(stroops), transaction: applied, audit_id: auditId }
    },
  }
}

export type Faucet = ReturnType<typeof faucetFactory>
