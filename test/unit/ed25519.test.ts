import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { isAccountId, signWithSeed, verifySignature } from '../../src/ledger/stellar/ed25519.js'

describe('ed25519 through node:crypto', () => {
  const pair = Keypair.random()
  const data = Buffer.from('a transaction hash, 32 bytes....')

  it('verifies what stellar-base signs, and refuses a changed byte, another key or a wrong hint', () => {
    const decorated = pair.signDecorated(data)
    const signature = { hint: decorated.hint(), signature: decorated.signature() }
    assert.equal(verifySignature(pair.publicKey(), data, signature), true)
    assert.equal(verifySignature(Keypair.random().publicKey(), data, signature), false)
    const changed = Buffer.from(signature.signature)
    changed[0] = (changed[0] ?? 0) ^ 1
    assert.equal(verifySignature(pair.publicKey(), data, { hint: signature.hint, signature: changed }), false)
    assert.equal(verifySignature(pair.publicKey(), data, { hint: Buffer.alloc(4), signature: signature.signature }), false)
    assert.equal(verifySignature(pair.publicKey(), data, { hint: signature.hint, signature: signature.signature.subarray(1) }), false)
    assert.equal(verifySignature('not-an-address', data, signature), false)
  })

  it('signs exactly as stellar-base does (ed25519 is deterministic)', () => {
    const ours = signWithSeed(pair.secret(), data)
    const theirs = pair.signDecorated(data)
    assert.deepEqual(ours.hint(), theirs.hint())
    assert.deepEqual(ours.signature(), theirs.signature())
    // Given the address, the hint comes from the decoded public key: the same signature.
    const withAddress = signWithSeed(pair.secret(), data, pair.publicKey())
    assert.deepEqual(withAddress.hint(), theirs.hint())
    assert.deepEqual(withAddress.signature(), theirs.signature())
  })

  it('knows an account id', () => {
    assert.equal(isAccountId(pair.publicKey()), true)
    assert.equal(isAccountId(pair.secret()), false)
    assert.equal(isAccountId(`${pair.publicKey().slice(0, -1)}A`), pair.publicKey().endsWith('A'))
    assert.equal(isAccountId(''), false)
  })
})
