/**
 * The reasons an operator gives (docs/operators.md): a suspension, a restore and an issue need at
 * least one visible character. White space of any script and invisible characters alone are 400
 * invalid_arguments in the documented shape, and nothing changes: no suspension, no money, no
 * audit record. The rule is src/lib/text.ts's isBlankText.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type AccountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { usePlatform } from '../../helpers/platform.js'

/** Reasons that show nothing: ASCII and Unicode spaces, line breaks, zero-width and other invisible characters. */
const BLANK_REASONS = [
  ' ',
  '   ',
  '\t\n',
  '\u00a0', // no-break space
  '\u3000', // ideographic space
  '\u2003\u2009', // em space, thin space
  '\u2028', // line separator
  '\u200b', // zero-width space
  '\u200c\u200d', // zero-width non-joiner, joiner
  '\u2060', // word joiner
  '\ufeff', // zero-width no-break space (BOM)
  '\u180e', // Mongolian vowel separator
  '\u3164', // Hangul filler
  '\u2800', // Braille blank
  '\u00ad', // soft hyphen
  ' \u00a0\u200b\u3000 ',
]

describe('operator reasons hold at least one visible character', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  const operator = async (): Promise<AccountBrowser & { username: string }> => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'operator')
    return user
  }
  const auditCount = async () => (await admin().auditTrail(1000)).records.length

  it('refuses a blank suspension or restore reason of a user and of an app with 400, changing nothing', async () => {
    const op = await operator()
    const target = await signedUp(app)
    const dev = await signedUp(app)
    await admin().grant(dev.username, 'developer')
    const shop = await admin().createApp({ owner: dev.username, name: 'Shop', url: 'https://shop.example/' })
    const before = await auditCount()
    for (const reason of BLANK_REASONS) {
      for (const path of [
        `/operator/users/${target.username}/suspend`,
        `/operator/users/${target.username}/restore`,
        `/operator/apps/${shop.app_id}/suspend`,
        `/operator/apps/${shop.app_id}/restore`,
      ]) {
        const refused = await op.call('POST', path, { reason })
        assert.equal(refused.status, 400, `${path} ${JSON.stringify(reason)}: ${JSON.stringify(refused.body)}`)
        assert.equal(refused.body.error, 'invalid_arguments')
        assert.match(String(refused.body.error_message), /reason must hold at least one visible character/)
      }
    }
    // Counted before the reads below, which are recorded themselves (view-user, view-app).
    assert.equal(await auditCount(), before, 'no audit record')
    assert.equal((await op.call('GET', `/operator/users/${target.username}`)).body.suspended, false)
    assert.equal((await op.call('GET', `/operator/apps/${shop.app_id}`)).body.suspended, false)
    assert.equal((await target.account()).status, 200, 'their session lives')

    // A reason with something visible is taken as given, spaces around it included, in any script.
    for (const reason of [' spam ', '不正利用', '🙂', '\u200bx']) {
      const suspended = await op.call('POST', `/operator/apps/${shop.app_id}/suspend`, { reason })
      assert.deepEqual(suspended.body, { changed: true }, JSON.stringify(reason))
      assert.deepEqual((await op.call('POST', `/operator/apps/${shop.app_id}/restore`, { reason })).body, { changed: true })
    }
    const recorded = (await admin().auditTrail(2)).records[0]
    assert.equal(recorded?.action, 'restore-app')
    assert.equal(recorded?.details.reason, '\u200bx')
  })

  it('refuses a blank issue reason with 400, in the console and plinth admin; nothing is issued', async () => {
    const op = await operator()
    const user = await signedUp(app)
    const before = await auditCount()
    for (const reason of BLANK_REASONS) {
      const refused = await op.call('POST', '/operator/issue', { target: user.username, amount: '1', reason })
      assert.equal(refused.status, 400, `${JSON.stringify(reason)}: ${JSON.stringify(refused.body)}`)
      assert.equal(refused.body.error, 'invalid_arguments')
      assert.equal(typeof refused.body.error_message, 'string')
    }
    // `plinth admin wallets issue --reason` runs the same rule.
    for (const reason of BLANK_REASONS) {
      await assert.rejects(
        admin().issue({ target: user.username, amount: '1', reason }),
        { code: 'invalid_arguments' },
        JSON.stringify(reason),
      )
    }
    assert.equal(((await user.account()).body.wallet as { balance: string }).balance, '0.0000000')
    assert.equal(await auditCount(), before)
    const issued = await op.call('POST', '/operator/issue', { target: user.username, amount: '1', reason: '\u3000grant\u3000' })
    assert.equal(issued.status, 200, JSON.stringify(issued.body))
  })

  describe('requests for a second operator', () => {
    const two = usePlatform({ mode: 'production', portal: { operatorApprovalThreshold: 50 } })
    it('refuse a blank reason for a request and for a rejection with 400; nothing is stored, decided or recorded', async () => {
      const [alice, bob] = [await signedUp(() => two.app), await signedUp(() => two.app)]
      for (const op of [alice, bob]) await adminOf(two).grant(op.username, 'operator')
      const user = await signedUp(() => two.app)
      const records = async () => (await adminOf(two).auditTrail(1000)).records.length
      const before = await records()
      for (const reason of BLANK_REASONS.slice(0, 6)) {
        const refused = await alice.call('POST', '/operator/issue', { target: user.username, amount: '80', reason })
        assert.equal(refused.status, 400, `${JSON.stringify(reason)}: ${JSON.stringify(refused.body)}`)
        assert.match(String(refused.body.error_message), /must hold at least one visible character/)
      }
      assert.equal(((await alice.call('GET', '/operator/approvals?status=pending')).body.approvals as unknown[]).length, 0)
      assert.equal(await records(), before, 'no request stored, no record')
      const requested = await alice.call('POST', '/operator/issue', { target: user.username, amount: '80', reason: 'prize' })
      assert.equal(requested.status, 202, JSON.stringify(requested.body))
      const id = String((requested.body.approval as { approval_id: string }).approval_id)
      const afterRequest = await records()
      for (const reason of BLANK_REASONS) {
        const refused = await bob.call('POST', `/operator/approvals/${id}/reject`, { reason })
        assert.equal(refused.status, 400, `${JSON.stringify(reason)}: ${JSON.stringify(refused.body)}`)
        assert.equal(refused.body.error, 'invalid_arguments')
      }
      assert.equal(await records(), afterRequest)
      const pending = (await bob.call('GET', '/operator/approvals?status=pending')).body.approvals as Array<{ approval_id: string }>
      assert.deepEqual(
        pending.map((a) => a.approval_id),
        [id],
        'still pending',
      )
    })
  })
})
