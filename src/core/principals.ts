/**
 * Who a request acts as, once its credential is checked: the app (a server API key) or a user of
 * one app (an access token). Services take these; only src/http/ reads them off a request.
 */
export interface KeyPrincipal {
  kind: 'key'
  appId: string
  keyId: string
}

export interface TokenPrincipal {
  kind: 'token'
  tokenId: string
  appId: string
  userId: string
  uid: string
  username: string
  scopes: string[]
  expiresAt: Date
}

/**
 * A signed-in person, in the platform's own pages (production's account routes): a session cookie,
 * or, on `/portal` routes only, a personal access token of theirs (`token`; `sessionId` is then the
 * token's id, which no session has, so nothing that needs a session's re-authentication passes).
 */
export interface SessionPrincipal {
  kind: 'session'
  sessionId: string
  userId: string
  username: string
  roles: string[]
  token?: PersonalTokenGrant
}

/** What a personal access token allows: `read` is GET and HEAD only, `write` what the portal session may do. */
export type PersonalTokenScope = 'read' | 'write'
export interface PersonalTokenGrant {
  id: string
  scope: PersonalTokenScope
}

/** A personal access token checked: the person it acts as, or why it is refused. */
export type PersonalTokenCheck = SessionPrincipal | 'expired' | 'suspended' | undefined

/**
 * Why a session cookie's session is over, said to the browser that holds its token (docs/accounts.md,
 * "Sessions"): unused past the idle timeout, past its absolute lifetime, ended (a sign-out here or
 * elsewhere, sign out everywhere, a password change or reset), or its user suspended.
 */
export type SessionEnd = 'idle' | 'expired' | 'signed_out' | 'suspended'

/** A credential that is genuine but refused: its app or its user is suspended by an operator (production). */
export type Suspended = 'app_suspended' | 'user_suspended'
export type KeyCheck = KeyPrincipal | 'app_suspended' | undefined
export type TokenCheck = TokenPrincipal | 'expired' | Suspended | undefined

/** What the authentication hook needs from the identity and apps domains: a credential to a principal. */
export interface Authenticator {
  verifyApiKey(key: string): Promise<KeyCheck>
  verifyAccessToken(token: string): Promise<TokenCheck>
  /**
   * The app a refused key belongs to, for its request log only (docs/api.md, "Request log"): a
   * revoked key of it, or a key that starts as exactly one of its keys does. Never told to the caller.
   */
  identifyRefusedKey?(key: string): Promise<{ appId: string; keyId: string } | undefined>
}
