/**
 * What is measured. Each scenario names the servers it runs on, a setup run once per server (the
 * seeded fixtures are shared: see ScenarioContext.fixtures and flowTeams), and either a request
 * builder called for every request autocannon sends (defineScenario) or a lifecycle of several
 * requests that a fixed number of workers loop (defineFlow). To measure another endpoint, add an
 * entry here.
 */
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import {
  Deck,
  defineFlow,
  defineScenario,
  type FlowClient,
  type FlowTeam,
  type FlowUser,
  flowExpect,
  flowString,
  getJson,
  jsonAt,
  type Scenario,
} from './lib.js'

/** What every lifecycle pays: small, so no wallet runs dry however long the run. */
const AMOUNT = 0.01
const AMOUNT_TEXT = '0.01'

/** A worker's own team and where it is in it. */
interface Worker {
  index: number
  team: FlowTeam
  /** Lifecycles started, which also picks the next user. */
  started: number
}

function workersOf(teams: FlowTeam[]): Worker[] {
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
  keypair: Keypair
  /**
   * The app account as this worker knows it: the sequence is read once from the ledger, then the
   * builder adds one per transaction. Unset after a failure, so the next lifecycle reads it again.
   */
  account: Account | undefined
}

/** A native payment from the app wallet, signed as an app backend would with @stellar/stellar-base; answers the base64 envelope. */
function signPayment(worker: A2UWorker, account: Account, payment: { to: string; memo: string; network: string }): string {
  const transaction = new TransactionBuilder(account, { fee: '100', networkPassphrase: payment.network })
    .addOperation(Operation.payment({ destination: payment.to, asset: Asset.native(), amount: AMOUNT_TEXT }))
    .addMemo(Memo.text(payment.memo))
    .setTimeout(180)
    .build()
  transaction.sign(worker.keypair)
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

export const scenarios: Scenario[] = [
  defineScenario({
    name: 'hello-world GET /',
    backends: ['fastify'],
    setup: async () => undefined,
    request: () => ({ method: 'GET', path: '/' }),
  }),

  defineScenario({
    name: 'GET /v2/me',
    backends: ['pglite', 'postgres'],
    // Every seeded user's token, in random order, so lookups are spread over the whole table.
    setup: async (context) => new Deck((await context.fixtures()).users.map((user) => `Bearer ${user.accessToken}`)),
    request: (authorizations) => ({ method: 'GET', path: '/v2/me', headers: { authorization: authorizations.next() } }),
  }),

  // App to user: the app's server creates the payment, pays it on the ledger itself (signing with its
  // wallet seed, the payment identifier as memo), then completes it with the transaction's hash.
  defineFlow<A2UWorker>({
    name: 'A2U lifecycle',
    backends: ['pglite', 'postgres'],
    setup: async (context) =>
      workersOf(await context.flowTeams()).map((worker) => ({
        ...worker,
        keypair: Keypair.fromSecret(worker.team.app.walletSeed),
        account: undefined,
      })),
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
          signPayment(worker, account, {
            to: flowString(created, 'to_address', 'create'),
            memo: id,
            network: flowString(created, 'network', 'create'),
          }),
        )
        const submitted = await client.call('submit', 'POST', '/ledger/transactions', { form: { tx: envelope }, expect: 200 })
        const txid = flowString(submitted, 'hash', 'submit')
        const completed = await client.call('complete', 'POST', `/v2/payments/${id}/complete`, {
          headers: key,
          json: { txid },
          expect: 200,
        })
        flowExpect(completed, 'status.developer_completed', true, 'complete')
      } catch (error) {
        // The ledger may not have taken the sequence number, and the open payment would block this user.
        worker.account = undefined
        await client.attempt('POST', `/v2/payments/${id}/cancel`, key)
        throw error
      }
    },
    verify: (workers, baseUrl) => leftovers(workers, baseUrl, (worker) => worker.account),
  }),

  // User to app: the user starts the payment (client SDK), the app's server approves it, the
  // platform's wallet signs and submits the user's transaction, and the app's server completes it.
  defineFlow<Worker>({
    name: 'U2A lifecycle',
    backends: ['pglite', 'postgres'],
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
        const completed = await client.call('complete', 'POST', `/v2/payments/${id}/complete`, {
          headers: key,
          json: { txid },
          expect: 200,
        })
        flowExpect(completed, 'status.developer_completed', true, 'complete')
      } catch (error) {
        await client.attempt('POST', `/v2/payments/${id}/cancel`, key)
        throw error
      }
    },
    verify: (workers, baseUrl) => leftovers(workers, baseUrl),
  }),
]
