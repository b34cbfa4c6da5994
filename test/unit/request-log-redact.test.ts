import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { newSecret } from '../../src/lib/crypto.js'
import { captureBody, errorCodeOf, MAX_BODY_CHARS, redactText, storedBody } from '../../src/request-log/redact.js'
import { storedForms } from '../helpers/secret-forms.js'

describe('request log redaction (pure)', () => {
  const key = newSecret()
  const seed = Keypair.random().secret()
  const address = Keypair.random().publicKey()
  const txid = 'ab'.repeat(32)

  it('drops every secret, by name and by shape, and keeps what one debugs with', () => {
    const text = JSON.stringify({
      accessToken: 'short',
      api_key: 12345,
      nested: { walletSeed: 'x', Authorization: 'Key abc', note: `key ${key} and ${seed}` },
      list: [key, Buffer.from(key, 'base64url').toString('base64')],
      address,
      txid,
      memo: 'order 7',
    })
    const out = redactText(text)
    for (const secret of [key, seed]) for (const form of storedForms(secret)) assert.equal(out.includes(form), false, form)
    assert.equal(out.includes('short'), false)
    assert.equal(out.includes('12345'), false)
    assert.equal(out.includes('Key abc'), false)
    assert.ok(out.includes(address) && out.includes(txid) && out.includes('order 7'))
    assert.equal(JSON.parse(out).accessToken, '[redacted]')
    assert.equal(redactText(`txid=${txid}&access_token=abc&x=1`), `txid=${txid}&access_token=[redacted]&x=1`)
  })

  it('bounds a body, and never keeps the end of a body cut at capture', () => {
    const long = `${'word '.repeat(4000)}${key}`
    const captured = captureBody({ blob: long })
    assert.equal(captured.cut, true)
    const stored = storedBody(captured.text, captured.cut) ?? ''
    assert.ok(stored.length <= MAX_BODY_CHARS + 20)
    assert.match(stored, /…\[truncated\]$/)
    // A secret straddling the capture's cut: at most its first characters were captured, and those go too.
    const edge = `${'a '.repeat(8180)}${key}`
    const cut = captureBody(edge)
    assert.equal(cut.cut, true)
    assert.equal((storedBody(cut.text, cut.cut) ?? '').includes(key.slice(0, 8)), false)
    assert.equal(storedBody(undefined), null)
    assert.equal(storedBody(''), null)
  })

  it('reads the error code of an error answer only', () => {
    assert.equal(errorCodeOf(409, '{"error":"already_completed","error_message":"…"}'), 'already_completed')
    assert.equal(errorCodeOf(200, '{"error":"x"}'), null)
    assert.equal(errorCodeOf(500, 'not json'), null)
  })
})
