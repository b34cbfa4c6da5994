import { REDACTED } from './redact.js'

/**
 * A logged call as a curl command (GET /portal/apps/{app_id}/requests/{id}/curl, docs/portal.md,
 * "Copy as curl"). The credential is never in it: Plinth keeps only a hash of a server API key and
 * no access token at all, so the command names them as shell variables, `$PI_API_KEY` for a key's
 * call and `$PI_ACCESS_TOKEN` for a user's, for the developer to set. Every other part is quoted
 * for a POSIX shell, so nothing a caller sent (a memo with `'` or `$(…)`) runs when pasted.
 */

/** What of a log entry the command is made from. */
export interface CurlSource {
  method: string
  path: string
  query: string | null
  key_id: string | null
  user_uid: string | null
  request_headers: Record<string, string> | null
  request_body: string | null
}

/** Headers left out: the connection's own, the browser's, the credential and cookies, and the log's own request id. */
const LEFT_OUT =
  /^(host|content-length|connection|keep-alive|transfer-encoding|te|trailer|upgrade|expect|authorization|proxy-authorization|cookie|x-request-id|x-admin-token|accept-encoding|user-agent|origin|referer|sec-.*)$/

/** A word quoted for a POSIX shell: single quotes, each `'` written as `'\''`. */
export const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/**
 * The command, and whether it is the call exactly as made (false when the log stored a part of it
 * redacted or cut: the command then carries `[redacted]` where the secret was).
 */
export function curlCommand(entry: CurlSource, baseUrl: string): { curl: string; complete: boolean } {
  const url = `${baseUrl.replace(/\/+$/, '')}${entry.path}${entry.query === null ? '' : `?${entry.query}`}`
  const lines = [`curl ${entry.method === 'GET' ? '' : `-X ${entry.method} `}${shellQuote(url)}`]
  const scheme = credentialScheme(entry)
  // Double quotes, so the shell puts the variable in; the rest of the line is fixed text.
  if (scheme === 'Key') lines.push(`-H "Authorization: Key $PI_API_KEY"`)
  if (scheme === 'Bearer') lines.push(`-H "Authorization: Bearer $PI_ACCESS_TOKEN"`)
  const headers = Object.entries(entry.request_headers ?? {}).filter(([name]) => !LEFT_OUT.test(name))
  for (const [name, value] of headers.sort(([a], [b]) => a.localeCompare(b))) lines.push(`-H ${shellQuote(`${name}: ${value}`)}`)
  if (entry.request_body !== null) lines.push(`--data-raw ${shellQuote(entry.request_body)}`)
  const body = entry.request_body ?? ''
  const complete =
    ![entry.path, entry.query ?? '', body, ...headers.map(([, value]) => value)].some((part) => part.includes(REDACTED)) &&
    !body.endsWith('…') &&
    !body.endsWith('…[truncated]')
  return { curl: lines.join(' \\\n  '), complete }
}

/** The scheme the call authenticated with: stored as `Key [redacted]` or `Bearer [redacted]`, else told by who made it. */
function credentialScheme(entry: CurlSource): 'Key' | 'Bearer' | undefined {
  const stored = entry.request_headers?.authorization?.split(' ')[0]?.toLowerCase()
  if (stored === 'key') return 'Key'
  if (stored === 'bearer') return 'Bearer'
  if (entry.key_id !== null) return 'Key'
  if (entry.user_uid !== null) return 'Bearer'
  return undefined
}
