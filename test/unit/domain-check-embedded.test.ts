/**
 * The domain check's SSRF rule for IPv4 inside IPv6 (src/portal/domain-check.ts, docs/portal.md):
 * every form that embeds an IPv4 address is judged as that address, in every spelling (dotted and
 * hex tails, compressed and not, upper case, bracketed), and public addresses stay allowed where the
 * form itself is. The rest of the address rules are in domain-check.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkDomain, isPrivateAddress } from '../../src/portal/domain-check.js'

const KEY = 'plinth-validation-4f0c2a9e1b7d'

/** Form → [refused spellings, allowed spellings]. */
const FORMS: Record<string, [string[], string[]]> = {
  'IPv4-translated ::ffff:0:0:0/96': [
    [
      '::ffff:0:127.0.0.1',
      '::ffff:0:7f00:1',
      '::FFFF:0:7F00:1',
      '0:0:0:0:ffff:0:7f00:1',
      '0000:0000:0000:0000:ffff:0000:7f00:0001',
      '0:0:0:0:ffff:0:127.0.0.1',
      '[::ffff:0:127.0.0.1]',
      '::ffff:0:10.1.2.3',
      '::ffff:0:a9fe:a9fe',
      '::ffff:0:169.254.169.254',
      '::ffff:0:c0a8:101',
      '::ffff:0:0.0.0.0',
      '::ffff:0:0:0',
    ],
    ['::ffff:0:8.8.8.8', '::ffff:0:808:808', '0:0:0:0:ffff:0:808:808', '0000:0000:0000:0000:ffff:0000:5db8:d822'],
  ],
  'IPv4-mapped ::ffff:0:0/96': [
    ['0:0:0:0:0:ffff:127.0.0.1', '0:0:0:0:0:ffff:7f00:1', '0000:0000:0000:0000:0000:FFFF:0A00:0001', '::ffff:100.64.0.1'],
    ['0:0:0:0:0:ffff:8.8.8.8', '0000:0000:0000:0000:0000:ffff:0808:0808'],
  ],
  'NAT64 64:ff9b::/96': [
    ['64:ff9b::10.0.0.1', '64:ff9b:0:0:0:0:a9fe:a9fe', '0064:ff9b:0000:0000:0000:0000:7f00:0001', '64:FF9B::C0A8:101', '64:ff9b::0.0.0.0'],
    ['64:ff9b:0:0:0:0:808:808', '0064:ff9b:0000:0000:0000:0000:0808:0808', '64:ff9b::1.1.1.1'],
  ],
  // Local-use (the network's own translator) and the unassigned rest of 64:ff9b::/16: refused whatever they carry.
  'local-use NAT64 64:ff9b:1::/48 and the rest of 64:ff9b::/16': [
    ['64:ff9b:1::10.0.0.1', '64:ff9b:1::a00:1', '64:ff9b:1::8.8.8.8', '64:ff9b:0:0:1::808:808', '64:ff9b:ffff::808:808'],
    [],
  ],
  '6to4 2002::/16': [
    ['2002:a9fe:a9fe::1', '2002:0a00:0001:0:0:0:0:1', '2002:7f00:1::', '2002:C0A8:0101::', '2002:6440:1::1'],
    ['2002:0808:0808:0000:0000:0000:0000:0001', '2002:808:808::', '2002:5db8:d822:1::1'],
  ],
  // Deprecated: refused whatever it carries (and judged as its IPv4 address too).
  'IPv4-compatible ::a.b.c.d': [['::127.0.0.1', '::7f00:1', '0:0:0:0:0:0:a00:1', '::169.254.169.254', '::8.8.8.8', '::808:808'], []],
  // Teredo: server IPv4 in words 2-3, client IPv4 in the last 32 bits XOR 0xffffffff. Refused outright (2001::/23) besides.
  'Teredo 2001::/32': [
    [
      '2001:0:4136:e378:8000:63bf:f5ff:fffe', // client 10.0.0.1
      '2001:0000:4136:e378:8000:63bf:80ff:fefe', // client 127.0.1.1
      '2001:0:7f00:1:8000:63bf:f7f7:f7f7', // server 127.0.0.1
      '2001:0:4136:e378:8000:63bf:5601:5601', // client 169.254.169.254 (XOR a9fe:a9fe)
      '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // client 8.8.8.8, server 65.54.227.120: Teredo is not the public internet
    ],
    [],
  ],
  'ISATAP ::0:5efe:a.b.c.d and ::200:5efe:a.b.c.d under a global /64': [
    [
      '2a00:1450:4001:81c::5efe:10.0.0.1',
      '2a00:1450:4001:81c:0:5efe:7f00:1',
      '2a00:1450:4001:81c:200:5efe:a9fe:a9fe',
      '2606:4700:0:0:0200:5EFE:C0A8:0101',
    ],
    ['2a00:1450:4001:81c::5efe:8.8.8.8', '2a00:1450:4001:81c:200:5efe:808:808'],
  ],
}

describe('the domain check judges IPv4 inside IPv6 as the IPv4 address', () => {
  for (const [form, [refused, allowed]] of Object.entries(FORMS)) {
    describe(form, () => {
      for (const address of refused) it(`refuses ${address}`, () => assert.equal(isPrivateAddress(address), true))
      for (const address of allowed) it(`allows ${address}`, () => assert.equal(isPrivateAddress(address), false))
    })
  }

  it('still allows ordinary global IPv6 addresses', () => {
    for (const address of ['2606:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:81c::200e', '2400:cb00:2048:1::c629:d7a2']) {
      assert.equal(isPrivateAddress(address), false, address)
    }
  })

  it('refuses a literal host of the translated form without DNS and without connecting', async () => {
    for (const host of [
      '[::ffff:0:127.0.0.1]',
      '[0:0:0:0:ffff:0:a9fe:a9fe]',
      '[64:ff9b:1::a00:1]',
      '[2a00:1450:4001:81c::5efe:10.0.0.1]',
    ]) {
      let lookups = 0
      const result = await checkDomain(`http://${host}:9/`, KEY, {
        allowPrivate: false,
        timeoutMs: 2000,
        lookup: async () => {
          lookups++
          return [{ address: '93.184.216.34', family: 4 }]
        },
      })
      assert.equal(result.ok, false, host)
      assert.equal(!result.ok && result.reason, 'private_address', host)
      assert.equal(lookups, 0)
    }
  })

  it('refuses a name that resolves to an embedded private address, naming it', async () => {
    for (const address of ['::ffff:0:7f00:1', '64:ff9b::a9fe:a9fe', '2002:a00:1::1', '2001:0:4136:e378:8000:63bf:f5ff:fffe']) {
      const result = await checkDomain('https://app.example/', KEY, {
        allowPrivate: false,
        timeoutMs: 2000,
        lookup: async () => [{ address, family: 6 }],
      })
      assert.equal(!result.ok && result.reason, 'private_address', address)
      assert.equal(!result.ok && result.address, address)
    }
  })
})
