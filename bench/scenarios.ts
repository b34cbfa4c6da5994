/**
 * What is measured. Each scenario names the servers it runs on, a setup run once per server (the
 * seeded fixtures are shared: see ScenarioContext.fixtures), and a request builder called for every
 * request sent. To measure another endpoint (payments, notify, ledger), add an entry here.
 */
import { Deck, defineScenario, type Scenario } from './lib.js'

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
]
