type SecurityRequirement = { [scheme: string]: string[] }

/**
 * Security requirement objects for the OpenAPI document, matching the `auth` route config.
 * Token routes get theirs from their `scope` (http/auth.ts sets it): `tokenSecurity`.
 */
export const KEY_SECURITY: SecurityRequirement[] = [{ ServerApiKey: [] }]
export const ADMIN_SECURITY: SecurityRequirement[] = [{ AdminToken: [] }, {}]
export const tokenSecurity = (scope: string): SecurityRequirement[] => [{ AccessToken: scope === 'none' ? [] : [scope] }]
/** The line a token route's OpenAPI description gets about its scope. */
export const scopeDescription = (scope: string): string =>
  scope === 'none'
    ? 'Access token scope: none needed (any access token of the user).'
    : `Access token scope: \`${scope}\` (a token without it is refused with 401 \`missing_scope\`).`
export const SECURITY_SCHEMES = {
  ServerApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: "The app's server API key, sent as `Authorization: Key <server API key>`. Never send it from a browser.",
  },
  AccessToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      "A user's access token for one app, from the client SDK's `authenticate`. The scopes an operation lists are the ones the " +
      'token must have been granted; without them it answers 401 `missing_scope`.',
  },
  AdminToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Admin-Token',
    description: 'Required on the sandbox API only when the platform runs with PLINTH_ADMIN_TOKEN set.',
  },
  Session: {
    type: 'apiKey',
    in: 'cookie',
    name: '__Host-plinth_session',
    description:
      "Production's account routes: the session cookie that POST /account/signup and /account/signin set. Sent by the platform's own " +
      'pages only (same origin, application/json); docs/accounts.md.',
  },
  PersonalToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      'The /portal routes only: a personal access token (`plinth_pat_…`, from POST /account/tokens), sent as `Authorization: Bearer <token>` ' +
      'by scripts and `plinth portal`. It acts as its account; a `read` token may only GET (403 `read_only_token`). docs/portal.md.',
  },
} as const

/** The security requirement of a session route. */
export const SESSION_SECURITY = [{ Session: [] }]
/** The /portal routes': the session cookie, or a personal access token instead. */
export const PORTAL_SECURITY: SecurityRequirement[] = [{ Session: [] }, { PersonalToken: [] }]
