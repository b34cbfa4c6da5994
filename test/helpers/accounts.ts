import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { adminServiceFactory } from '../../src/admin/admin-service.js'
import type { TestPlatform } from './platform.js'

export const SESSION_COOKIE = '__Host-plinth_session'
/** A password zxcvbn scores 4: four unrelated words. */
export const GOOD_PASSWORD = 'lantern orbit velvet quarry'

let counter = 0
/** A username no other test of this process uses. */
export const freshName = (prefix = 'p') => `${prefix}_${process.pid}_${++counter}_${Math.floor(Math.random() * 1e6)}`

export interface Answer {
  status: number
  body: Record<string, unknown> & { error?: string; error_message?: string }
  headers: Record<string, string | string[] | number | undefined>
}

/** The session token a Set-Cookie header sets, or '' when it clears the cookie; undefined when it sets none. */
export function cookieOf(headers: Answer['headers']): string | undefined {
  const raw = headers['set-cookie']
  const line = Array.isArray(raw) ? raw[0] : raw
  if (typeof line !== 'string') return undefined
  const match = new RegExp(`^${SESSION_COOKIE}=([^;]*)`).exec(line)
  return match?.[1]
}

/**
 * A browser of the platform's own page, over inject: same-origin JSON requests carrying the
 * session cookie it was last given (or the one set with `use`).
 */
export function accountBrowser(app: () => FastifyInstance) {
  let token: string | undefined
  const call = async (
    method: 'GET' | 'POST' | 'DELETE' | 'PATCH',
    url: string,
    payload?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const response = await app().inject({
      method,
      url,
      headers: {
        'sec-fetch-site': 'same-origin',
        ...(method === 'GET' ? {} : { 'content-type': 'application/json' }),
        ...(token === undefined ? {} : { cookie: `${SESSION_COOKIE}=${token}` }),
        ...headers,
      },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    })
    const set = cookieOf(response.headers)
    if (set !== undefined) token = set === '' ? undefined : set
    // A JSON lines export (operator routes) is not one JSON value: its text is kept instead.
    const json = String(response.headers['content-type'] ?? '').startsWith('application/json')
    const body = response.body === '' ? {} : json ? JSON.parse(response.body) : { text: response.body }
    return { status: response.statusCode, body, headers: response.headers }
  }
  return {
    call,
    get token() {
      return token
    },
    use(value: string | undefined) {
      token = value
    },
    signup: (username: string, password = GOOD_PASSWORD) => call('POST', '/account/signup', { username, password }),
    signin: (username: string, password = GOOD_PASSWORD) => call('POST', '/account/signin', { username, password }),
    account: () => call('GET', '/account'),
  }
}

export type AccountBrowser = ReturnType<typeof accountBrowser>

/** The operator's commands over a test platform's database (what `plinth admin` runs). */
export function adminOf(platform: TestPlatform) {
  return adminServiceFactory({
    db: platform.db,
    clock: platform.clock,
    secretKey: platform.secretKey,
    publicUrl: 'http://plinth.test',
    actor: 'test',
  })
}

/** Signs a new user up and answers the browser, signed in. */
export async function signedUp(app: () => FastifyInstance, username = freshName()): Promise<AccountBrowser & { username: string }> {
  const browser = accountBrowser(app)
  const answer = await browser.signup(username)
  assert.equal(answer.status, 201, JSON.stringify(answer.body))
  return Object.assign(browser, { username })
}
