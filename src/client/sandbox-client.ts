/**
 * A typed client of the sandbox API over fetch: what `startPlinth()` hands a test suite and
 * what the `plinth` CLI calls. Every call answers the platform's JSON; a refusal throws a
 * SandboxError carrying the platform's `error` code, message and status.
 */
export class SandboxError extends Error {
  override name = 'SandboxError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

export interface SandboxApp {
  app_id: string
  name: string
  api_key: string
  wallet: { address: string; seed: string }
}
export interface SandboxUser {
  user_id: string
  username: string
  wallet: { address: string; seed: string }
}
export interface SandboxClock {
  now: string
  timestamp: number
  offset_seconds: number
}
export interface Snapshot {
  name: string
  created_at: string
}
export interface Fault {
  id: string
  app_id: string
  match: { route?: string; operation_id?: string; user_uid?: string }
  effect: { status: number; retry_after_seconds?: number } | { delay_ms: number } | { drop: true }
  when: 'before' | 'after'
  times_left: number | null
  probability: number
  created_at: string
}
export interface RequestLogEntry {
  id: string
  at: string
  method: string
  path: string
  status: number
  error_code: string | null
  latency_ms: number
  request_id: string
  fault: string | null
}

export interface SandboxClientOptions {
  /** PLINTH_ADMIN_TOKEN of the platform, when it has one. */
  adminToken?: string | undefined
  /** Sent as X-Plinth-Client (`sandbox-client` when absent). */
  clientName?: string | undefined
}

export function createSandboxClient(baseUrl: string, options: SandboxClientOptions = {}) {
  const base = baseUrl.replace(/\/+$/, '')
  /**
   * One call; the answer's text. `authorization` calls as an app (`Key …`) or a user (`Bearer …`)
   * instead of with the admin token; a string body is sent as is (a form, a file already JSON).
   */
  async function callText(
    method: string,
    path: string,
    body?: unknown,
    extra: { authorization?: string; contentType?: string } = {},
  ): Promise<string> {
    // Names the client: a body-less POST without it is refused (docs/security.md, "Requests from other sites").
    const headers: Record<string, string> = { 'x-plinth-client': options.clientName ?? 'sandbox-client' }
    if (extra.authorization !== undefined) headers.authorization = extra.authorization
    else if (options.adminToken !== undefined) headers['x-admin-token'] = options.adminToken
    if (body !== undefined) headers['content-type'] = extra.contentType ?? 'application/json'
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
    const response = await fetch(`${base}${path}`, { method, headers, ...(payload === undefined ? {} : { body: payload }) })
    const text = await response.text()
    if (!response.ok) {
      let error: { error?: unknown; error_message?: unknown; title?: unknown; detail?: unknown } = {}
      try {
        error = (JSON.parse(text) ?? {}) as typeof error
      } catch {
        // Not JSON (a proxy's page): the status says it.
      }
      // The platform's shape, or notify's {"error": text}, or a Horizon problem (/ledger).
      const code = typeof error.error_message === 'string' && typeof error.error === 'string' ? error.error : 'http_error'
      const message =
        typeof error.error_message === 'string'
          ? error.error_message
          : typeof error.detail === 'string'
            ? error.detail
            : typeof error.error === 'string'
              ? error.error
              : `${method} ${path} answered ${response.status}`
      throw new SandboxError(response.status, code, message)
    }
    return text
  }
  async function call<T>(
    method: string,
    path: string,
    body?: unknown,
    extra?: { authorization?: string; contentType?: string },
  ): Promise<T> {
    const text = await callText(method, path, body, extra)
    return (text === '' ? undefined : JSON.parse(text)) as T
  }
  const id = encodeURIComponent

  return {
    call,
    callText,
    /** The demo app and user, and the demo app wallet's seed (404 app_not_found when the platform has none). */
    demo: () =>
      call<{ app_id: string; app_name: string; user_id: string; username: string; app_wallet_seed: string | null }>('GET', '/sandbox/demo'),
    apps: {
      create: (name: string, url?: string) => call<SandboxApp>('POST', '/sandbox/apps', url === undefined ? { name } : { name, url }),
      list: () => call<{ apps: { app_id: string; name: string; wallet_address: string }[] }>('GET', '/sandbox/apps'),
    },
    keys: {
      create: (appId: string) => call<{ key_id: string; api_key: string }>('POST', `/sandbox/apps/${id(appId)}/keys`),
      revoke: (appId: string, keyId: string) => call<unknown>('DELETE', `/sandbox/apps/${id(appId)}/keys/${id(keyId)}`),
    },
    users: {
      create: (username: string) => call<SandboxUser>('POST', '/sandbox/users', { username }),
      find: (username: string) =>
        call<{ users: { user_id: string; username: string }[] }>('GET', `/sandbox/users?username=${id(username)}`),
    },
    /** Signs a user in to an app, as the client SDK does after the consent dialog. */
    authenticate: (appId: string, userId: string, scopes: string[] = ['username', 'payments']) =>
      call<{ accessToken: string; user: { uid: string } }>('POST', `/sandbox/apps/${id(appId)}/authenticate`, { user_id: userId, scopes }),
    clock: {
      show: () => call<SandboxClock>('GET', '/sandbox/clock'),
      advance: (seconds: number) => call<SandboxClock>('POST', '/sandbox/clock', { advance_seconds: seconds }),
      reset: () => call<SandboxClock>('POST', '/sandbox/clock/reset'),
    },
    ledger: {
      fund: (address: string, amount: number | string) =>
        call<{ address: string; balance: string }>('POST', '/sandbox/ledger/fund', { address, amount: String(amount) }),
    },
    reset: (seed: 'demo' | 'empty' = 'empty') =>
      call<{
        seed: string
        took_ms: number
        demo?: { app_id: string; app_name: string; api_key: string; user_id: string; username: string }
      }>('POST', '/sandbox/reset', { seed }),
    snapshots: {
      list: () => call<{ snapshots: Snapshot[] }>('GET', '/sandbox/snapshots'),
      save: (name: string, replace = false) => call<Snapshot>('POST', '/sandbox/snapshots', replace ? { name, replace } : { name }),
      restore: (name: string) => call<{ name: string; took_ms: number }>('POST', `/sandbox/snapshots/${id(name)}/restore`),
      delete: (name: string) => call<undefined>('DELETE', `/sandbox/snapshots/${id(name)}`),
      /** The snapshot file's JSON text, as the platform wrote it. */
      export: (name: string) => callText('GET', `/sandbox/snapshots/${id(name)}/export`),
      /** `file` is the JSON text of an export. */
      import: (file: string, query: { name?: string; replace?: boolean } = {}) => {
        const params = new URLSearchParams()
        if (query.name !== undefined) params.set('name', query.name)
        if (query.replace === true) params.set('replace', 'true')
        const qs = params.toString()
        return call<Snapshot & { bytes: number }>('POST', `/sandbox/snapshots/import${qs === '' ? '' : `?${qs}`}`, file)
      },
    },
    faults: {
      add: (fault: Record<string, unknown>) => call<Fault>('POST', '/sandbox/faults', fault),
      delete: (faultId: string) => call<undefined>('DELETE', `/sandbox/faults/${id(faultId)}`),
      list: (appId?: string) => call<{ faults: Fault[] }>('GET', `/sandbox/faults${appId === undefined ? '' : `?app_id=${id(appId)}`}`),
      clear: (appId?: string) => call<undefined>('DELETE', `/sandbox/faults${appId === undefined ? '' : `?app_id=${id(appId)}`}`),
    },
    requests: {
      list: (appId: string, query: { after?: string; limit?: number } = {}) => {
        const params = new URLSearchParams()
        if (query.after !== undefined) params.set('after', query.after)
        if (query.limit !== undefined) params.set('limit', String(query.limit))
        const qs = params.toString()
        return call<{ requests: RequestLogEntry[]; next_cursor: string | null; newest_cursor?: string | null }>(
          'GET',
          `/sandbox/apps/${id(appId)}/requests${qs === '' ? '' : `?${qs}`}`,
        )
      },
    },
  }
}

export type SandboxClient = ReturnType<typeof createSandboxClient>
