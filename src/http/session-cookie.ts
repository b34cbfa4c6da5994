import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * The session cookie of production's account routes (docs/accounts.md, "Sessions"). `__Host-`:
 * the browser keeps it only when it is `Secure`, has `Path=/` and no `Domain`, so no other host
 * (a sibling subdomain) can set or overwrite it. `HttpOnly`: no script reads it, an app's frame
 * included. `SameSite=Lax`: no other site's request carries it but a top-level GET navigation,
 * and no GET changes anything. Browsers treat http://localhost as secure, so the same cookie
 * works on a laptop.
 */
export const SESSION_COOKIE = '__Host-plinth_session'

const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** The session token the request's Cookie header carries, if it is shaped like one. */
export function sessionToken(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie
  if (header === undefined || header.length > 8192) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue
    const value = part.slice(eq + 1).trim()
    return TOKEN.test(value) ? value : undefined
  }
  return undefined
}

export function setSessionCookie(reply: FastifyReply, token: string, maxAgeSeconds: number): void {
  reply.header(
    'set-cookie',
    `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; Secure; SameSite=Lax`,
  )
  reply.header('cache-control', 'no-store')
}

export function clearSessionCookie(reply: FastifyReply): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`)
  reply.header('cache-control', 'no-store')
}
