/**
 * A passkey's name (#41 U16, docs/accounts.md "Passkeys"): given when it is registered, changed
 * later; normalised (NFC, every run of spaces one space, trimmed) or refused with 400
 * invalid_arguments in the documented shape, nothing stored: control, format and invisible
 * characters, line breaks, stacked combining marks, a blank name, a name past 60 characters. A
 * name is checked before the authenticator makes a credential (the options) and again at the act.
 * Adding and renaming are audited with the stored name.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { accountLimits } from '../../../src/config.js'
import { type AccountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'
import { softPasskey } from '../../helpers/webauthn.js'

/** Names that are refused, each for its own reason. */
const REFUSED: Array<[string, string]> = [
  ['blank', ' \u3000 '],
  ['invisible only', '\u200b\u2060'],
  ['a zero-width space inside', 'Work\u200blaptop'],
  ['a bidi override', 'Laptop \u202egnp.exe'],
  ['a control character', 'Lap\u0007top'],
  ['a line break', 'Work\nlaptop'],
  ['a line separator', 'Work\u2028laptop'],
  ['a NUL', 'Lap\u0000top'],
  ['an unpaired surrogate', 'Lap\ud800top'],
  ['private use', 'Laptop \ue000'],
  ['stacked combining marks', `Z${'\u0301'.repeat(6)}`],
  ['61 characters', 'x'.repeat(61)],
  ['61 characters of one emoji each', '🔑'.repeat(61)],
]

describe('naming passkeys (production)', () => {
  const limits = { ...accountLimits(), signupPerAddress: { attempts: 100_000, windowSeconds: 3600 } }
  const platform = usePlatform({ mode: 'production', accounts: limits })
  const app = () => platform.app
  const host = { host: 'plinth.test' }
  const origin = 'http://plinth.test'

  const names = async (browser: AccountBrowser) =>
    ((await browser.call('GET', '/account/passkeys')).body.passkeys as Array<{ name: string }>).map((p) => p.name)
  /** Begins and finishes a registration named `name` (undefined: none sent). */
  const register = async (browser: AccountBrowser, name: string | undefined) => {
    const key = softPasskey({ rpID: 'plinth.test', origin })
    const options = await browser.call('POST', '/account/passkeys/options', {}, host)
    assert.equal(options.status, 200, JSON.stringify(options.body))
    const body =
      name === undefined
        ? { response: key.register(String(options.body.challenge)) }
        : { response: key.register(String(options.body.challenge)), name }
    return { key, answer: await browser.call('POST', '/account/passkeys/verify', body, host) }
  }

  it('names a passkey when it is registered, normalised; no name is "Passkey"', async () => {
    const user = await signedUp(app)
    // "e" with a combining acute (NFD) is stored composed; runs of any spaces are one space.
    const named = await register(user, '  Cafe\u0301\u00a0\u00a0 laptop\t ')
    assert.equal(named.answer.status, 201, JSON.stringify(named.answer.body))
    assert.equal(named.answer.body.name, 'Caf\u00e9 laptop')
    const unnamed = await register(user, undefined)
    assert.equal(unnamed.answer.body.name, 'Passkey')
    assert.deepEqual((await names(user)).sort(), ['Caf\u00e9 laptop', 'Passkey'])
    const sixty = await register(user, '🔑'.repeat(60))
    assert.equal(sixty.answer.status, 201, '60 characters, whatever their UTF-16 length')
    const audit = await adminOf(platform).auditTrail(50)
    const added = audit.records.filter((r) => r.action === 'add-passkey' && r.target === user.username).map((r) => r.details.name)
    assert.deepEqual(added.sort(), ['Caf\u00e9 laptop', 'Passkey', '🔑'.repeat(60)].sort(), 'each addition is audited with its stored name')
  })

  it('refuses every text oddity, at the options (before any credential is made), at registration and at a rename; nothing stored', async () => {
    const user = await signedUp(app)
    const { key } = await register(user, 'Laptop')
    const auditBefore = (await adminOf(platform).auditTrail(200)).records.length
    for (const [why, name] of REFUSED) {
      assertError(await user.call('POST', '/account/passkeys/options', { name }, host), 400, 'invalid_arguments')
      const refused = await register(user, name)
      assertError(refused.answer, 400, 'invalid_arguments')
      // The request check refuses a NUL and an unpaired surrogate itself (docs/errors.md), in the same shape; the rest name the rule.
      const generic = why === 'a NUL' || why === 'an unpaired surrogate'
      assert.match(String(refused.answer.body.error_message), generic ? /^body\/name must/ : /passkey’s name/, why)
      const rename = await user.call('PATCH', `/account/passkeys/${key.id}`, { name })
      assertError(rename, 400, 'invalid_arguments')
    }
    assert.deepEqual(await names(user), ['Laptop'], 'no refused name was stored, no passkey added')
    assert.equal((await adminOf(platform).auditTrail(200)).records.length, auditBefore, 'a refusal is not an act: nothing audited')
  })

  it('renames a passkey, normalised, and audits it', async () => {
    const user = await signedUp(app)
    const { key } = await register(user, 'Laptop')
    const renamed = await user.call('PATCH', `/account/passkeys/${key.id}`, { name: ' Phone\u3000(work) ' })
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body))
    assert.equal(renamed.body.name, 'Phone (work)')
    const audit = await adminOf(platform).auditTrail(20)
    const record = audit.records.find((r) => r.action === 'rename-passkey' && r.target === user.username)
    assert.equal(record?.details.name, 'Phone (work)')
  })
})
