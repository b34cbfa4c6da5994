/** What a scenario is given on one server: the data seeded on first use and shared by every scenario measured there. */
import {
  type Backend,
  type Fixtures,
  type FlowTeam,
  formatNumber,
  type ScenarioContext,
  type SeedRecord,
  seed,
  seedFlowTeams,
} from './lib.js'
import type { Settings } from './settings.js'

export interface ContextOptions {
  backend: Backend
  baseUrl: string
  settings: Pick<Settings, 'quick' | 'data' | 'apps' | 'users' | 'keysPerApp' | 'seedConcurrency' | 'flowWorkers' | 'flowUsersPerWorker'>
  /** The seeded users each app needs at least (the largest of the scenarios' minUsersPerApp). */
  minUsersPerApp: number
  /** Makes usernames unique to this run. */
  tag: string
  recordSeed(record: SeedRecord): void
}

/** A server's scenario context: fixtures, flow teams and shared data seeded on first use, then shared. */
export function scenarioContext(options: ContextOptions): ScenarioContext {
  const { baseUrl, settings, tag, recordSeed } = options
  let fixtures: Promise<Fixtures> | undefined
  let flowTeams: Promise<FlowTeam[]> | undefined
  const shared = new Map<string, Promise<unknown>>()
  return {
    backend: options.backend,
    baseUrl,
    quick: settings.quick,
    data: settings.data,
    fixtures: () => {
      fixtures ??= seed(baseUrl, {
        apps: settings.apps,
        users: Math.max(settings.users, settings.apps * options.minUsersPerApp),
        keysPerApp: settings.keysPerApp,
        concurrency: settings.seedConcurrency,
        tag,
      }).then((seeded) => {
        recordSeed({
          purpose: 'users with tokens (every request scenario)',
          made:
            `${seeded.apps.length} apps (${settings.keysPerApp} server keys each), ${formatNumber(seeded.users.length)} users, ` +
            'each signed in to one app (1 token)',
          items: seeded.users.length,
          seconds: seeded.seedMs / 1000,
        })
        return seeded
      })
      return fixtures
    },
    flowTeams: () => {
      flowTeams ??= seedFlowTeams(baseUrl, {
        teams: settings.flowWorkers,
        usersPerTeam: settings.flowUsersPerWorker,
        concurrency: settings.seedConcurrency,
        tag,
      }).then(({ teams, seedMs }) => {
        const users = teams.reduce((sum, team) => sum + team.users.length, 0)
        recordSeed({
          purpose: 'payment flows (one app per worker)',
          made: `${teams.length} apps, ${users} users with wallet_address granted`,
          items: users,
          seconds: seedMs / 1000,
        })
        return teams
      })
      return flowTeams
    },
    shared: <T>(key: string, make: () => Promise<T>): Promise<T> => {
      let found = shared.get(key)
      if (found === undefined) {
        found = make()
        shared.set(key, found)
      }
      return found as Promise<T>
    },
    recordSeed,
  }
}
