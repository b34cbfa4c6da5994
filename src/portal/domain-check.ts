/**
 * The domain check of the developer portal: the platform hands a developer a validation key, the
 * developer publishes it at `<app origin>/validation-key.txt`, and this module fetches that file and
 * compares. The URL is typed by a user and fetched by the server, so it is an SSRF surface; the rules:
 *
 * 1. Only `http:` and `https:` URLs without userinfo (`user:pass@` is `invalid_url`). The file fetched
 *    is always `new URL('/validation-key.txt', origin)`: the path and query of the app URL are ignored.
 * 2. The host name is resolved here (every address). If any address is private, loopback, link-local,
 *    cloud metadata, unspecified, multicast or reserved (`isPrivateAddress`), the check refuses with
 *    `private_address`, unless `allowPrivate` (PLINTH_ALLOW_PRIVATE_APP_URLS=1). A literal IP is judged
 *    the same way, without DNS. IPv4 inside IPv6 (mapped, translated, NAT64, 6to4, Teredo, ISATAP,
 *    compatible) is judged as the IPv4 address (`embeddedIPv4`).
 * 3. The connection goes to the address that was checked, never to a second resolution: each check has
 *    its own undici `Agent` whose `connect.lookup` answers the pinned address, closed afterwards. undici
 *    derives the TLS servername from the URL's host name, so SNI and certificate verification still use
 *    the name, not the address.
 * 4. No credentials: no cookies, no Authorization; only `accept: text/plain` and
 *    `user-agent: Plinth-domain-check/1` are sent.
 * 5. `timeoutMs` (5000) bounds the whole check: DNS, connect, headers and body (`timeout`).
 * 6. At most `maxBytes` (4096) of body are read: a larger Content-Length, or a body growing past the cap,
 *    is `too_large` and the stream is destroyed there.
 * 7. Redirects are not followed by undici; this module follows a 3xx only to the same origin (scheme,
 *    host, port), at most 3 hops, each re-checked. Any other target is `redirect_refused`.
 * 8. A non-2xx is `http_status`. The body, without a leading BOM and surrounding whitespace, is compared
 *    with the key in constant time; a difference is `key_mismatch`.
 * 9. Network problems never throw: every failure is a result with a one-sentence message a developer
 *    can act on. `url` in a result is the validation file's URL (for `invalid_url`, the input without
 *    its credentials).
 */
import { promises as dns } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import type { Readable } from 'node:stream'
import { Agent, request } from 'undici'
import { constantTimeEqual } from '../lib/crypto.js'

export interface DomainCheckOptions {
  /** PLINTH_ALLOW_PRIVATE_APP_URLS=1: private, loopback, link-local addresses allowed (intranets, tests). */
  allowPrivate: boolean
  /** Default 5000: the whole check (DNS, connect, headers and body). */
  timeoutMs?: number
  /** Default 4096: body cap; more is a refusal, reading stops at the cap. */
  maxBytes?: number
  /** For tests: a resolver replacing dns.promises.lookup(host, {all:true, verbatim:true}). */
  lookup?: (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>
}

export type DomainCheckResult =
  | { ok: true; url: string; address: string }
  | { ok: false; reason: DomainCheckRefusal; message: string; url: string; address?: string }

export type DomainCheckRefusal =
  | 'invalid_url'
  | 'dns_failed'
  | 'private_address'
  | 'connect_failed'
  | 'timeout'
  | 'http_status'
  | 'redirect_refused'
  | 'too_large'
  | 'key_mismatch'

const VALIDATION_PATH = '/validation-key.txt'
const DEFAULT_TIMEOUT_MS = 5000
const DEFAULT_MAX_BYTES = 4096
const MAX_REDIRECTS = 3
const REQUEST_HEADERS = { accept: 'text/plain', 'user-agent': 'Plinth-domain-check/1' }

// ---------------------------------------------------------------------------------------------
// Addresses
// ---------------------------------------------------------------------------------------------

/** IPv4 ranges that are not the public internet (RFC 6890 and its updates). */
const V4_REFUSED: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
]

/**
 * IPv6 ranges refused outright, whatever IPv4 address they embed. The IPv4 address inside any
 * embedded form (embeddedIPv4) is judged as IPv4 besides.
 */
const V6_REFUSED: Array<[string, number]> = [
  // Reserved by the IETF (RFC 4291): unspecified (::), loopback (::1), the deprecated IPv4-compatible
  // ::a.b.c.d, local-use NAT64 (64:ff9b:1::/48), the rest of 64:ff9b::/16 and unassigned space. The
  // translation prefixes judged by their IPv4 alone (IPV4_ONLY) are let through before this list.
  ['::', 8],
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo 2001::/32, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
]

const v4Refused = new BlockList()
for (const [network, prefix] of V4_REFUSED) v4Refused.addSubnet(network, prefix, 'ipv4')
v4Refused.addAddress('255.255.255.255', 'ipv4')
const v6Refused = new BlockList()
for (const [network, prefix] of V6_REFUSED) v6Refused.addSubnet(network, prefix, 'ipv6')

/** The eight 16-bit words of a valid IPv6 address (dotted IPv4 tail allowed). */
function ipv6Words(address: string): number[] {
  let text = address
  const lastColon = text.lastIndexOf(':')
  const tail = text.slice(lastColon + 1)
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number)
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16)))
  const gap = text.indexOf('::')
  if (gap < 0) return parse(text)
  const head = parse(text.slice(0, gap))
  const rest = parse(text.slice(gap + 2))
  return [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest]
}

const dotted = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`

/**
 * The IPv4 addresses an IPv6 address carries, and whether its form is judged by them alone:
 *
 * - IPv4-mapped `::ffff:0:0/96` and IPv4-translated `::ffff:0:0:0/96` (SIIT): the host is the IPv4
 *   address (the kernel connects to a mapped one over IPv4);
 * - NAT64's well-known prefix `64:ff9b::/96` (RFC 6052): a translator reaches the IPv4 address;
 * - IPv4-compatible `::a.b.c.d` (deprecated), and local-use NAT64 `64:ff9b:1::/48` (RFC 8215, its
 *   IPv4 in the last 32 bits as a /96 puts it): judged, and refused outright besides (V6_REFUSED);
 * - 6to4 `2002:AABB:CCDD::/48` (RFC 3056): the relay's tunnel ends at the IPv4 address in words 1-2;
 * - Teredo `2001:0:SSSS:SSSS:flags:port:CCCC:CCCC` (RFC 4380): the server's IPv4 in words 2-3, the
 *   client's in the last 32 bits XOR 0xffffffff (also refused outright, as 2001::/23);
 * - ISATAP, an interface id `0:5efe:a.b.c.d` or `200:5efe:a.b.c.d` under any /64 (RFC 5214): the
 *   router's tunnel ends at the IPv4 address.
 *
 * A NAT64 network-specific prefix (a translator's own /96 in global space) cannot be told from the
 * address: docs/portal.md says so.
 */
function embeddedIPv4(words: number[]): { addresses: string[]; ipv4Only: boolean } | undefined {
  const [w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0] = words
  const last = dotted(w6, w7)
  const zeroTo = (n: number) => words.slice(0, n).every((word) => word === 0)
  if (zeroTo(5) && w5 === 0xffff) return { addresses: [last], ipv4Only: true } // mapped
  if (zeroTo(4) && w4 === 0xffff && w5 === 0) return { addresses: [last], ipv4Only: true } // translated
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return { addresses: [last], ipv4Only: true }
  if (zeroTo(6)) return { addresses: [last], ipv4Only: false } // IPv4-compatible, ::, ::1
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) return { addresses: [last], ipv4Only: false } // local-use NAT64
  if (w0 === 0x2002) return { addresses: [dotted(w1, w2)], ipv4Only: false } // 6to4
  if (w0 === 0x2001 && w1 === 0) return { addresses: [dotted(w2, w3), dotted(w6 ^ 0xffff, w7 ^ 0xffff)], ipv4Only: false } // Teredo
  if ((w4 === 0 || w4 === 0x200) && w5 === 0x5efe) return { addresses: [last], ipv4Only: false } // ISATAP
  return undefined
}

/** Whether an IP address (v4 or v6, including IPv4-mapped v6 like ::ffff:127.0.0.1) is one the check refuses unless allowPrivate. */
export function isPrivateAddress(address: string): boolean {
  let text = address.trim()
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1)
  const zone = text.indexOf('%')
  if (zone >= 0) text = text.slice(0, zone)
  const family = isIP(text)
  if (family === 4) return v4Refused.check(text, 'ipv4')
  if (family !== 6) return true // not an IP address: nothing to connect to safely
  const embedded = embeddedIPv4(ipv6Words(text))
  if (embedded?.addresses.some((v4) => v4Refused.check(v4, 'ipv4'))) return true
  if (embedded?.ipv4Only === true) return false
  return v6Refused.check(text, 'ipv6')
}

// ---------------------------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------------------------

type Refusal = Extract<DomainCheckResult, { ok: false }>

class CheckTimeout extends Error {}

/** Settles as `promise` does, or rejects when `signal` aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

async function systemLookup(hostname: string): Promise<Array<{ address: string; family: 4 | 6 }>> {
  const found = await dns.lookup(hostname, { all: true, verbatim: true })
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const { code, cause } = error as { code?: unknown; cause?: unknown }
  if (typeof code === 'string') return code
  return cause === undefined ? undefined : errorCode(cause)
}

function withoutCredentials(input: string): string {
  try {
    const url = new URL(input)
    url.username = ''
    url.password = ''
    return url.href
  } catch {
    return input
  }
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'])
const TLS_CODE = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/

/** Fetches `<origin of appUrl>/validation-key.txt` and compares its trimmed body with `expectedKey` (constant-time). */
export async function checkDomain(appUrl: string, expectedKey: string, options: DomainCheckOptions): Promise<DomainCheckResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES

  let parsed: URL
  try {
    parsed = new URL(appUrl.trim())
  } catch {
    return invalid(appUrl, `"${appUrl}" is not a valid URL; enter the app's address, such as https://app.example.com.`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return invalid(appUrl, `The app URL must start with https:// or http://, not ${parsed.protocol}//.`)
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return invalid(appUrl, 'The app URL must not contain a user name or password (user:pass@); enter the address alone.')
  }

  const origin = parsed.origin
  const fileUrl = new URL(VALIDATION_PATH, origin)
  const url = fileUrl.href
  const host = fileUrl.hostname.startsWith('[') ? fileUrl.hostname.slice(1, -1) : fileUrl.hostname
  const refuse = (reason: DomainCheckRefusal, message: string, address?: string): Refusal =>
    address === undefined ? { ok: false, reason, message, url } : { ok: false, reason, message, url, address }

  let pinned: string | undefined
  let agent: Agent | undefined
  const timedOut = () =>
    refuse('timeout', `${url} did not answer within ${timeoutMs} ms; make sure the server responds quickly and completely.`, pinned)
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new CheckTimeout('domain check timed out')), timeoutMs)

  try {
    // Rule 2: resolve here, judge every address.
    let addresses: Array<{ address: string; family: 4 | 6 }>
    const literal = isIP(host)
    if (literal !== 0) {
      addresses = [{ address: host, family: literal === 6 ? 6 : 4 }]
    } else {
      try {
        addresses = await untilAborted((options.lookup ?? systemLookup)(host), controller.signal)
      } catch (error) {
        if (error instanceof CheckTimeout) return timedOut()
        const code = errorCode(error)
        return refuse('dns_failed', `${host} could not be resolved${code ? ` (${code})` : ''}; check the domain name and its DNS records.`)
      }
      if (addresses.length === 0) return refuse('dns_failed', `${host} has no address records; check the domain name and its DNS records.`)
    }
    if (!options.allowPrivate) {
      const refused = addresses.find(({ address }) => isPrivateAddress(address))
      if (refused !== undefined) {
        const what = literal !== 0 ? `The address ${refused.address}` : `${host} resolves to ${refused.address}, which`
        return refuse(
          'private_address',
          `${what} is a private, loopback, link-local or reserved address; the domain check only fetches from public addresses.`,
          refused.address,
        )
      }
    }

    // Rule 3: connect to the checked address only; the TLS servername stays the host name.
    const target = addresses[0] as { address: string; family: 4 | 6 }
    pinned = target.address
    const pinnedLookup: LookupFunction = (_hostname, lookupOptions, callback) => {
      if (lookupOptions.all) callback(null, [{ address: target.address, family: target.family }])
      else callback(null, target.address, target.family)
    }
    agent = new Agent({
      connect: { lookup: pinnedLookup, timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connections: 1,
    })

    let current = fileUrl
    for (let hops = 0; ; hops++) {
      const response = await request(current, {
        method: 'GET',
        dispatcher: agent,
        headers: REQUEST_HEADERS,
        signal: controller.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
      const { statusCode, headers, body } = response

      // Rule 7: same-origin redirects only, at most MAX_REDIRECTS.
      if (statusCode >= 300 && statusCode < 400) {
        discard(body)
        const location = firstHeader(headers.location)
        if (location === undefined) {
          return refuse(
            'http_status',
            `${current.href} answered HTTP ${statusCode} without a Location; serve the key with HTTP 200.`,
            pinned,
          )
        }
        let next: URL
        try {
          next = new URL(location, current)
        } catch {
          return refuse(
            'redirect_refused',
            `${current.href} redirects to an invalid Location; serve the key directly with HTTP 200.`,
            pinned,
          )
        }
        if (next.origin !== origin) {
          return refuse(
            'redirect_refused',
            `${current.href} redirects to ${next.origin}, another origin; serve the key from ${origin} itself.`,
            pinned,
          )
        }
        if (hops >= MAX_REDIRECTS) {
          return refuse(
            'redirect_refused',
            `${url} redirects more than ${MAX_REDIRECTS} times; serve the key with fewer redirects.`,
            pinned,
          )
        }
        current = new URL(`${next.pathname}${next.search}`, origin)
        continue
      }

      // Rule 8: 2xx only.
      if (statusCode < 200 || statusCode >= 300) {
        discard(body)
        return refuse(
          'http_status',
          `${current.href} answered HTTP ${statusCode}; publish the key there so that it answers HTTP 200.`,
          pinned,
        )
      }

      // Rule 6: never more than maxBytes.
      const tooLarge = () =>
        refuse('too_large', `${current.href} is larger than ${maxBytes} bytes; the file must contain only the validation key.`, pinned)
      const declared = Number(firstHeader(headers['content-length']))
      if (Number.isFinite(declared) && declared > maxBytes) {
        discard(body)
        return tooLarge()
      }
      const chunks: Buffer[] = []
      let received = 0
      for await (const chunk of body) {
        const bytes = chunk as Buffer
        received += bytes.length
        if (received > maxBytes) {
          discard(body)
          return tooLarge()
        }
        chunks.push(bytes)
      }

      const text = Buffer.concat(chunks)
        .toString('utf8')
        .replace(/^\uFEFF/, '')
        .trim()
      if (expectedKey === '' || !constantTimeEqual(text, expectedKey)) {
        return refuse(
          'key_mismatch',
          `${current.href} does not contain this app's validation key; publish exactly the key shown in the developer portal.`,
          pinned,
        )
      }
      return { ok: true, url, address: pinned }
    }
  } catch (error) {
    // Rule 9: a network failure is a result.
    const code = errorCode(error)
    if (controller.signal.aborted || error instanceof CheckTimeout || (code !== undefined && TIMEOUT_CODES.has(code))) return timedOut()
    const where = `${host} (${pinned ?? 'unresolved'})`
    if (code === 'ECONNREFUSED') {
      return refuse(
        'connect_failed',
        `${where} refused the connection on port ${portOf(fileUrl)}; make sure the app's server is running and reachable.`,
        pinned,
      )
    }
    if (code !== undefined && TLS_CODE.test(code)) {
      return refuse(
        'connect_failed',
        `The TLS certificate of ${host} could not be verified (${code}); serve a valid certificate for this name.`,
        pinned,
      )
    }
    const detail = error instanceof Error ? error.message.replace(/[.\s]+$/, '') : String(error)
    return refuse('connect_failed', `Could not fetch ${url} from ${where}${code ? ` (${code})` : ''}: ${detail}.`, pinned)
  } finally {
    clearTimeout(timer)
    await agent?.destroy().catch(() => undefined)
  }
}

/** Drops a response body unread: undici errors a body destroyed before its end, so the error is swallowed here. */
function discard(body: Readable): void {
  body.on('error', () => undefined)
  body.destroy()
}

function portOf(url: URL): string {
  return url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80'
}

function invalid(appUrl: string, message: string): Refusal {
  return { ok: false, reason: 'invalid_url', message, url: withoutCredentials(appUrl) }
}
