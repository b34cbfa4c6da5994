import { VERSION } from '../app.js'
import type { Config } from '../config.js'
import type { DemoInfo } from '../sandbox/world/demo-seed.js'

/**
 * What a platform prints once it listens: `npm start` (server.ts) and `plinth start` print the
 * same. The demo app's first key is printed only to a terminal: standard output that is a pipe
 * usually ends in a log store, where a key must not go.
 */
export function banner(config: Config, kind: string, demo: DemoInfo | undefined, readyMs: number, terminal: boolean): string {
  const url = config.publicUrl
  const storage =
    kind === 'postgres'
      ? 'PostgreSQL server (DATABASE_URL)'
      : config.dataDir === 'memory'
        ? 'embedded PostgreSQL, in memory'
        : `embedded PostgreSQL in ${config.dataDir}`
  const lines = [
    '',
    `Plinth ${VERSION}: ${config.mode} mode, ${storage}, ready in ${readyMs} ms`,
    `  API base URL   ${url}/v2`,
    `  Docs           ${url}/docs   (OpenAPI: ${url}/v2/openapi.json)`,
    `  Ledger         ${url}/ledger   (Horizon-compatible; client SDK: ${url}/sdk/pi-sdk.js)`,
  ]
  if (config.mode === 'sandbox') {
    lines.push(`  Sandbox        ${url}/sandbox/   (the platform's browser: sign in as a user, open an app)`)
    lines.push(`  Console        ${url}/console/   (apps, keys, users, payments, ads, notifications, clock)`)
  } else {
    lines.push(`  Platform       ${url}/   (people sign up and in, open apps, pay; docs/accounts.md)`)
    lines.push('  First steps    npx plinth admin --help   (the operator, developers, apps, money: docs/production.md)')
  }
  if (demo !== undefined) {
    lines.push(`  Demo app       ${demo.appName}, app_id ${demo.appId}`)
    const adminHeader = config.adminToken === undefined ? '' : ` -H "X-Admin-Token: $PLINTH_ADMIN_TOKEN"`
    const mint = `curl -s -X POST ${url}/sandbox/apps/${demo.appId}/keys -H 'X-Plinth-Client: curl'${adminHeader}`
    lines.push(
      demo.apiKey !== undefined && terminal
        ? `                 server API key ${demo.apiKey}   (shown once: save it)`
        : demo.apiKey !== undefined
          ? `                 its server API key is printed only to a terminal; make one: ${mint}`
          : `                 its first server API key was shown at first start; make another: ${mint}`,
    )
    lines.push(`  Demo user      ${demo.username}, user_id ${demo.userId}`)
    lines.push('  Sign the demo user in to the demo app (what the client SDK does after the consent dialog):')
    lines.push(
      `    curl -s -X POST ${url}/sandbox/apps/${demo.appId}/authenticate${adminHeader} -H 'content-type: application/json' -d '{"user_id":"${demo.userId}","scopes":["username","payments"]}'`,
    )
    lines.push(`  then: curl -s ${url}/v2/me -H 'Authorization: Bearer <accessToken>'`)
  }
  lines.push('')
  return `${lines.join('\n')}\n`
}
