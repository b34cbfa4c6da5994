/** The part of autocannon 9's programmatic API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS'

    /** What setupRequest receives and returns: the request about to be serialised. */
    interface RequestParams {
      method?: HttpMethod
      path?: string
      headers?: Record<string, string>
      body?: string | Buffer
    }

    interface Request extends RequestParams {
      /** Called before every request when present; returning a falsy value restarts the sequence. */
      setupRequest?: (request: RequestParams, context: Record<string, unknown>) => RequestParams | undefined
      onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void
    }

    interface Options {
      /** Several URLs: the connections are dealt over them round robin. */
      url: string | string[]
      connections?: number
      /** Seconds. */
      duration?: number
      /** Seconds to wait for a response before counting a timeout. */
      timeout?: number
      pipelining?: number
      method?: HttpMethod
      headers?: Record<string, string>
      body?: string | Buffer
      requests?: Request[]
      title?: string
    }

    /** hdr-histogram-percentiles-obj: latency in milliseconds, requests and throughput per second. */
    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      sent?: number
      p50: number
      p90: number
      p97_5: number
      p99: number
    }

    interface Result {
      title?: string
      url: string
      requests: Histogram
      latency: Histogram
      throughput: Histogram
      /** Seconds. */
      duration: number
      /** Connection errors, timeouts included. */
      errors: number
      timeouts: number
      mismatches: number
      non2xx: number
      resets: number
      statusCodeStats: Record<string, { count: number }>
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance

  export = autocannon
}
