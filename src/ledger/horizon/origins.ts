import type { IncomingMessage } from 'node:http'
import type { HorizonOrigin, HorizonOrigins } from '../../config.js'
import { LEDGER_NETWORKS, type LedgerNetwork } from '../networks.js'

/**
 * Each network's Horizon at the root of its own origin (docs/ledger.md, "Each network's Horizon at
 * its own origin"): a request that arrives on a network's own listener (PLINTH_*_HORIZON_PORT) or
 * with its Host name (PLINTH_*_HORIZON_HOST) is routed, before anything else, to that network's
 * Horizon, registered under an internal prefix that no other request reaches.
 */
const PREFIXES: Readonly<Record<LedgerNetwork, string>> = { 'Pi Testnet': '/_horizon/testnet', 'Pi Network': '/_horizon/mainnet' }
const INTERNAL = '/_horizon/'

export function horizonPrefix(network: LedgerNetwork): string {
  return PREFIXES[network]
}

function hostName(request: IncomingMessage): string | undefined {
  const host = request.headers.host
  if (host === undefined) return undefined
  return (host.startsWith('[') ? host : (host.split(':')[0] ?? '')).toLowerCase()
}

/** The URL as the router takes it: a network's origin's requests under its prefix; the internal prefix is unreachable otherwise. */
export function horizonRewrite(origins: HorizonOrigins): (request: IncomingMessage, url: string) => string {
  const served = LEDGER_NETWORKS.flatMap((network) => {
    const origin = origins[network]
    return origin === undefined ? [] : [{ network, origin }]
  })
  return (request, url) => {
    if (served.length > 0) {
      const port = request.socket.localPort
      const host = hostName(request)
      const mine = served.find(
        ({ origin }) => (origin.host !== undefined && origin.host === host) || (origin.port !== undefined && origin.port === port),
      )
      if (mine !== undefined) return `${PREFIXES[mine.network]}${url === '/' ? '' : url}`
    }
    return url.startsWith(INTERNAL) || url === INTERNAL.slice(0, -1) ? `/_unrouted${url}` : url
  }
}

/** The base of a network's Horizon links: its Host name's origin, else PLINTH_PUBLIC_URL's host at its port. */
export function horizonBase(origin: HorizonOrigin, publicUrl: string): string {
  const url = new URL(publicUrl)
  if (origin.host !== undefined) return `${url.protocol}//${origin.host}`
  return `${url.protocol}//${url.hostname}:${origin.port ?? url.port}`
}
