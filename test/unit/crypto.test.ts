import assert from 'node:assert/strict'
import crypto, { createHash, randomBytes } from 'node:crypto'
import { syncBuiltinESMExports } from 'node:module'
import { describe, it, mock } from 'node:test'
import { constantTimeEqual, decryptSecret, encryptSecret, newId, newSecret, newUid, sha256Hex } from '../../src/lib/crypto.js'

describe('crypto', () => {
  it('makes secrets of 256 bits, never the same twice', () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => newSecret()))
    assert.equal(secrets.size, 1000)
    for (const secret of secrets) assert.equal(Buffer.from(secret, 'base64url').length, 32)
  })

  it('makes prefixed ids and UUID uids', () => {
    assert.match(newId('app'), /^app_[0-9a-f]{32}$/)
    assert.match(newUid(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })

  it('hashes to 64 hex characters, deterministically', () => {
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it('hashes as createHash does, for every text oddity (the one-shot crypto.hash is used where Node has it)', () => {
    const texts = [
      '',
      'abc',
      '\uFEFFbom',
      'nul\u0000inside',
      'lone \uD800 high',
      'lone \uDC00 low',
      '\uDBFF\uDFFF',
      'é'.repeat(5000),
      'x'.repeat(1 << 16),
    ]
    for (const text of texts) {
      assert.equal(sha256Hex(text), createHash('sha256').update(text, 'utf8').digest('hex'), JSON.stringify(text.slice(0, 20)))
    }
  })

  it('compares strings of any lengths', () => {
    assert.equal(constantTimeEqual('token', 'token'), true)
    assert.equal(constantTimeEqual('token', 'tokeN'), false)
    assert.equal(constantTimeEqual('token', 'token-longer'), false)
    assert.equal(constantTimeEqual('', ''), true)
  })

  it('compares with crypto.timingSafeEqual on the two SHA-256 digests, whatever the lengths (no early answer on a length difference)', () => {
    const timingSafeEqual = mock.method(crypto, 'timingSafeEqual')
    // src/lib/crypto.ts imports it by name: make the named export the spy.
    syncBuiltinESMExports()
    try {
      const cases: [string, string, boolean][] = [
        ['token', 'token', true],
        ['token', 'tokeN', false],
        ['token', 'token-longer', false],
        ['', 'x'.repeat(10_000), false],
        ['', '', true],
      ]
      for (const [a, b, expected] of cases) {
        const before = timingSafeEqual.mock.callCount()
        assert.equal(constantTimeEqual(a, b), expected)
        assert.equal(timingSafeEqual.mock.callCount(), before + 1, `one timingSafeEqual for ${a.length} and ${b.length} characters`)
        const call = timingSafeEqual.mock.calls.at(-1)
        assert.deepEqual(call?.arguments, [createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest()])
        assert.equal(call?.result, expected)
      }
    } finally {
      timingSafeEqual.mock.restore()
      syncBuiltinESMExports()
    }
  })

  it('seals and opens a secret, and refuses a wrong key, a wrong context or a changed byte', () => {
    const key = randomBytes(32)
    const sealed = encryptSecret(key, 'SBSECRET', 'user-wallet:usr_1')
    assert.doesNotMatch(sealed, /SBSECRET/)
    assert.equal(decryptSecret(key, sealed, 'user-wallet:usr_1'), 'SBSECRET')
    assert.notEqual(encryptSecret(key, 'SBSECRET', 'user-wallet:usr_1'), sealed, 'a fresh IV each time')
    assert.throws(() => decryptSecret(randomBytes(32), sealed, 'user-wallet:usr_1'))
    assert.throws(() => decryptSecret(key, sealed, 'user-wallet:usr_2'))
    const parts = sealed.split('.')
    const body = Buffer.from(parts[3] ?? '', 'base64url')
    body[0] = (body[0] ?? 0) ^ 1
    parts[3] = body.toString('base64url')
    assert.throws(() => decryptSecret(key, parts.join('.'), 'user-wallet:usr_1'))
    assert.throws(() => decryptSecret(key, 'v2.a.b.c', 'user-wallet:usr_1'), /unknown sealed secret format/)
  })
})
