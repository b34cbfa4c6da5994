type SecurityRequirement = { [scheme: string]: string[] }

/** Security requirement objects for the OpenAPI document, matching the `auth` route config. */
export const KEY_SECURITY: SecurityRequirement[] = [{ ServerApiKey: [] }]
export const TOKEN_SECURITY: SecurityRequirement[] = [{ AccessToken: [] }]
export const ADMIN_SECURITY: SecurityRequirement[] = [{ AdminToken: [] }, {}]
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
    description: "A user's access token for one app, from the client SDK's `authenticate`.",
  },
  AdminToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Admin-Token',
    description: 'Required on the sandbox API only when the platform runs with PLINTH_ADMIN_TOKEN set.',
  },
} as const
