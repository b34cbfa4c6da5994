/**
 * Runs the Demo Shop against a running Plinth: `npm run demo`.
 *
 *   PLINTH_URL  Plinth's base URL (default http://127.0.0.1:8080)
 *   PORT, HOST  where the shop listens (default 3000 on 127.0.0.1)
 *   SHOP_URL    the shop's URL as the browser sees it (default http://127.0.0.1:PORT/)
 *   SHOP_API_KEY, SHOP_WALLET_SEED, SHOP_APP_ID   use this app instead of creating one (production: required)
 *   SHOP_VALIDATION_KEY   the app's validation key, served at /validation-key.txt for the portal's Verify
 *   PLINTH_ADMIN_TOKEN   when Plinth requires it for the sandbox API
 */
import { fileURLToPath } from 'node:url'
import { bannerLines, plinthMode } from './banner.js'
import { loadCredentials } from './credentials.js'
import { createShop } from './shop.js'

const CREDENTIALS_FILE = fileURLToPath(new URL('./.shop-credentials.json', import.meta.url))

async function main(): Promise<void> {
  const plinthUrl = (process.env.PLINTH_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')
  const port = Number(process.env.PORT ?? 3000)
  const host = process.env.HOST ?? '127.0.0.1'
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`PORT must be a port number, not ${process.env.PORT}`)
  const shopUrl = process.env.SHOP_URL ?? `http://127.0.0.1:${port}/`
  const log = (line: string) => process.stdout.write(`${line}\n`)

  const validationKey = process.env.SHOP_VALIDATION_KEY?.trim() || undefined
  const hasCredentials = Boolean(process.env.SHOP_API_KEY && process.env.SHOP_WALLET_SEED)

  const cannot = (error: unknown) => {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : ''
    return new Error(
      `Cannot set the shop up on Plinth at ${plinthUrl}: ${error instanceof Error ? error.message : String(error)}${cause}\n` +
        'Start Plinth first (npm start), or point PLINTH_URL at it.',
    )
  }
  const mode = await plinthMode(plinthUrl).catch((error: unknown) => {
    throw cannot(error)
  })
  if (mode === 'production' && !hasCredentials) {
    throw new Error(
      `Plinth at ${plinthUrl} is in production mode, where the shop cannot create its own app: register it in the portal ` +
        `at ${shopUrl} (docs/production.md, section 5), then give SHOP_APP_ID, SHOP_API_KEY, SHOP_WALLET_SEED and SHOP_VALIDATION_KEY.`,
    )
  }
  let loaded: Awaited<ReturnType<typeof loadCredentials>>
  try {
    loaded = await loadCredentials({ plinthUrl, file: CREDENTIALS_FILE, shopUrl, log })
  } catch (error) {
    throw cannot(error)
  }
  const { credentials, source } = loaded

  const { server } = createShop({ plinthUrl, apiKey: credentials.apiKey, walletSeed: credentials.walletSeed, validationKey, log })
  server.listen(port, host, () => {
    const lines = bannerLines({
      mode,
      plinthUrl,
      shopUrl,
      appId: credentials.appId,
      credentials:
        source === 'created'
          ? `created now, kept in ${CREDENTIALS_FILE} (mode 600)`
          : `from ${source === 'file' ? CREDENTIALS_FILE : 'the environment'}`,
      validationKey: validationKey !== undefined,
    })
    log(['', ...lines, ''].join('\n'))
  })

  const stop = () => {
    server.close(() => process.exit(0))
    server.closeAllConnections()
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

main().catch((error: unknown) => {
  process.stderr.write(`demo shop: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
