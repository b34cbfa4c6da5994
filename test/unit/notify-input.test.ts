import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { tally } from '../../src/notifications/notification-quota.js'
import { checkNotifyBody } from '../../src/notifications/notify-input.js'

const item = { title: 'Hi', body: 'There', user_uid: 'u1', subroute: '/home' }

describe('notify input', () => {
  it('takes a valid batch as is', () => {
    assert.deepEqual(checkNotifyBody({ notifications: [item] }), { ok: true, notifications: [item] })
    assert.deepEqual(checkNotifyBody({ notifications: [{ ...item, body: '' }] }), { ok: true, notifications: [{ ...item, body: '' }] })
  })

  it('says 400 past 256 before looking at the items', () => {
    assert.deepEqual(checkNotifyBody({ notifications: Array.from({ length: 257 }, () => ({})) }), {
      ok: false,
      status: 400,
      message: 'Maximum 256 notifications allowed per request',
    })
    assert.equal(checkNotifyBody({ notifications: Array.from({ length: 256 }, () => item) }).ok, true)
  })

  const refusals: Array<[string, unknown, RegExp]> = [
    ['no body', undefined, /notifications is required/],
    ['no list', {}, /notifications is required/],
    ['a list of the wrong type', { notifications: {} }, /must be an array/],
    ['an empty list', { notifications: [] }, /must not be empty/],
    ['an item that is not an object', { notifications: ['x'] }, /notifications\[0\] must be an object/],
    ['a missing user_uid', { notifications: [{ ...item, user_uid: undefined }] }, /user_uid is required/],
    ['a null subroute', { notifications: [{ ...item, subroute: null }] }, /subroute is required/],
    ['a number title', { notifications: [{ ...item, title: 1 }] }, /title must be a string/],
    ['an empty title', { notifications: [{ ...item, title: '' }] }, /title must not be empty/],
    ['a relative subroute', { notifications: [item, { ...item, subroute: 'home' }] }, /notifications\[1\]\.subroute must start with \//],
    ['a body over 1000', { notifications: [{ ...item, body: 'b'.repeat(1001) }] }, /at most 1000/],
    ['a NUL in a title', { notifications: [{ ...item, title: 'a\u0000' }] }, /NUL/],
  ]
  for (const [what, body, message] of refusals) {
    it(`says 422 for ${what}`, () => {
      const result = checkNotifyBody(body)
      assert.equal(result.ok, false)
      if (!result.ok) {
        assert.equal(result.status, 422)
        assert.match(result.message, message)
      }
    })
  }

  it('tallies a batch per recipient, in order of first appearance, marking each first notification', () => {
    assert.deepEqual(tally(['b', 'a', 'b', 'c', 'b', 'a']), {
      recipients: ['b', 'a', 'c'],
      counts: [3, 2, 1],
      firsts: [true, true, false, true, false, false],
    })
    assert.deepEqual(tally([]), { recipients: [], counts: [], firsts: [] })
  })
})
