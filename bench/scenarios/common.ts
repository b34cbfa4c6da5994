/** What the scenarios share: the amount every lifecycle pays, and picking seeded apps and keys. */
import { randomInt } from 'node:crypto'
import type { SeededApp } from '../lib.js'

/** What every lifecycle pays: small, so no wallet runs dry however long the run. */
export const AMOUNT = 0.01
export const AMOUNT_TEXT = '0.01'
/** Authorization headers of every key of an app: a request picks one at random. */
export function keyHeaders(app: SeededApp): string[] {
  return app.apiKeys.map((key) => `Key ${key}`)
}

export function pick<T>(items: readonly T[]): T {
  const item = items[randomInt(items.length)]
  if (item === undefined) throw new Error('pick: no items')
  return item
}

export function appsById(apps: readonly SeededApp[]): Map<string, SeededApp> {
  return new Map(apps.map((app) => [app.appId, app]))
}

export function appOf(apps: Map<string, SeededApp>, appId: string): SeededApp {
  const app = apps.get(appId)
  if (app === undefined) throw new Error(`no seeded app ${appId}`)
  return app
}

export function formatCount(value: number): string {
  return value.toLocaleString('en-US')
}
