/**
 * The domain check's fetch (src/portal/domain-check.ts, docs/portal.md) against real local
 * servers: the file, redirects, the size cap, timeouts, addresses refused before any connection,
 * pinning and URLs. Which addresses are private is in domain-check-addresses.test.ts.
 */
import assert from 'node:assert/strict'
import diagnosticsChannel from 'node:diagnostics_channel'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { type AddressInfo, createServer as createNetServer, type Server as NetServer } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { checkDomain, type DomainCheckOptions } from '../../src/portal/domain-check.js'

const KEY = 'plinth-validation-4f0c2a9e1b7d'
const TEN_MB = 10 * 1024 * 1024

interface Seen {
  url: string
  headers: IncomingHttpHeaders
}

interface Local {
  port: number
  origin: string
  seen: Seen[]
  connections: number
  close: () => Promise<void>
}

/** A real HTTP server on 127.0.0.1, an ephemeral port; it records each request and connection. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse, local: Local) => void): Promise<Local> {
  const server = createServer()
  const local: Local = {
    port: 0,
    origin: '',
    seen: [],
    connections: 0,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  server.on('connection', () => {
    local.connections++
  })
  server.on('request', (req, res) => {
    local.seen.push({ url: req.url ?? '', headers: req.headers })
    handler(req, res, local)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  local.port = (server.address() as AddressInfo).port
  local.origin = `http://127.0.0.1:${local.port}`
  return local
}

const text =
  (body: string, status = 200) =>
  (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'text/plain' })
    res.end(body)
  }

/** A port nothing listens on: bound, then released. */
async function freePort(): Promise<number> {
  const server = createNetServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Counts undici's connection attempts while `run` runs. */
async function countingConnects<T>(run: () => Promise<T>): Promise<{ result: T; connects: Array<Record<string, unknown>> }> {
  const connects: Array<Record<string, unknown>> = []
  const listener = (message: unknown) => {
    connects.push((message as { connectParams: Record<string, unknown> }).connectParams)
  }
  diagnosticsChannel.subscribe('undici:client:beforeConnect', listener)
  try {
    return { result: await run(), connects }
  } finally {
    diagnosticsChannel.unsubscribe('undici:client:beforeConnect', listener)
  }
}

const LOCAL: DomainCheckOptions = { allowPrivate: true }
const PUBLIC_ONLY: DomainCheckOptions = { allowPrivate: false }

describe('domain check', () => {
  describe('the validation file', () => {
    let local: Local
    before(async () => {
      local = await serve((req, res) => {
        if (req.url === '/validation-key.txt') text(`${KEY}\n`)(req, res)
        else text('not here', 404)(req, res)
      })
    })
    after(() => local.close())

    it('accepts the right key, fetched from /validation-key.txt of the origin', async () => {
      const result = await checkDomain(`${local.origin}/some/app/?page=2#top`, KEY, LOCAL)
      assert.deepEqual(result, { ok: true, url: `${local.origin}/validation-key.txt`, address: '127.0.0.1' })
      assert.equal(local.seen.at(-1)?.url, '/validation-key.txt')
    })

    it('sends no credentials, only accept and its user-agent', async () => {
      await checkDomain(local.origin, KEY, LOCAL)
      const headers = local.seen.at(-1)?.headers ?? {}
      assert.equal(headers.cookie, undefined)
      assert.equal(headers.authorization, undefined)
      assert.equal(headers['proxy-authorization'], undefined)
      assert.equal(headers['user-agent'], 'Plinth-domain-check/1')
      assert.equal(headers.accept, 'text/plain')
      assert.equal(headers.host, `127.0.0.1:${local.port}`)
      const allowed = new Set(['host', 'connection', 'accept', 'user-agent'])
      assert.deepEqual(
        Object.keys(headers).filter((name) => !allowed.has(name)),
        [],
      )
    })

    it('refuses a wrong key as key_mismatch', async () => {
      const result = await checkDomain(local.origin, 'plinth-validation-other', LOCAL)
      assert.equal(result.ok, false)
      assert.equal(!result.ok && result.reason, 'key_mismatch')
      assert.equal(!result.ok && result.address, '127.0.0.1')
      assert.ok(!result.ok && !result.message.includes(KEY), 'the message does not echo the file')
    })

    it('refuses a key that is only a prefix of the file, and an empty expected key', async () => {
      const prefix = await checkDomain(local.origin, KEY.slice(0, -1), LOCAL)
      assert.equal(!prefix.ok && prefix.reason, 'key_mismatch')
      const empty = await checkDomain(local.origin, '', LOCAL)
      assert.equal(!empty.ok && empty.reason, 'key_mismatch')
    })

    it('refuses a 404 as http_status, naming the status', async () => {
      const missing = await serve(text('Not Found', 404))
      try {
        const result = await checkDomain(missing.origin, KEY, LOCAL)
        assert.equal(result.ok, false)
        assert.equal(!result.ok && result.reason, 'http_status')
        assert.match(!result.ok ? result.message : '', /HTTP 404/)
      } finally {
        await missing.close()
      }
    })
  })

  it('trims whitespace and a leading BOM before comparing', async () => {
    const local = await serve(text(`\uFEFF \r\n\t${KEY} \r\n\r\n`))
    try {
      assert.equal((await checkDomain(local.origin, KEY, LOCAL)).ok, true)
    } finally {
      await local.close()
    }
  })

  describe('redirects', () => {
    it('refuses a redirect to another host name of the same machine (localhost)', async () => {
      const local = await serve((req, res, self) => {
        if (req.url === '/validation-key.txt') {
          res.writeHead(302, { location: `http://localhost:${self.port}/x` })
          res.end()
        } else text(KEY)(req, res)
      })
      try {
        const result = await checkDomain(local.origin, KEY, LOCAL)
        assert.equal(!result.ok && result.reason, 'redirect_refused')
        assert.match(!result.ok ? result.message : '', /localhost/)
        assert.deepEqual(
          local.seen.map((seen) => seen.url),
          ['/validation-key.txt'],
        )
      } finally {
        await local.close()
      }
    })

    it('refuses a redirect to another port of 127.0.0.1, which sees no request', async () => {
      const other = await serve(text(KEY))
      const local = await serve((_req, res) => {
        res.writeHead(301, { location: `http://127.0.0.1:${other.port}/` })
        res.end()
      })
      try {
        const result = await checkDomain(local.origin, KEY, LOCAL)
        assert.equal(!result.ok && result.reason, 'redirect_refused')
        assert.equal(other.seen.length, 0)
        assert.equal(other.connections, 0)
      } finally {
        await local.close()
        await other.close()
      }
    })

    it('refuses a redirect from http to https on the same host (another origin)', async () => {
      const local = await serve((_req, res, self) => {
        res.writeHead(308, { location: `https://127.0.0.1:${self.port}/validation-key.txt` })
        res.end()
      })
      try {
        const result = await checkDomain(local.origin, KEY, LOCAL)
        assert.equal(!result.ok && result.reason, 'redirect_refused')
      } finally {
        await local.close()
      }
    })

    it('follows a same-origin redirect', async () => {
      const local = await serve((req, res) => {
        if (req.url === '/validation-key.txt') {
          res.writeHead(302, { location: '/.well-known/plinth/key.txt?v=1' })
          res.end()
        } else if (req.url === '/.well-known/plinth/key.txt?v=1') text(KEY)(req, res)
        else text('no', 404)(req, res)
      })
      try {
        const result = await checkDomain(local.origin, KEY, LOCAL)
        assert.deepEqual(result, { ok: true, url: `${local.origin}/validation-key.txt`, address: '127.0.0.1' })
        assert.deepEqual(
          local.seen.map((seen) => seen.url),
          ['/validation-key.txt', '/.well-known/plinth/key.txt?v=1'],
        )
      } finally {
        await local.close()
      }
    })

    it('follows at most 3 same-origin hops', async () => {
      const hops = (count: number) =>
        serve((req, res) => {
          const at = req.url === '/validation-key.txt' ? 0 : Number(req.url?.slice('/hop/'.length))
          if (at < count) {
            res.writeHead(307, { location: `/hop/${at + 1}` })
            res.end()
          } else text(KEY)(req, res)
        })
      const three = await hops(3)
      const four = await hops(4)
      try {
        assert.equal((await checkDomain(three.origin, KEY, LOCAL)).ok, true)
        assert.equal(three.seen.length, 4)
        const result = await checkDomain(four.origin, KEY, LOCAL)
        assert.equal(!result.ok && result.reason, 'redirect_refused')
        assert.equal(four.seen.length, 4)
      } finally {
        await three.close()
        await four.close()
      }
    })

    it('treats a 3xx without Location as http_status', async () => {
      const local = await serve(text('', 304))
      try {
        const result = await checkDomain(local.origin, KEY, LOCAL)
        assert.equal(!result.ok && result.reason, 'http_status')
      } finally {
        await local.close()
      }
    })
  })

  describe('size cap', () => {
    /** Streams 10 MB (with or without Content-Length), honouring backpressure; reports when the socket closed. */
    async function hugeServer(withLength: boolean) {
      let closed!: (state: { written: number; finished: boolean }) => void
      const closedEarly = new Promise<{ written: number; finished: boolean }>((resolve) => {
        closed = resolve
      })
      const local = await serve((_req, res) => {
        res.writeHead(200, withLength ? { 'content-length': String(TEN_MB) } : {})
        const chunk = Buffer.alloc(64 * 1024, 'a')
        let written = 0
        res.on('close', () => closed({ written, finished: res.writableFinished }))
        const pump = () => {
          while (written < TEN_MB && !res.destroyed) {
            written += chunk.length
            if (!res.write(chunk)) {
              res.once('drain', pump)
              return
            }
          }
          if (!res.destroyed) res.end()
        }
        pump()
      })
      return { local, closedEarly }
    }

    for (const withLength of [true, false]) {
      it(`refuses a 10 MB body ${withLength ? 'with' : 'without'} Content-Length as too_large, closing the socket early`, async () => {
        const { local, closedEarly } = await hugeServer(withLength)
        try {
          const result = await checkDomain(local.origin, KEY, LOCAL)
          assert.equal(!result.ok && result.reason, 'too_large')
          assert.match(!result.ok ? result.message : '', /4096 bytes/)
          const state = await Promise.race([
            closedEarly,
            new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('the server never saw the socket close')), 3000)),
          ])
          assert.equal(state.finished, false, 'the response never completed')
          assert.ok(state.written < TEN_MB, `the server wrote ${state.written} bytes before the socket closed`)
        } finally {
          await local.close()
        }
      })
    }

    it('accepts a body of exactly maxBytes and refuses one byte more', async () => {
      const local = await serve((req, res) => text(req.url === '/validation-key.txt' ? 'k'.repeat(16) : '')(req, res))
      try {
        assert.equal((await checkDomain(local.origin, 'k'.repeat(16), { ...LOCAL, maxBytes: 16 })).ok, true)
        const over = await checkDomain(local.origin, 'k'.repeat(16), { ...LOCAL, maxBytes: 15 })
        assert.equal(!over.ok && over.reason, 'too_large')
      } finally {
        await local.close()
      }
    })
  })

  describe('timeouts and connection failures', () => {
    it('gives up on a body that never finishes after timeoutMs', async () => {
      const local = await serve((_req, res) => {
        res.writeHead(200, { 'content-length': '100' })
        res.write('plinth-')
      })
      try {
        const started = Date.now()
        const result = await checkDomain(local.origin, KEY, { ...LOCAL, timeoutMs: 300 })
        const elapsed = Date.now() - started
        assert.equal(!result.ok && result.reason, 'timeout')
        assert.match(!result.ok ? result.message : '', /300 ms/)
        assert.ok(elapsed >= 250 && elapsed < 2000, `took ${elapsed} ms`)
      } finally {
        await local.close()
      }
    })

    it('gives up on headers that never come after timeoutMs', async () => {
      const local = await serve(() => undefined)
      try {
        const result = await checkDomain(local.origin, KEY, { ...LOCAL, timeoutMs: 300 })
        assert.equal(!result.ok && result.reason, 'timeout')
      } finally {
        await local.close()
      }
    })

    it('counts a slow resolver within timeoutMs', async () => {
      const result = await checkDomain('https://slow.test/', KEY, {
        ...PUBLIC_ONLY,
        timeoutMs: 200,
        lookup: () => new Promise(() => undefined),
      })
      assert.equal(!result.ok && result.reason, 'timeout')
    })

    it('reports a refused connection as connect_failed', async () => {
      const port = await freePort()
      const result = await checkDomain(`http://127.0.0.1:${port}/`, KEY, LOCAL)
      assert.equal(!result.ok && result.reason, 'connect_failed')
      assert.match(!result.ok ? result.message : '', new RegExp(`port ${port}`))
    })
  })

  describe('addresses (allowPrivate false)', () => {
    it('refuses the literal 127.0.0.1 without connecting', async () => {
      const local = await serve(text(KEY))
      try {
        const { result, connects } = await countingConnects(() => checkDomain(local.origin, KEY, PUBLIC_ONLY))
        assert.equal(!result.ok && result.reason, 'private_address')
        assert.equal(!result.ok && result.address, '127.0.0.1')
        assert.match(!result.ok ? result.message : '', /127\.0\.0\.1/)
        assert.equal(connects.length, 0)
        assert.equal(local.connections, 0)
      } finally {
        await local.close()
      }
    })

    for (const host of ['[::1]', '[::ffff:127.0.0.1]', '2130706433', '0x7f.1', '169.254.169.254', '[fe80::1]', '0.0.0.0']) {
      it(`refuses the literal host ${host} without DNS`, async () => {
        let lookups = 0
        const result = await checkDomain(`http://${host}/`, KEY, {
          ...PUBLIC_ONLY,
          lookup: async () => {
            lookups++
            return [{ address: '93.184.216.34', family: 4 }]
          },
        })
        assert.equal(!result.ok && result.reason, 'private_address')
        assert.equal(lookups, 0)
      })
    }

    const resolutions: Array<[string, Array<{ address: string; family: 4 | 6 }>, string]> = [
      ['10.0.0.5', [{ address: '10.0.0.5', family: 4 }], '10.0.0.5'],
      [
        'a public and a loopback address',
        [
          { address: '93.184.216.34', family: 4 },
          { address: '127.0.0.1', family: 4 },
        ],
        '127.0.0.1',
      ],
      [
        'a public address and fd00::1',
        [
          { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
          { address: 'fd00::1', family: 6 },
        ],
        'fd00::1',
      ],
    ]
    for (const [what, addresses, named] of resolutions) {
      it(`refuses a name resolving to ${what}, with no connection attempted`, async () => {
        const asked: string[] = []
        const { result, connects } = await countingConnects(() =>
          checkDomain('https://app.example.com/', KEY, {
            ...PUBLIC_ONLY,
            lookup: async (hostname) => {
              asked.push(hostname)
              return addresses
            },
          }),
        )
        assert.deepEqual(asked, ['app.example.com'])
        assert.equal(result.ok, false)
        assert.equal(!result.ok && result.reason, 'private_address')
        assert.equal(!result.ok && result.address, named)
        assert.match(!result.ok ? result.message : '', new RegExp(named.replaceAll('.', '\\.')))
        assert.equal(connects.length, 0)
      })
    }

    it('reports a failed or empty resolution as dns_failed', async () => {
      const failed = await checkDomain('https://nowhere.test/', KEY, {
        ...PUBLIC_ONLY,
        lookup: async () => {
          throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' })
        },
      })
      assert.equal(!failed.ok && failed.reason, 'dns_failed')
      assert.match(!failed.ok ? failed.message : '', /ENOTFOUND/)
      const empty = await checkDomain('https://nowhere.test/', KEY, { ...PUBLIC_ONLY, lookup: async () => [] })
      assert.equal(!empty.ok && empty.reason, 'dns_failed')
    })
  })

  describe('pinning', () => {
    it('connects to the checked address for a made-up name, with the name in Host', async () => {
      const local = await serve((req, res) => {
        if (req.url === '/validation-key.txt') {
          res.writeHead(302, { location: '/key' })
          res.end()
        } else text(KEY)(req, res)
      })
      try {
        const asked: string[] = []
        const { result, connects } = await countingConnects(() =>
          checkDomain(`http://app.test:${local.port}/`, KEY, {
            ...LOCAL,
            lookup: async (hostname) => {
              asked.push(hostname)
              return [{ address: '127.0.0.1', family: 4 }]
            },
          }),
        )
        assert.deepEqual(result, { ok: true, url: `http://app.test:${local.port}/validation-key.txt`, address: '127.0.0.1' })
        assert.deepEqual(asked, ['app.test'], 'one resolution for the whole check, redirect included')
        assert.ok(connects.length >= 1)
        assert.deepEqual(
          local.seen.map((seen) => seen.headers.host),
          [`app.test:${local.port}`, `app.test:${local.port}`],
        )
      } finally {
        await local.close()
      }
    })

    it('keeps the host name as the TLS servername (SNI) while connecting to the pinned address', async () => {
      const tls = await helloCatcher()
      try {
        const result = await checkDomain(`https://app.test:${tls.port}/`, KEY, {
          ...LOCAL,
          timeoutMs: 2000,
          lookup: async () => [{ address: '127.0.0.1', family: 4 }],
        })
        assert.equal(!result.ok && result.reason, 'connect_failed')
        assert.equal(await tls.servername, 'app.test')
      } finally {
        await new Promise<void>((resolve) => tls.server.close(() => resolve()))
      }
    })
  })

  describe('URLs', () => {
    it('refuses a URL with user:pass@ as invalid_url, without echoing the password', async () => {
      const result = await checkDomain('https://user:secret@app.example.com/', KEY, PUBLIC_ONLY)
      assert.equal(!result.ok && result.reason, 'invalid_url')
      assert.ok(!result.ok && !result.url.includes('secret') && !result.message.includes('secret'))
      const userOnly = await checkDomain('https://user@app.example.com/', KEY, PUBLIC_ONLY)
      assert.equal(!userOnly.ok && userOnly.reason, 'invalid_url')
    })

    for (const url of ['ftp://app.example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'app.example.com', 'not a url', '']) {
      it(`refuses ${JSON.stringify(url)} as invalid_url`, async () => {
        const result = await checkDomain(url, KEY, { ...PUBLIC_ONLY, lookup: async () => assert.fail('no DNS for an invalid URL') })
        assert.equal(!result.ok && result.reason, 'invalid_url')
        assert.ok(!result.ok && result.message.length > 0)
      })
    }
  })
})

/** A TCP server that reads a TLS ClientHello, remembers its server_name (SNI), and hangs up. */
async function helloCatcher(): Promise<{ server: NetServer; port: number; servername: Promise<string | undefined> }> {
  let found!: (servername: string | undefined) => void
  const servername = new Promise<string | undefined>((resolve) => {
    found = resolve
  })
  const server = createNetServer((socket) => {
    let received = Buffer.alloc(0)
    socket.on('error', () => undefined)
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data])
      if (received.length < 5 || received.length < 5 + received.readUInt16BE(3)) return
      found(sniOf(received))
      socket.destroy()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as AddressInfo).port, servername }
}

/** The server_name extension of a TLS ClientHello record. */
function sniOf(hello: Buffer): string | undefined {
  let at = 5 + 4 + 2 + 32 // record header, handshake header, client version, random
  at += 1 + hello.readUInt8(at) // session id
  at += 2 + hello.readUInt16BE(at) // cipher suites
  at += 1 + hello.readUInt8(at) // compression methods
  const end = at + 2 + hello.readUInt16BE(at)
  at += 2
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at)
    const length = hello.readUInt16BE(at + 2)
    at += 4
    // server_name: list length (2), name type (1), name length (2), name
    if (type === 0) return hello.subarray(at + 5, at + 5 + hello.readUInt16BE(at + 3)).toString('ascii')
    at += length
  }
  return undefined
}
