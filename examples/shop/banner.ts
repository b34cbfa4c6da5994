/**
 * What `npm run demo` prints when the shop is up: where to try it, which differs by Plinth's mode.
 * A sandbox Plinth has the sandbox browser (`/sandbox/`) and the console (`/console/`); a
 * production Plinth answers neither (docs/production.md §3), so there the banner points at the
 * platform's page, where people sign in and developers open the portal, and says whether the
 * shop serves the validation key the portal's **Verify the domain** fetches.
 */

export type PlinthMode = 'sandbox' | 'production'

/**
 * Plinth's mode, asked of Plinth: the sandbox page's settings answer only in sandbox mode
 * ("nothing answers under /sandbox" in production).
 */
export async function plinthMode(plinthUrl: string): Promise<PlinthMode> {
  const response = await fetch(`${plinthUrl}/sandbox/ui/platform.json`)
  const body = (await response.json().catch(() => ({}))) as { mode?: unknown }
  return response.ok && body.mode === 'sandbox' ? 'sandbox' : 'production'
}

export interface BannerFacts {
  mode: PlinthMode
  plinthUrl: string
  shopUrl: string
  appId: string | null
  /** How the credentials were found, as a line's text. */
  credentials: string
  /** Whether SHOP_VALIDATION_KEY is set (the shop then serves it at /validation-key.txt). */
  validationKey: boolean
}

export function bannerLines(facts: BannerFacts): string[] {
  const { plinthUrl, appId } = facts
  const app = `  App             Demo Shop, app_id ${appId ?? '(from SHOP_APP_ID: not set)'}`
  if (facts.mode === 'sandbox') {
    return [
      `Demo Shop listening on ${facts.shopUrl}`,
      `  Plinth          ${plinthUrl} (sandbox mode)`,
      app,
      `  Credentials     ${facts.credentials}`,
      `  Try it          open ${plinthUrl}/sandbox/, sign in as a test user and open "Demo Shop"`,
      `  Console         ${plinthUrl}/console/${appId ? `#/apps/${appId}` : ''}`,
    ]
  }
  const keyFile = new URL('/validation-key.txt', facts.shopUrl).href
  return [
    `Demo Shop listening on ${facts.shopUrl}`,
    `  Plinth          ${plinthUrl} (production mode)`,
    app,
    `  Credentials     ${facts.credentials}`,
    facts.validationKey
      ? `  Domain          ${keyFile} serves SHOP_VALIDATION_KEY: press Verify the domain in the portal`
      : `  Domain          set SHOP_VALIDATION_KEY to the app's validation key (the portal shows it) to serve ${keyFile}`,
    `  Try it          open ${plinthUrl}/, sign in and open "Demo Shop" from the apps (listed once its domain is verified)`,
    `  Portal          ${plinthUrl}/, signed in as the app's developer: Portal`,
  ]
}
