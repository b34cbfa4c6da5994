import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { encodeCursor } from '../../src/core/cursors.js'
import { newId, newSecret, randomToken } from '../../src/lib/crypto.js'
import { newNotificationIds, encodeCursor as notificationCursor } from '../../src/notifications/notifications-service.js'
import {
  CAPTURE_CHARS,
  captureBody,
  errorCodeOf,
  MAX_BODY_CHARS,
  REDACTED,
  redactText,
  storedBody,
  storedPath,
  storedRequestId,
} from '../../src/request-log/redact.js'
import { loggedForms } from '../helpers/secret-forms.js'

const key = newSecret()
const token = newSecret()
const seed = Keypair.random().secret()
const secrets = [key, token, seed]
const address = Keypair.random().publicKey()
const txid = 'ab'.repeat(32)
const b64 = (secret: string) => Buffer.from(secret, 'base64url').toString('base64')
/** Every character percent-encoded, as a hostile client may send it. */
const percentAll = (text: string) => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('')

/** No form of any secret (secret-forms.ts: as handed out, its head, its bytes in hex and base64, …) is in `out`. */
function assertNoSecret(out: string, label: string, from: string[] = secrets): void {
  for (const secret of from) {
    for (const form of loggedForms(secret))
      assert.equal(out.includes(form), false, `${label}: a form of a secret survived (${form}) in ${out.slice(0, 300)}`)
  }
}

/** What one debugs with, and looks like a secret to a careless rule: it must come through untouched. */
const legitimate = (): Record<string, string> => {
  const at = new Date('2026-11-26T12:00:00.000Z')
  const [notification = ''] = newNotificationIds(at, 1)
  return {
    payment_id: randomToken(18),
    ad_id: randomToken(16),
    txid,
    upper_txid: txid.toUpperCase(),
    address,
    uid: randomUUID(),
    key_id: newId('key'),
    app_id: newId('app'),
    notification,
    notification_cursor: notificationCursor({ created_at: at, id: notification }),
    request_cursor: encodeCursor('payments', newId('app'), { n: 1_795_000_000_000_000, id: randomToken(18) }),
    link: `https://plinth.example/ledger/transactions/${txid}`,
    ledger_path: `/ledger/accounts/${address}/payments`,
    snake: 'payment_confirmation_callback_for_order_number_twelve',
    sentence: 'The quick brown fox jumps over the lazy dog',
  }
}

describe('request log redaction (pure)', () => {
  it('drops every secret, by name and by shape, and keeps what one debugs with', () => {
    const text = JSON.stringify({
      accessToken: 'short',
      api_key: 12345,
      nested: { walletSeed: 'x', Authorization: 'Key abc', note: `key ${key} and ${seed}` },
      list: [key, b64(key)],
      address,
      txid,
      memo: 'order 7',
    })
    const out = storedBody(text) ?? ''
    assertNoSecret(out, 'json')
    assert.equal(out.includes('short'), false)
    assert.equal(out.includes('12345'), false)
    assert.equal(out.includes('Key abc'), false)
    assert.ok(out.includes(address) && out.includes(txid) && out.includes('order 7'))
    assert.equal(JSON.parse(out).accessToken, REDACTED)
    assert.equal(redactText(`txid=${txid}&access_token=abc&x=1`), `txid=${txid}&access_token=[redacted]&x=1`)
  })

  it('redacts a whole array, object or number under a secret-named member, and the result is still JSON', () => {
    assert.deepEqual(JSON.parse(storedBody('{"token":["s1","s2"]}') ?? ''), { token: REDACTED })
    const nested = {
      tokens: [['s1', ['s2', { deep: 's3' }]], 's4'],
      api_key: { primary: 's5', backup: ['s6'] },
      password: 42,
      seed: null,
      list: [{ secret: ['s7', ['s8']] }, [[{ private_key: 's9' }]]],
      keep: ['a', ['b', { c: 'd' }]],
    }
    const out = storedBody(JSON.stringify(nested)) ?? ''
    for (const value of ['s1', 's2', 's3', 's4', 's5', 's6', '42', 's7', 's8', 's9'])
      assert.equal(out.includes(`"${value}"`) || out.includes(':42'), false, value)
    assert.deepEqual(JSON.parse(out), {
      tokens: REDACTED,
      api_key: REDACTED,
      password: REDACTED,
      seed: REDACTED,
      list: [{ secret: REDACTED }, [[{ private_key: REDACTED }]]],
      keep: ['a', ['b', { c: 'd' }]],
    })
    // The same body cut at capture (not JSON any more): the value still goes whole, brackets and all.
    const cut = redactText('{"token":["s1",["s2","s3"],{"x":"s4"}],"memo":"m","secret":["s5","s6')
    for (const value of ['s1', 's2', 's3', 's4', 's5', 's6']) assert.equal(cut.includes(value), false, `${value} in ${cut}`)
    assert.match(cut, /"memo":"m"/)
  })

  it('redacts a key, token or seed by its shape anywhere: any depth, member names, form bodies, raw text, escaped and percent-encoded', () => {
    let deep: unknown = { value: `x ${key} y` }
    for (let i = 0; i < 20; i++) deep = i % 2 === 0 ? [deep, 'filler'] : { level: deep }
    const bodies: Record<string, string> = {
      deep: JSON.stringify(deep),
      name: JSON.stringify({ [key]: 1, [seed]: { [token]: true } }),
      form: `amount=1&memo=${key}&note=${encodeURIComponent(`seed ${seed}`)}&x=${encodeURIComponent(b64(token))}`,
      raw: `hello ${key}\n${seed}\t${token}.`,
      unicodeEscaped: `{"memo":"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"}`,
      slashEscaped: `{"memo":"${b64(token).replaceAll('/', '\\/')}"}`,
      percentAll: `{"callback":"https://shop.example/cb?k=${percentAll(key)}"}`,
      percentStandardBase64: `{"callback":"https://shop.example/cb?k=${encodeURIComponent(b64(key))}"}`,
      doublePercent: `{"callback":"https://shop.example/cb?k=${encodeURIComponent(encodeURIComponent(b64(seed)))}"}`,
      base64OfText: JSON.stringify({ blob: Buffer.from(`{"api":"${key}"}`).toString('base64') }),
      glued: JSON.stringify({ memo: `order7${key}end`, other: `${seed}xyz` }),
      inUrl: JSON.stringify({ callback: `https://shop.example/hook/${token}?seed=${seed}` }),
    }
    for (const [label, body] of Object.entries(bodies)) {
      const out = storedBody(body) ?? ''
      assertNoSecret(out, label)
      assert.match(out, /\[redacted\]/, label)
      // Raw text aside, what was JSON is still JSON.
      if (body.startsWith('{')) assert.doesNotThrow(() => JSON.parse(out), label)
    }
  })

  it('keeps payment ids, txids, public keys, uids, ids, cursors and paths, in bodies and paths alike', () => {
    const values = legitimate()
    const body = JSON.stringify(values)
    assert.equal(storedBody(body), body)
    assert.equal(storedBody(new URLSearchParams(values).toString()), new URLSearchParams(values).toString())
    for (const [label, value] of Object.entries(values)) {
      assert.equal(redactText(value), value, label)
      if (!value.includes('/')) assert.equal(storedPath(`/v2/payments/${value}/approve`), `/v2/payments/${value}/approve`, label)
    }
    assert.equal(storedPath(`/ledger/accounts/${address}/payments`), `/ledger/accounts/${address}/payments`)
    assert.equal(storedRequestId(values.uid ?? ''), values.uid)
    assert.equal(storedRequestId('req-me-1'), 'req-me-1')
  })

  it('redacts a key, token or seed sent in the path, in any encoding, and never keeps the query', () => {
    const paths: Record<string, [string, string]> = {
      key: [`/v2/payments/${key}`, '/v2/payments/[redacted]'],
      middle: [`/v2/payments/${token}/approve`, '/v2/payments/[redacted]/approve'],
      seed: [`/v2/users/${seed}`, '/v2/users/[redacted]'],
      percentAll: [`/v2/payments/${percentAll(key)}/complete`, '/v2/payments/[redacted]/complete'],
      percentStandardBase64: [`/v2/payments/${encodeURIComponent(b64(key))}`, '/v2/payments/[redacted]'],
      glued: [`/v2/payments/x${seed}`, '/v2/payments/[redacted]'],
      query: [`/v2/payments/abc?api_key=${key}&x=${encodeURIComponent(b64(token))}&s=${seed}`, '/v2/payments/abc'],
    }
    for (const [label, [url, expected]] of Object.entries(paths)) {
      const out = storedPath(url)
      assertNoSecret(out, label)
      assert.equal(out, expected, label)
    }
    // A standard-base64 key's own `/` cannot split it into short harmless pieces.
    const slashed = b64(newSecretWith('/'))
    const out = storedPath(`/v2/payments/${slashed}`)
    assert.equal(out.includes(slashed), false)
    for (const piece of slashed.split('/')) if (piece.length >= 8) assert.equal(out.includes(piece), false, piece)
    // Bounded after redaction: a long path loses its end, never a secret's head.
    assert.ok(storedPath(`/v2/${'a/'.repeat(2000)}${key}`).length <= 1001)
    assertNoSecret(storedPath(`/v2/${'a'.repeat(990)}/${key}`), 'long')
  })

  it('redacts every fresh key, token and seed, in each of its encodings, not most of them', () => {
    for (let i = 0; i < 1500; i++) {
      const wallet = i % 5 === 4 ? Keypair.random() : undefined
      const secret = wallet?.secret() ?? newSecret()
      const bytes = wallet?.rawSecretKey() ?? Buffer.from(secret, 'base64url')
      for (const form of [secret, bytes.toString('base64'), encodeURIComponent(bytes.toString('base64')), percentAll(secret)]) {
        const body = storedBody(JSON.stringify({ memo: `paid ${form}.` })) ?? ''
        const path = storedPath(`/v2/payments/${form}/complete`)
        for (const out of [body, path]) {
          assert.equal(out.includes(secret.slice(0, 20)), false, `${form} in ${out}`)
          assert.equal(out.includes(bytes.toString('base64').slice(0, 20)), false, `${form} in ${out}`)
        }
      }
    }
  })

  it('redacts a request id shaped like a secret', () => {
    assert.equal(storedRequestId(key), REDACTED)
    assert.equal(storedRequestId(`req-${token}`), REDACTED)
  })

  it('survives hostile bodies: BOM, NUL, lone surrogates, deep nesting, huge bodies', () => {
    const bom = storedBody(`\uFEFF${JSON.stringify({ token: ['a', 'b'], memo: key })}`) ?? ''
    assertNoSecret(bom, 'bom')
    assert.deepEqual(JSON.parse(bom.replace(/^\uFEFF/, '')), { token: REDACTED, memo: REDACTED })

    for (const text of [`a\u0000b ${key} \u0000`, JSON.stringify({ memo: `a\u0000b`, k: key })]) {
      const out = storedBody(text) ?? ''
      assert.equal(out.includes('\u0000'), false, 'no NUL is stored (PostgreSQL refuses it in text)')
      assertNoSecret(out, 'nul')
    }

    for (const text of [`\uD800${key}\uDFFF x \uDC00`, JSON.stringify({ m: `\uD800 ${seed} \uDBFF` }), `{"m":"\\ud800 ${token}"}`]) {
      const out = storedBody(text) ?? ''
      assert.equal(Buffer.from(out, 'utf8').toString('utf8') === out, true, 'no lone surrogate is stored')
      assertNoSecret(out, 'surrogates')
    }

    const depth = 50_000
    const deep = `${'['.repeat(depth)}"${key}"${']'.repeat(depth)}`
    assertNoSecret(storedBody(deep) ?? '', 'deep array')
    const deepObject = `${'{"a":'.repeat(depth)}"${seed}"${'}'.repeat(depth)}`
    assertNoSecret(storedBody(deepObject) ?? '', 'deep object')

    // Huge: far past what the hot path captures, handed straight in.
    const huge = JSON.stringify({ tokens: Array.from({ length: 20_000 }, () => key), memo: `${'word '.repeat(200_000)}${seed}` })
    const stored = storedBody(huge) ?? ''
    assert.ok(stored.length <= MAX_BODY_CHARS + 20)
    assertNoSecret(stored, 'huge')
    const hugeRaw = `${`${token} `.repeat(50_000)}`
    const storedRaw = storedBody(hugeRaw) ?? ''
    assert.ok(storedRaw.length <= MAX_BODY_CHARS + 20)
    assertNoSecret(storedRaw, 'huge raw')
    const captured = captureBody(hugeRaw)
    assert.equal(captured.text?.length, CAPTURE_CHARS)
    assertNoSecret(storedBody(captured.text, captured.cut) ?? '', 'huge captured')
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

/** A fresh secret whose standard base64 form holds `char` (about half of them do). */
function newSecretWith(char: string): string {
  for (;;) {
    const secret = newSecret()
    if (b64(secret).includes(char)) return secret
  }
}
