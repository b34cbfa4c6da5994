/** Scopes a user can grant an app, as seen on the live platform. */
export const SCOPES = ['payments', 'username', 'roles', 'wallet_address', 'in_app_notifications', 'platform', 'preferred_language'] as const
export type Scope = (typeof SCOPES)[number]

/** Sorted, without duplicates: the form scopes are stored and reported in. */
export function normalizeScopes(scopes: readonly string[]): string[] {
  return [...new Set(scopes)].sort()
}
