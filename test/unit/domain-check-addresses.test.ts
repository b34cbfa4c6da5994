/**
 * The domain check's address rule (src/portal/domain-check.ts, docs/portal.md): which addresses
 * isPrivateAddress refuses (loopback, private, link-local, shared, documentation, multicast,
 * reserved, and their IPv6 forms) and which public ones it allows. The fetch itself is in
 * domain-check.test.ts, IPv4 inside IPv6 in domain-check-embedded.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isPrivateAddress } from '../../src/portal/domain-check.js'

describe('domain check', () => {
  describe('isPrivateAddress', () => {
    const refused = [
      '0.0.0.0',
      '0.1.2.3',
      '10.0.0.5',
      '10.255.255.255',
      '100.64.0.1',
      '100.127.255.254',
      '127.0.0.1',
      '127.255.0.1',
      '169.254.0.1',
      '169.254.169.254',
      '172.16.0.1',
      '172.31.255.255',
      '192.0.0.8',
      '192.0.2.1',
      '192.168.1.1',
      '198.18.0.1',
      '198.19.255.255',
      '198.51.100.7',
      '203.0.113.9',
      '224.0.0.1',
      '239.255.255.250',
      '240.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      '[::1]',
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'fe80::1%eth0',
      'febf::1',
      'ff02::1',
      'ff00::',
      '2001:db8::1',
      '2001:db8:ffff::1',
      '64:ff9b::a00:5',
      '64:ff9b::127.0.0.1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '::ffff:10.1.2.3',
      '::ffff:0.0.0.0',
      '2002:7f00:1::1',
      '2002:c0a8:101::',
      'not-an-ip',
      '',
    ]
    const allowed = [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '100.63.255.255',
      '100.128.0.1',
      '172.15.255.255',
      '172.32.0.1',
      '192.0.3.1',
      '192.167.255.255',
      '198.17.255.255',
      '198.20.0.1',
      '223.255.255.255',
      '2606:4700::1111',
      '2001:4860:4860::8888',
      '2a00:1450:4001::1',
      '64:ff9b::5db8:d822',
      '64:ff9b::8.8.8.8',
      '::ffff:8.8.8.8',
      '::ffff:808:808',
      '2002:808:808::1',
    ]
    for (const address of refused) {
      it(`refuses ${JSON.stringify(address)}`, () => assert.equal(isPrivateAddress(address), true))
    }
    for (const address of allowed) {
      it(`allows ${address}`, () => assert.equal(isPrivateAddress(address), false))
    }
  })
})
