/** The payment lifecycles (A2U and U2A, and A2U at several counts of workers): workers, their signing keys, and what each leaves behind. */
import { createPrivateKey, type KeyObject, sign } from 'node:crypto'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder, xdr } from '@stellar/stellar-base'
import {
  type BatchScenario,
  defineFlow,
  type FlowClient,
  type FlowDefinition,
  type FlowTeam,
  type FlowUser,
  flowExpect,
  flowString,
  getJson,
  jsonAt,
  preparedFlow,
} from '../lib.js'
import { AMOUNT, AMOUNT_TEXT } from './common.js'

/** The app's server completes the payment with the transaction's hash (the last step of both lifecycles). */
async function complete(client: FlowClient, id: string, key: Record<string, string>, txid: string): Promise<void> {
  const completed = await client.call('complete', 'POST', `/v2/payments/${id}/complete`, { headers: key, json: { txid }, expect: 200 })
  flowExpect(completed, 'status.developer_completed', true, 'complete')
}

/** A worker's own team and where it is in it. */
interface Worker {
  index: number
  team: FlowTeam
  /** Lifecycles started, which also picks the next user. */
  started: number
}

function workersOf(teams: readonly FlowTeam[]): Worker[] {
  return teams.map((team, index) => ({ index, team, started: 0 }))
}

/** The worker's users in turn, one per lifecycle. */
function nextUser(worker: Worker): FlowUser {
  const user = worker.team.users[worker.started++ % worker.team.users.length]
  if (user === undefined) throw new Error(`flow worker ${worker.index}: its team has no users`)
  return user
}

const serverKey = (worker: Worker) => ({ authorization: `Key ${worker.team.app.apiKey}` })

interface A2UWorker extends Worker {
  signer: Signer
  /**
   * The app account as this worker knows it: the sequence is read once from the ledger, then the
   * builder adds one per transaction. Unset after a failure, so the next lifecycle reads it again.
   */
  account: Account | undefined
}

/**
 * An app wallet's signer, as a busy app backend holds it: the ed25519 key decoded once, and
 * signing through node:crypto (OpenSSL), as @stellar/stellar-base does when sodium-native is
 * installed. Its pure-JavaScript fallback (tweetnacl) takes over a millisecond a signature, which
 * would make the load generator, not the server, the limit of the lifecycle rows.
 */
interface Signer {
  key: KeyObject
  hint: Buffer
}

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

export function signerOf(seed: string): Signer {
  const keypair = Keypair.fromSecret(seed)
  return {
    key: createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, keypair.rawSecretKey()]), format: 'der', type: 'pkcs8' }),
    hint: keypair.signatureHint(),
  }
}

/** A native payment from the app wallet, built with @stellar/stellar-base and signed by `signer`; answers the base64 envelope. */
export function signPayment(signer: Signer, account: Account, payment: { to: string; memo: string; network: string }): string {
  const transaction = new TransactionBuilder(account, { fee: '100', networkPassphrase: payment.network })
    .addOperation(Operation.payment({ destination: payment.to, asset: Asset.native(), amount: AMOUNT_TEXT }))
    .addMemo(Memo.text(payment.memo))
    .setTimeout(180)
    .build()
  transaction.signatures.push(new xdr.DecoratedSignature({ hint: signer.hint, signature: sign(null, transaction.hash(), signer.key) }))
  return transaction.toEnvelope().toXDR('base64')
}

async function appAccount(worker: A2UWorker, client: FlowClient): Promise<Account> {
  if (worker.account !== undefined) return worker.account
  const address = worker.team.app.walletAddress
  const found = await client.call('read sequence', 'GET', `/ledger/accounts/${address}`, { expect: 200 })
  worker.account = new Account(address, flowString(found, 'sequence', 'read sequence'))
  return worker.account
}

/** Every open payment of the workers' apps and users, and every app account whose sequence is not what its worker counted. */
async function leftovers<W extends Worker>(
  workers: readonly W[],
  baseUrl: string,
  accountOf?: (worker: W) => Account | undefined,
): Promise<string[]> {
  const problems: string[] = []
  for (const worker of workers) {
    const open = jsonAt(await getJson(`${baseUrl}/v2/payments/incomplete_server_payments`, serverKey(worker)), 'incomplete_server_payments')
    if (!Array.isArray(open) || open.length > 0)
      problems.push(`app ${worker.team.app.appId}: open A2U payments left: ${JSON.stringify(open)}`)
    for (const user of worker.team.users) {
      const paid = jsonAt(
        await getJson(`${baseUrl}/v2/client/payments/incomplete`, { authorization: `Bearer ${user.accessToken}` }),
        'payment',
      )
      if (paid !== null) problems.push(`user ${user.userId}: a paid but uncompleted U2A payment is left: ${JSON.stringify(paid)}`)
    }
    const counted = accountOf?.(worker)
    if (counted !== undefined) {
      const onLedger = jsonAt(await getJson(`${baseUrl}/ledger/accounts/${counted.accountId()}`), 'sequence')
      if (onLedger !== counted.sequenceNumber()) {
        problems.push(`app account ${counted.accountId()}: sequence ${String(onLedger)} on the ledger, ${counted.sequenceNumber()} counted`)
      }
    }
  }
  return problems
}

function a2uWorkers(teams: readonly FlowTeam[]): A2UWorker[] {
  return workersOf(teams).map((worker) => ({ ...worker, signer: signerOf(worker.team.app.walletSeed), account: undefined }))
}

// App to user: the app's server creates the payment, pays it on the ledger itself (signing with its
// wallet seed, the payment identifier as memo), then completes it with the transaction's hash.
const a2u: FlowDefinition<A2UWorker> = {
  name: 'A2U lifecycle',
  backends: ['pglite', 'postgres'],
  quickBackends: ['postgres'],
  scaling: true,
  setup: async (context) => a2uWorkers(await context.flowTeams()),
  async lifecycle(worker, client) {
    const user = nextUser(worker)
    const key = serverKey(worker)
    const created = await client.call('create', 'POST', '/v2/payments', {
      headers: key,
      json: { payment: { amount: AMOUNT, memo: `Bench A2U ${worker.index}.${worker.started}`, metadata: {}, uid: user.uid } },
      expect: 200,
    })
    const id = flowString(created, 'identifier', 'create')
    try {
      const account = await appAccount(worker, client)
      const envelope = client.time('sign', () =>
        signPayment(worker.signer, account, {
          to: flowString(created, 'to_address', 'create'),
          memo: id,
          network: flowString(created, 'network', 'create'),
        }),
      )
      const submitted = await client.call('submit', 'POST', '/ledger/transactions', { form: { tx: envelope }, expect: 200 })
      const txid = flowString(submitted, 'hash', 'submit')
      await complete(client, id, key, txid)
    } catch (error) {
      // The ledger may not have taken the sequence number, and the open payment would block this user.
      worker.account = undefined
      await client.attempt('POST', `/v2/payments/${id}/cancel`, key)
      throw error
    }
  },
  verify: (workers, baseUrl) => leftovers(workers, baseUrl, (worker) => worker.account),
}
export const a2uLifecycle = defineFlow(a2u)

// The A2U lifecycle at 1, 4, 16 and 64 workers, with the batches the ledger closer made of their
// submits (Settings.batches; measure-batches.ts seeds a team per worker).
export const a2uBatches: BatchScenario = {
  kind: 'batches',
  name: 'A2U batches',
  backends: ['postgres'],
  flow: (teams, baseUrl) => preparedFlow(a2u, a2uWorkers(teams), baseUrl),
}

// User to app: the user starts the payment (client SDK), the app's server approves it, the
// platform's wallet signs and submits the user's transaction, and the app's server completes it.
export const u2aLifecycle = defineFlow<Worker>({
  name: 'U2A lifecycle',
  backends: ['pglite', 'postgres'],
  quickBackends: ['postgres'],
  setup: async (context) => workersOf(await context.flowTeams()),
  async lifecycle(worker, client) {
    const user = nextUser(worker)
    const key = serverKey(worker)
    const bearer = { authorization: `Bearer ${user.accessToken}` }
    const created = await client.call('create', 'POST', '/v2/client/payments', {
      headers: bearer,
      json: { amount: AMOUNT, memo: `Bench U2A ${worker.index}.${worker.started}`, metadata: {} },
      expect: 201,
    })
    const id = flowString(created, 'identifier', 'create')
    try {
      const approved = await client.call('approve', 'POST', `/v2/payments/${id}/approve`, { headers: key, expect: 200 })
      flowExpect(approved, 'status.developer_approved', true, 'approve')
      const paid = await client.call('submit', 'POST', `/v2/client/payments/${id}/submit`, { headers: bearer, expect: 200 })
      flowExpect(paid, 'transaction.verified', true, 'submit')
      const txid = flowString(paid, 'transaction.txid', 'submit')
      await complete(client, id, key, txid)
    } catch (error) {
      await client.attempt('POST', `/v2/payments/${id}/cancel`, key)
      throw error
    }
  },
  verify: (workers, baseUrl) => leftovers(workers, baseUrl),
})
