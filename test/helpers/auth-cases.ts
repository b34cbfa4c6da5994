import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'

export interface AuthFixture {
  app: FastifyInstance
  /** A working server API key and access token (of any app). */
  apiKey: string
  accessToken: string
  /** A revoked server API key and a revoked access token. */
  revokedKey: string
  revokedToken: string
}

function tamper(secret: string): string {
  const last = secret.at(-1) === 'A' ? 'B' : 'A'
  return `${secret.slice(0, -1)}${last}`
}

/**
 * The authentication cases every protected route must pass, run against one route.
 * `kind` says which credential the route takes; the other one must be refused.
 */
export function authCases(
  kind: 'key' | 'token',
  route: Pick<InjectOptions, 'method' | 'url' | 'payload'>,
  fixture: () => AuthFixture,
): void {
  const call = async (authorization: string | undefined) => {
    const { app } = fixture()
    const response = await app.inject({ ...route, headers: authorization === undefined ? {} : { authorization } })
    return { status: response.statusCode, body: response.json() as { error: string; error_message: string } }
  }
  const good = () => (kind === 'key' ? `Key ${fixture().apiKey}` : `Bearer ${fixture().accessToken}`)
  const wrongScheme = () => (kind === 'key' ? `Bearer ${fixture().accessToken}` : `Key ${fixture().apiKey}`)
  const scheme = kind === 'key' ? 'Key' : 'Bearer'
  const secret = () => (kind === 'key' ? fixture().apiKey : fixture().accessToken)
  const label = `${route.method} ${route.url}`

  it(`${label}: no Authorization header is 401 missing_authorization`, async () => {
    const { status, body } = await call(undefined)
    assert.equal(status, 401)
    assert.equal(body.error, 'missing_authorization')
    assert.equal(body.error_message, 'This endpoint requires either a Server API Key or Access Token authorization.')
  })

  for (const header of [scheme, `${scheme} `, 'garbage', `${scheme} a b`, `Basic dXNlcjpwYXNz`, `${scheme} ${'x'.repeat(600)}`]) {
    it(`${label}: malformed header ${JSON.stringify(header.slice(0, 20))} is 401 missing_authorization`, async () => {
      const { status, body } = await call(header)
      assert.equal(status, 401)
      assert.equal(body.error, 'missing_authorization')
    })
  }

  it(`${label}: the other credential type is 401 wrong_authorization_scheme`, async () => {
    const { status, body } = await call(wrongScheme())
    assert.equal(status, 401)
    assert.equal(body.error, 'wrong_authorization_scheme')
  })

  const invalid = kind === 'key' ? 'invalid_api_key' : 'invalid_access_token'
  it(`${label}: an unknown credential is 401 ${invalid}`, async () => {
    const { status, body } = await call(`${scheme} ${'Z'.repeat(43)}`)
    assert.equal(status, 401)
    assert.equal(body.error, invalid)
  })

  it(`${label}: a tampered credential is 401 ${invalid}`, async () => {
    const { status, body } = await call(`${scheme} ${tamper(secret())}`)
    assert.equal(status, 401)
    assert.equal(body.error, invalid)
  })

  it(`${label}: a revoked credential is 401 ${invalid}`, async () => {
    const revoked = kind === 'key' ? fixture().revokedKey : fixture().revokedToken
    const { status, body } = await call(`${scheme} ${revoked}`)
    assert.equal(status, 401)
    assert.equal(body.error, invalid)
  })

  it(`${label}: the scheme name is case-insensitive and a valid credential passes authentication`, async () => {
    const lower = good().replace(scheme, scheme.toLowerCase())
    const { status, body } = await call(lower)
    // Past authentication the route may still refuse (an unknown id is a 404), but never with a 401.
    assert.notEqual(status, 401, `refused as unauthenticated: ${JSON.stringify(body)}`)
    assert.ok(status < 500)
  })
}
