/** Why a session ended (src/accounts/session-end.ts): the first of the events that ended it. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sessionEnd } from '../../src/accounts/session-end.js'

const NOW = new Date('2026-01-01T12:00:00Z')
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000)
const live = { now: NOW, last_seen_at: ago(10), expires_at: ago(-3600), revoked_at: null, suspended_at: null }

describe('sessionEnd', () => {
  it('answers nothing for a session still live (a race: it was touched meanwhile)', () => {
    assert.equal(sessionEnd(live, 60), undefined)
  })

  it('names each cause alone', () => {
    assert.equal(sessionEnd({ ...live, last_seen_at: ago(60) }, 60), 'idle', 'idle exactly at the limit, as the SQL refuses it')
    assert.equal(sessionEnd({ ...live, expires_at: NOW }, 60), 'expired')
    assert.equal(sessionEnd({ ...live, revoked_at: ago(1) }, 60), 'signed_out')
    assert.equal(sessionEnd({ ...live, suspended_at: ago(1) }, 60), 'suspended')
  })

  it('names the first to happen: an idle session signed out later ended idle; a suspension wins its own revocation', () => {
    assert.equal(sessionEnd({ ...live, last_seen_at: ago(600), revoked_at: ago(5) }, 60), 'idle')
    assert.equal(sessionEnd({ ...live, last_seen_at: ago(100), expires_at: ago(20) }, 60), 'idle')
    assert.equal(sessionEnd({ ...live, revoked_at: ago(30), expires_at: ago(20) }, 60), 'signed_out')
    assert.equal(sessionEnd({ ...live, revoked_at: ago(5), suspended_at: ago(5) }, 60), 'suspended')
    assert.equal(sessionEnd({ ...live, revoked_at: ago(50), suspended_at: ago(5) }, 60), 'signed_out')
  })

  it('takes a revocation or a suspension stamped in the future (another clock) as now', () => {
    assert.equal(sessionEnd({ ...live, revoked_at: ago(-30) }, 60), 'signed_out')
    assert.equal(sessionEnd({ ...live, suspended_at: ago(-30), last_seen_at: ago(120) }, 60), 'idle')
  })
})
