/**
 * Runs the Demo Shop against a running Plinth: `npm run demo`.
 *
 *   PLINTH_URL  Plinth's base URL (default http://127.0.0.1:8080)
 *   PORT, HOST  where the shop listens (default 3000 on 127.0.0.1)
 *   SHOP_URL    the shop's URL as the browser sees it (default http://127.0.0.1:PORT/)
 *   SHOP_API_KEY, SHOP_WALLET_SEED, SHOP_APP_ID   use this app instead of creating one
 *   PLINTH_ADMIN_TOKEN   when Plinth requires it for the sandbox API
 */
import { fileURLToPath } from 'node:url'
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

  let loaded: Awaited<ReturnType<typeof loadCredentials>>
  try {
    loaded = await loadCredentials({ plinthUrl, file: CREDENTIALS_FILE, shopUrl, log })
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : ''
    throw new Error(
      `Cannot set the shop up on Plinth at ${plinthUrl}: ${error instanceof Error ? error.message : String(error)}${cause}\n` +
        'Start Plinth first (npm start), or point PLINTH_URL at it.',
    )
  }
  const { credentials, source } = loaded

  const { server } = createShop({ plinthUrl, apiKey: credentials.apiKey, walletSeed: credentials.walletSeed, log })
  server.listen(port, host, () => {
    const appId = credentials.appId ?? '(from SHOP_APP_ID: not set)'
    log('')
    log(`Demo Shop listening on ${shopUrl}`)
    log(`  Plinth          ${plinthUrl}`)
    log(`  App             Demo Shop, app_id ${appId}`)
    log(
      source === 'created'
        ? `  Credentials     created now, kept in ${CREDENTIALS_FILE} (mode 600)`
        : `  Credentials     from ${source === 'file' ? CREDENTIALS_FILE : 'the environment'}`,
    )
    log(`  Try it          open ${plinthUrl}/sandbox/, sign in as a test user and open "Demo Shop"`)
    log(`  Console         ${plinthUrl}/console/${credentials.appId ? `#/apps/${credentials.appId}` : ''}`)
    log('')
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
