import type { SandboxClient } from '../client/sandbox-client.js'
import { EXIT } from './usage.js'

/** `plinth logs tail`: prints an app's request log as calls arrive, until Ctrl-C. */
export async function tail(api: SandboxClient, appId: string, json: boolean, out: (line: string) => void): Promise<number> {
  let stopped = false
  process.once('SIGINT', () => {
    stopped = true
  })
  // Start from the newest entry: only calls made from now on are printed.
  let after = (await api.requests.list(appId, { limit: 1 })).newest_cursor ?? undefined
  while (!stopped) {
    const page = await api.requests.list(appId, after === undefined ? { limit: 100 } : { after, limit: 100 })
    for (const entry of page.requests) {
      out(
        json
          ? JSON.stringify(entry)
          : `${entry.at}  ${entry.status}  ${entry.method} ${entry.path}  ${entry.latency_ms} ms${entry.error_code === null ? '' : `  ${entry.error_code}`}${entry.fault === null ? '' : '  [injected fault]'}`,
      )
    }
    if (page.next_cursor !== null) after = page.next_cursor
    if (page.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 500))
  }
  return EXIT.ok
}
