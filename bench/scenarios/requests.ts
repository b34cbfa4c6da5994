import { Account } from '@stellar/stellar-base'
import { Deck, defineScenario, getJson, jsonAt, mapLimit, postJson, type ScenarioContext, type SeededApp, stringField } from '../lib.js'
import { AMOUNT, appOf, appsById, formatCount, keyHeaders, pick } from './common.js'
import { signerOf, signPayment } from './lifecycles.js'

// ---------------------------------------------------------------------------------------------
// Data for the server-key and Horizon reads, seeded once per server through the API.

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

export const helloWorld = defineScenario({
  name: 'hello-world GET /',
  backends: ['fastify'],
  setup: async () => undefined,
  request: () => ({ method: 'GET', path: '/' }),
})

export const me = defineScenario({
  name: 'GET /v2/me',
  backends: ['pglite', 'postgres'],
  scaling: true,
  // Every seeded user's token, in random order, so lookups are spread over the whole table.
  setup: async (context) => new Deck((await context.fixtures()).users.map((user) => `Bearer ${user.accessToken}`)),
  request: (authorizations) => ({ method: 'GET', path: '/v2/me', headers: { authorization: authorizations.next() } }),
})

// Every seeded payment in random order, each read with a random key of its own app.
export const paymentRead = defineScenario({
  name: 'GET /v2/payments/{id}',
  backends: ['pglite', 'postgres'],
  quickBackends: ['postgres'],
  scaling: true,
  setup: async (context) => new Deck(await context.shared('payments', () => seedPayments(context))),
  request: (payments) => {
    const payment = payments.next()
    return { method: 'GET', path: payment.path, headers: { authorization: pick(payment.keys) } }
  },
})

// Every watched ad in random order, read by its app (pending or granted, as the platform clock has it).
export const adStatus = defineScenario({
  name: 'GET /v2/ads_network/status/{adId}',
  backends: ['pglite', 'postgres'],
  quickBackends: ['postgres'],
  setup: async (context) => new Deck(await context.shared('ads', () => seedAds(context))),
  request: (ads) => {
    const ad = ads.next()
    return { method: 'GET', path: ad.path, headers: { authorization: pick(ad.keys) } }
  },
})

// Horizon, as stellar-sdk's loadAccount calls it: every seeded user's and app's wallet, no authentication.
export const ledgerAccount = defineScenario({
  name: 'GET /ledger/accounts/{address}',
  backends: ['pglite', 'postgres'],
  quickBackends: ['postgres'],
  setup: async (context) => {
    const { apps, users } = await context.fixtures()
    return new Deck([...users.map((user) => user.walletAddress), ...apps.map((app) => app.walletAddress)])
  },
  request: (addresses) => ({ method: 'GET', path: `/ledger/accounts/${addresses.next()}` }),
})
