/**
 * What is measured. Each scenario names the servers it runs on, a setup run once per server (the
 * seeded fixtures are shared: see ScenarioContext.fixtures and flowTeams), and either a request
 * builder called for every request autocannon sends (defineScenario) or a lifecycle of several
 * requests that a fixed number of workers loop (defineFlow). To measure another endpoint, add an
 * entry here.
 */
import { createPrivateKey, type KeyObject, randomInt, sign } from 'node:crypto'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder, xdr } from '@stellar/stellar-base'
import {
  type AnswerVerdict,
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
  mapLimit,
  postJson,
  type Scenario,
  type ScenarioContext,
  type SeededApp,
  stringField,
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

function signerOf(seed: string): Signer {
  const keypair = Keypair.fromSecret(seed)
  return {
    key: createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, keypair.rawSecretKey()]), format: 'der', type: 'pkcs8' }),
    hint: keypair.signatureHint(),
  }
}

/** A native payment from the app wallet, built with @stellar/stellar-base and signed by `signer`; answers the base64 envelope. */
function signPayment(signer: Signer, account: Account, payment: { to: string; memo: string; network: string }): string {
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

// ---------------------------------------------------------------------------------------------
// Data for the server-key and Horizon reads, seeded once per server through the API.

/** Authorization headers of every key of an app: a request picks one at random. */
function keyHeaders(app: SeededApp): string[] {
  return app.apiKeys.map((key) => `Key ${key}`)
}

function pick<T>(items: readonly T[]): T {
  const item = items[randomInt(items.length)]
  if (item === undefined) throw new Error('pick: no items')
  return item
}

function appsById(apps: readonly SeededApp[]): Map<string, SeededApp> {
  return new Map(apps.map((app) => [app.appId, app]))
}

function appOf(apps: Map<string, SeededApp>, appId: string): SeededApp {
  const app = apps.get(appId)
  if (app === undefined) throw new Error(`no seeded app ${appId}`)
  return app
}

/** A seeded thing the app's server reads: its path, and the keys of the app it belongs to. */
interface Owned {
  path: string
  keys: readonly string[]
}

/**
 * A2U payments across every seeded app and user, the way app servers leave them: first, per app
 * and in sequence (an app account signs one sequence number at a time), a few taken to completion
 * through the ledger like the A2U flow (create, sign with the app wallet, submit, complete); then
 * `paymentsPerUser` per user, each cancelled before the user's next one, the last one of every
 * fourth user left open.
 */
async function seedPayments(context: ScenarioContext): Promise<Owned[]> {
  const { apps, users } = await context.fixtures()
  const startedAt = performance.now()
  const base = context.baseUrl
  const byId = appsById(apps)
  const owned: Owned[] = []
  const create = async (app: SeededApp, uid: string, memo: string, order: number) => {
    const created = await postJson(`${base}/v2/payments`, { payment: { amount: AMOUNT, memo, metadata: { order }, uid } }, 200, {
      authorization: `Key ${app.apiKey}`,
    })
    const id = stringField(created, 'identifier', 'seed payment')
    owned.push({ path: `/v2/payments/${id}`, keys: keyHeaders(app) })
    return { created, id }
  }

  let completed = 0
  await Promise.all(
    apps.map(async (app) => {
      const members = users.filter((user) => user.appId === app.appId).slice(0, context.data.completedPaymentsPerApp)
      if (members.length === 0) return
      const signer = signerOf(app.walletSeed)
      const found = await getJson(`${base}/ledger/accounts/${app.walletAddress}`)
      const account = new Account(app.walletAddress, stringField(found, 'sequence', 'read app account'))
      for (const [index, user] of members.entries()) {
        const { created, id } = await create(app, user.uid, `Bench completed payment ${index}`, index)
        const envelope = signPayment(signer, account, {
          to: stringField(created, 'to_address', 'seed payment'),
          memo: id,
          network: stringField(created, 'network', 'seed payment'),
        })
        const submitted = await postJson(`${base}/ledger/transactions`, { tx: envelope }, 200)
        const txid = stringField(submitted, 'hash', 'submit seeded payment')
        await postJson(`${base}/v2/payments/${id}/complete`, { txid }, 200, { authorization: `Key ${app.apiKey}` })
        completed++
      }
    }),
  )

  const total = Math.round(users.length * context.data.paymentsPerUser)
  let open = 0
  await mapLimit(users.length, context.data.seedConcurrency, async (index) => {
    const user = users[index]
    if (user === undefined) return
    const app = appOf(byId, user.appId)
    const mine = Math.floor(total / users.length) + (index < total % users.length ? 1 : 0)
    for (let round = 0; round < mine; round++) {
      const { id } = await create(app, user.uid, `Bench payment ${index}.${round}`, round * users.length + index)
      if (round === mine - 1 && index % 4 === 1) {
        open++
        continue
      }
      await postJson(`${base}/v2/payments/${id}/cancel`, {}, 200, { authorization: `Key ${app.apiKey}` })
    }
  })
  context.recordSeed({
    purpose: 'GET /v2/payments/{id}',
    made:
      `${formatCount(owned.length)} A2U payments over ${apps.length} apps: ${completed} completed through the ledger, ` +
      `${formatCount(open)} left open, ${formatCount(owned.length - completed - open)} cancelled`,
    items: owned.length,
    seconds: (performance.now() - startedAt) / 1000,
  })
  return owned
}

/** Rewarded ads each seeded user watched (`POST /v2/client/ads/rewarded/show` with the user's token): their adIds, with the app's keys. */
async function seedAds(context: ScenarioContext): Promise<Owned[]> {
  const { apps, users } = await context.fixtures()
  const startedAt = performance.now()
  const byId = appsById(apps)
  const count = Math.round(users.length * context.data.adsPerUser)
  const ads = await mapLimit(count, context.data.seedConcurrency, async (index) => {
    const user = users[index % users.length]
    if (user === undefined) throw new Error('seedAds: no user')
    const shown = await postJson(`${context.baseUrl}/v2/client/ads/rewarded/show`, {}, 200, {
      authorization: `Bearer ${user.accessToken}`,
    })
    if (jsonAt(shown, 'result') !== 'AD_REWARDED') throw new Error(`seedAds: the ad was not rewarded: ${JSON.stringify(shown)}`)
    return { path: `/v2/ads_network/status/${stringField(shown, 'adId', 'show ad')}`, keys: keyHeaders(appOf(byId, user.appId)) }
  })
  context.recordSeed({
    purpose: 'GET /v2/ads_network/status/{adId}',
    made: `${formatCount(ads.length)} rewarded ads watched by ${formatCount(Math.min(count, users.length))} users of ${apps.length} apps`,
    items: ads.length,
    seconds: (performance.now() - startedAt) / 1000,
  })
  return ads
}

// ---------------------------------------------------------------------------------------------
// Notify in 256-batches, with the quota (48 per app and user in any 24 hours of platform time).

const NOTIFY_BATCH = 256
const NOTIFY_QUOTA = 48
/** One day and a second: after an advance nothing sent before it is inside anyone's 24-hour window. */
const CLOCK_STEP_SECONDS = 86_401

interface NotifyApp {
  appId: string
  keys: readonly string[]
  /** The app's users (uids) in two halves: an epoch of the quota uses one half, the next epoch the other. */
  halves: [string[], string[]]
  /** Where the next batch starts in the current half (batches take consecutive users, wrapping around). */
  cursor: number
  /** Batches dealt in the current epoch, and how many an epoch allows (every user of the half gets at most 48). */
  batches: number
  capacity: number
}

/**
 * The quota, kept exactly from this side. Every batch goes to 256 distinct users of one app,
 * consecutive in a shuffled half of its users, so after n batches each user of the half has had
 * ⌊256n/H⌋ or ⌈256n/H⌉ notifications: an epoch stops at ⌊48H/256⌋ batches. Then the platform clock
 * is advanced a day and a second (everything before leaves every window) and the next epoch uses
 * the other half, so a batch still in flight when the clock moves, whichever side of the move the
 * server sees it on, never lands in a window of the users now being notified: their last
 * notifications were two epochs ago, and the switch waits for those to be answered (when it
 * cannot, it is counted as unsafe; a 403 would show it).
 */
interface NotifyState {
  baseUrl: string
  apps: NotifyApp[]
  epoch: number
  /** Batches dealt and not yet answered, per epoch (those autocannon left unanswered at the end of a run are dropped from it). */
  inFlight: Map<number, number>
  /** Batches autocannon stopped waiting for at the end of a run (the server still handles them). */
  abandoned: number
  advances: number
  advanceSettled: boolean
  advanceFailures: string[]
  unsafeSwitches: number
  batches: number
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(i + 1)
    const a = items[i]
    const b = items[j]
    if (a === undefined || b === undefined) continue
    items[i] = b
    items[j] = a
  }
  return items
}

function startEpoch(state: NotifyState): void {
  const next = state.epoch + 1
  if (!state.advanceSettled || (state.inFlight.get(next - 2) ?? 0) > 0) state.unsafeSwitches++
  state.epoch = next
  for (const app of state.apps) {
    shuffle(app.halves[next % 2 === 0 ? 0 : 1])
    app.cursor = 0
    app.batches = 0
  }
  state.advances++
  state.advanceSettled = false
  postJson(`${state.baseUrl}/sandbox/clock`, { advance_seconds: CLOCK_STEP_SECONDS }, 200).then(
    () => {
      state.advanceSettled = true
    },
    (error: unknown) => {
      state.advanceSettled = true
      state.advanceFailures.push(error instanceof Error ? error.message : String(error))
    },
  )
}

function notifyCheck(status: number, body: string): AnswerVerdict {
  if (status !== 201) return { problem: `HTTP ${status}` }
  let parsed: unknown
  try {
    parsed = JSON.parse(body) as unknown
  } catch {
    return { problem: '201 that is not JSON' }
  }
  const delivered = jsonAt(parsed, 'delivered_notifications')
  if (jsonAt(parsed, 'success') !== true || !Array.isArray(delivered)) return { problem: '201 without success and delivered_notifications' }
  if (delivered.length !== NOTIFY_BATCH) return { problem: `201 with ${delivered.length} of ${NOTIFY_BATCH} delivered` }
  return { items: delivered.length }
}

async function prepareNotify(context: ScenarioContext): Promise<NotifyState> {
  const { apps, users } = await context.fixtures()
  const notifyApps = apps.map((app): NotifyApp => {
    const uids = shuffle(users.filter((user) => user.appId === app.appId).map((user) => user.uid))
    const halfSize = Math.floor(uids.length / 2)
    if (halfSize < NOTIFY_BATCH) {
      throw new Error(
        `notify needs at least ${2 * NOTIFY_BATCH} users per app (two halves of ${NOTIFY_BATCH} distinct users); ` +
          `${app.name} has ${uids.length}: seed more users or fewer apps`,
      )
    }
    return {
      appId: app.appId,
      keys: keyHeaders(app),
      halves: [uids.slice(0, halfSize), uids.slice(halfSize, 2 * halfSize)],
      cursor: 0,
      batches: 0,
      capacity: Math.floor((NOTIFY_QUOTA * halfSize) / NOTIFY_BATCH),
    }
  })
  return {
    baseUrl: context.baseUrl,
    apps: notifyApps,
    epoch: 0,
    inFlight: new Map(),
    abandoned: 0,
    advances: 0,
    advanceSettled: true,
    advanceFailures: [],
    unsafeSwitches: 0,
    batches: 0,
  }
}

function notifyBatch(state: NotifyState): { app: NotifyApp; uids: string[]; epoch: number } {
  let open = state.apps.filter((app) => app.batches < app.capacity)
  if (open.length === 0) {
    startEpoch(state)
    open = state.apps
  }
  const app = pick(open)
  const half = app.halves[state.epoch % 2 === 0 ? 0 : 1]
  const uids: string[] = []
  for (let k = 0; k < NOTIFY_BATCH; k++) {
    const uid = half[(app.cursor + k) % half.length]
    if (uid !== undefined) uids.push(uid)
  }
  app.cursor = (app.cursor + NOTIFY_BATCH) % half.length
  app.batches++
  state.batches++
  state.inFlight.set(state.epoch, (state.inFlight.get(state.epoch) ?? 0) + 1)
  return { app, uids, epoch: state.epoch }
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
    scaling: true,
    // Every seeded user's token, in random order, so lookups are spread over the whole table.
    setup: async (context) => new Deck((await context.fixtures()).users.map((user) => `Bearer ${user.accessToken}`)),
    request: (authorizations) => ({ method: 'GET', path: '/v2/me', headers: { authorization: authorizations.next() } }),
  }),

  // Every seeded payment in random order, each read with a random key of its own app.
  defineScenario({
    name: 'GET /v2/payments/{id}',
    backends: ['pglite', 'postgres'],
    quickBackends: ['postgres'],
    scaling: true,
    setup: async (context) => new Deck(await context.shared('payments', () => seedPayments(context))),
    request: (payments) => {
      const payment = payments.next()
      return { method: 'GET', path: payment.path, headers: { authorization: pick(payment.keys) } }
    },
  }),

  // Every watched ad in random order, read by its app (pending or granted, as the platform clock has it).
  defineScenario({
    name: 'GET /v2/ads_network/status/{adId}',
    backends: ['pglite', 'postgres'],
    quickBackends: ['postgres'],
    setup: async (context) => new Deck(await context.shared('ads', () => seedAds(context))),
    request: (ads) => {
      const ad = ads.next()
      return { method: 'GET', path: ad.path, headers: { authorization: pick(ad.keys) } }
    },
  }),

  // Horizon, as stellar-sdk's loadAccount calls it: every seeded user's and app's wallet, no authentication.
  defineScenario({
    name: 'GET /ledger/accounts/{address}',
    backends: ['pglite', 'postgres'],
    quickBackends: ['postgres'],
    setup: async (context) => {
      const { apps, users } = await context.fixtures()
      return new Deck([...users.map((user) => user.walletAddress), ...apps.map((app) => app.walletAddress)])
    },
    request: (addresses) => ({ method: 'GET', path: `/ledger/accounts/${addresses.next()}` }),
  }),

  // App to user: the app's server creates the payment, pays it on the ledger itself (signing with its
  // wallet seed, the payment identifier as memo), then completes it with the transaction's hash.
  defineFlow<A2UWorker>({
    name: 'A2U lifecycle',
    backends: ['pglite', 'postgres'],
    quickBackends: ['postgres'],
    scaling: true,
    setup: async (context) =>
      workersOf(await context.flowTeams()).map((worker) => ({
        ...worker,
        signer: signerOf(worker.team.app.walletSeed),
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
          signPayment(worker.signer, account, {
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

  // An app's server notifying 256 of its users at once; the quota is kept exactly (see NotifyState),
  // every answer must be 201 with all 256 delivered. Runs last on its server: it moves the clock.
  // Not on PGlite: its one connection serialises every transaction, and with 32 batches of 256 queued, trial runs had a tail past
  // autocannon's 10 s timeout (p99 7.5 s, a few timed out), which would void the row (see BENCHMARKS.md's notes).
  defineScenario<NotifyState>({
    name: 'notify, 256 per request',
    backends: ['postgres'],
    movesClock: true,
    // Two halves of 256 distinct users, and some room so consecutive batches do not always take the same ones.
    minUsersPerApp: 550,
    checksAnswers: true,
    itemUnit: 'notifications/s',
    setup: prepareNotify,
    request: (state) => {
      const { app, uids, epoch } = notifyBatch(state)
      const batch = state.batches
      return {
        method: 'POST',
        path: '/v2/in_app_notifications/notify',
        headers: { authorization: pick(app.keys), 'content-type': 'application/json' },
        body: JSON.stringify({
          notifications: uids.map((uid, index) => ({
            title: `Bench notification ${batch}`,
            body: `Item ${index} of batch ${batch} is ready.`,
            user_uid: uid,
            subroute: '/x',
          })),
        }),
        check: (status, body) => {
          state.inFlight.set(epoch, (state.inFlight.get(epoch) ?? 1) - 1)
          return notifyCheck(status, body)
        },
      }
    },
    afterRun: (state) => {
      for (const count of state.inFlight.values()) state.abandoned += Math.max(0, count)
      state.inFlight.clear()
    },
    summary: (state) => {
      const halves = state.apps.map((app) => app.halves[0].length)
      return (
        `${formatCount(state.batches)} batches sent (warm-up and probe included) to ${state.apps.length} apps, each app's users in two halves of ` +
        `${Math.min(...halves)}–${Math.max(...halves)}; ${state.advances} clock advances of ${formatCount(CLOCK_STEP_SECONDS)} s (one per quota epoch of ` +
        `${state.apps.map((app) => app.capacity).join('/')} batches per app)` +
        `${state.unsafeSwitches > 0 ? `; ${state.unsafeSwitches} epoch switches made before the previous clock move had answered or before every batch of two epochs earlier had been answered` : ''}` +
        `${state.advanceFailures.length > 0 ? `; ${state.advanceFailures.length} clock advances FAILED: ${state.advanceFailures[0]}` : ''}`
      )
    },
  }),
]

function formatCount(value: number): string {
  return value.toLocaleString('en-US')
}
