import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig, portalSettings } from '../../src/config.js'

const KEY = 'a'.repeat(64)

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({}, '/srv/app')
    assert.equal(config.port, 8080)
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.publicUrl, 'http://127.0.0.1:8080')
    assert.equal(config.dataDir, '/srv/app/.plinth')
    assert.equal(config.databaseUrl, undefined)
    assert.equal(config.mode, 'sandbox')
    assert.equal(config.adminToken, undefined)
    assert.equal(config.logLevel, 'info')
    assert.equal(config.tokenTtlSeconds, 86_400)
    assert.equal(config.approvalWindowSeconds, 60)
    assert.equal(config.adVerdictDelaySeconds, 0)
  })

  it('reads every variable', () => {
    const config = loadConfig(
      {
        PORT: '9000',
        HOST: '0.0.0.0',
        PLINTH_PUBLIC_URL: 'https://plinth.example/',
        PLINTH_DATA_DIR: 'memory',
        DATABASE_URL: 'postgres://u@db/plinth',
        PLINTH_DB_SCHEMA: 'tenant_1',
        PLINTH_MODE: 'production',
        PLINTH_ADMIN_TOKEN: 'x'.repeat(20),
        LOG_LEVEL: 'warn',
        PLINTH_SECRET_KEY: KEY,
        PLINTH_TOKEN_TTL_SECONDS: '60',
        PLINTH_APPROVAL_WINDOW_SECONDS: '30',
      },
      '/srv',
    )
    assert.equal(config.port, 9000)
    assert.equal(config.host, '0.0.0.0')
    assert.equal(config.publicUrl, 'https://plinth.example')
    assert.equal(config.dataDir, 'memory')
    assert.equal(config.databaseUrl, 'postgres://u@db/plinth')
    assert.equal(config.databaseSchema, 'tenant_1')
    assert.equal(config.mode, 'production')
    assert.equal(config.adminToken, 'x'.repeat(20))
    assert.equal(config.logLevel, 'warn')
    assert.deepEqual(config.secretKey, Buffer.from(KEY, 'hex'))
    assert.equal(config.tokenTtlSeconds, 60)
    assert.equal(config.approvalWindowSeconds, 30)
  })

  it('takes IPv4 and IPv6 addresses and host names as HOST', () => {
    for (const host of ['0.0.0.0', '10.1.2.3', '::', '::1', 'localhost', 'plinth-1.internal.example']) {
      assert.equal(loadConfig({ HOST: host }).host, host)
    }
  })

  it('derives the public URL from a wildcard host as loopback', () => {
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '81' }).publicUrl, 'http://127.0.0.1:81')
    assert.equal(loadConfig({ HOST: '::1', PORT: '81' }).publicUrl, 'http://[::1]:81')
  })

  it('reads PLINTH_ALLOWED_HOSTS as comma-separated names and addresses, lower-cased (none by default)', () => {
    assert.deepEqual(loadConfig({}).allowedHosts, [])
    assert.deepEqual(loadConfig({ PLINTH_ALLOWED_HOSTS: '' }).allowedHosts, [])
    assert.deepEqual(loadConfig({ PLINTH_ALLOWED_HOSTS: ' Plinth.LAN , 192.168.1.20,[fd00::7], devbox.example., ' }).allowedHosts, [
      'plinth.lan',
      '192.168.1.20',
      '[fd00::7]',
      'devbox.example.',
    ])
  })

  const bad: Array<[string, Record<string, string>, RegExp]> = [
    ['an allowed host with a port', { PLINTH_ALLOWED_HOSTS: 'plinth.lan:8080' }, /PLINTH_ALLOWED_HOSTS .*got "plinth.lan:8080"/],
    ['an allowed host with a scheme', { PLINTH_ALLOWED_HOSTS: 'http://plinth.lan' }, /PLINTH_ALLOWED_HOSTS/],
    ['an allowed IPv6 address without brackets', { PLINTH_ALLOWED_HOSTS: 'fd00::7' }, /PLINTH_ALLOWED_HOSTS .*brackets/],
    ['an allowed host with a wildcard', { PLINTH_ALLOWED_HOSTS: '*.example' }, /PLINTH_ALLOWED_HOSTS/],
    ['an allowed host with a space inside', { PLINTH_ALLOWED_HOSTS: 'a b' }, /PLINTH_ALLOWED_HOSTS/],
    ['too many allowed hosts', { PLINTH_ALLOWED_HOSTS: Array.from({ length: 101 }, (_, i) => `h${i}.example`).join(',') }, /at most 100/],
    ['a non-numeric port', { PORT: 'eighty' }, /PORT must be a whole number/],
    ['a port out of range', { PORT: '70000' }, /PORT must be between/],
    ['a host that is no address (300.1.1.1)', { HOST: '300.1.1.1' }, /HOST must be an IPv4 or IPv6 address or a host name/],
    ['a host of three numbers', { HOST: '1.2.3' }, /HOST must be/],
    ['a host with an empty label', { HOST: 'a..b' }, /HOST must be/],
    ['a host with an underscore', { HOST: 'my_host' }, /HOST must be/],
    ['a host that makes no URL', { HOST: 'fe80::1%eth0' }, /HOST "fe80::1%eth0" makes no valid URL/],
    ['a relative public URL', { PLINTH_PUBLIC_URL: 'plinth.local' }, /PLINTH_PUBLIC_URL/],
    ['a non-http public URL', { PLINTH_PUBLIC_URL: 'ftp://x' }, /PLINTH_PUBLIC_URL must use http/],
    ['an unknown mode', { PLINTH_MODE: 'staging' }, /PLINTH_MODE/],
    ['an unknown log level', { LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    ['a short admin token', { PLINTH_ADMIN_TOKEN: 'short' }, /PLINTH_ADMIN_TOKEN/],
    ['a non-postgres DATABASE_URL', { DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    ['DATABASE_URL without a secret key', { DATABASE_URL: 'postgres://x/y' }, /PLINTH_SECRET_KEY is required/],
    ['a secret key of the wrong size', { PLINTH_SECRET_KEY: 'abcd' }, /PLINTH_SECRET_KEY must be 32 bytes/],
    ['an unsafe schema name', { PLINTH_DB_SCHEMA: 'x; drop table users' }, /PLINTH_DB_SCHEMA/],
    ['a token lifetime of zero', { PLINTH_TOKEN_TTL_SECONDS: '0' }, /PLINTH_TOKEN_TTL_SECONDS/],
    ['an approval window of zero', { PLINTH_APPROVAL_WINDOW_SECONDS: '0' }, /PLINTH_APPROVAL_WINDOW_SECONDS/],
  ]
  for (const [what, env, message] of bad) {
    it(`fails fast on ${what}`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
      )
    })
  }
})

describe('portalSettings: the operator’s limits', () => {
  it('PLINTH_OPERATOR_APPROVAL_THRESHOLD: 1,000 Pi unless given, whole Pi, or off', () => {
    assert.equal(portalSettings({}).operatorApprovalThreshold, 1000)
    assert.equal(portalSettings({}).operatorDailyIssueLimit, 10_000)
    assert.equal(portalSettings({ PLINTH_OPERATOR_APPROVAL_THRESHOLD: '250' }).operatorApprovalThreshold, 250)
    assert.equal(portalSettings({ PLINTH_OPERATOR_APPROVAL_THRESHOLD: 'off' }).operatorApprovalThreshold, 'off')
    for (const bad of ['no', '1.5', '-1', 'OFF']) {
      assert.throws(() => portalSettings({ PLINTH_OPERATOR_APPROVAL_THRESHOLD: bad }), ConfigError, bad)
    }
  })
})
