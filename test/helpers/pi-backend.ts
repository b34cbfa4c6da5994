import { createRequire } from 'node:module'

/**
 * The official server SDK, pi-backend, unmodified, from npm. It is CommonJS and hard-codes its
 * Horizon URLs from the payment's network, so tests redirect those live hosts to a Plinth
 * process's /ledger inside the test process only, through the axios instance of the stellar-sdk
 * copy that pi-backend loads.
 */
const require = createRequire(import.meta.url)
const piBackendPath = require.resolve('pi-backend')

/** The SDK's methods; `P` is the payment shape the test reads. */
export interface PiBackend<P> {
  createPayment(data: { amount: number; memo: string; metadata: object; uid: string }): Promise<string>
  submitPayment(paymentId: string): Promise<string>
  completePayment(paymentId: string, txid: string): Promise<P>
  getPayment(paymentId: string): Promise<P>
  cancelPayment(paymentId: string): Promise<P>
  getIncompleteServerPayments(): Promise<{ incomplete_server_payments: P[] }>
}

export const PiNetwork = (
  require('pi-backend') as { default: new <P>(apiKey: string, seed: string, options: { baseUrl: string }) => PiBackend<P> }
).default

const piStellarSdk = createRequire(piBackendPath)('stellar-sdk') as {
  HorizonAxiosClient: {
    interceptors: { request: { use(fn: (config: { url?: string }) => { url?: string }): number; eject(id: number): void } }
  }
}

const LIVE_HORIZONS = ['https://api.testnet.minepi.com', 'https://api.mainnet.minepi.com']

/** Sends pi-backend's Horizon requests to `base`/ledger until the returned function is called. */
export function redirectPiBackendHorizon(base: string): () => void {
  const interceptor = piStellarSdk.HorizonAxiosClient.interceptors.request.use((config) => {
    for (const live of LIVE_HORIZONS) {
      if (config.url?.startsWith(live)) config.url = `${base}/ledger${config.url.slice(live.length)}`
    }
    return config
  })
  return () => piStellarSdk.HorizonAxiosClient.interceptors.request.eject(interceptor)
}
