/**
 * What the three walks (test/e2e/walk-*.e2e.ts, test/helpers/walks.ts) share: the two window
 * sizes of issue #41, and signing up and in at the platform's page as its sign-in form asks.
 */
import type { Page } from 'playwright-core'
import { GOOD_PASSWORD } from '../helpers/accounts.js'
import { FAST } from './harness.js'

export const SIZES = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const
export type Size = (typeof SIZES)[number]

/** Create account at the page's sign-in form; resolves on the signed-in home. */
export async function signUp(page: Page, base: string, username: string, password = GOOD_PASSWORD): Promise<void> {
  await page.goto(`${base}/?${new URLSearchParams(FAST)}`, { waitUntil: 'domcontentloaded' })
  await page.getByLabel('Username (3 to 32').fill(username)
  await page.getByLabel('Password (8 to 128').fill(password)
  await page.getByRole('button', { name: 'Create account' }).click()
  await page.getByRole('heading', { name: 'Open an app' }).waitFor()
}

/** Sign in with the password; resolves on the signed-in home. */
export async function signIn(page: Page, base: string, username: string, password = GOOD_PASSWORD): Promise<void> {
  await page.goto(`${base}/?${new URLSearchParams(FAST)}`, { waitUntil: 'domcontentloaded' })
  await page.locator('#signin-username').fill(username)
  await page.locator('#signin-password').fill(password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByRole('heading', { name: 'Open an app' }).waitFor()
}
