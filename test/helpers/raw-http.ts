import { connect, type Socket } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** Everything the server sent before closing the connection. */
  text: string
}

/**
 * Sends `request` as raw bytes on a new connection to 127.0.0.1:`port` and collects everything
 * until the server closes it (or `timeoutMs` passes): for requests no HTTP client would send.
 */
export function rawExchange(port: number, request: string | Buffer, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no end of the answer within ${timeoutMs} ms; got: ${Buffer.concat(chunks).toString('latin1')}`))
    }, timeoutMs)
    socket.on('connect', () => socket.write(request))
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', (error) => {
      // A reset after the answer arrived still leaves the answer to read.
      if (chunks.length === 0) {
        clearTimeout(timer)
        reject(error)
      }
    })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks).toString('latin1'))
    })
  })
}

/** Parses the first HTTP/1.1 answer of `text` (Content-Length bodies only). */
export function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) throw new Error(`not an HTTP answer: ${JSON.stringify(text.slice(0, 200))}`)
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1])
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers['content-length'] ?? 0)
  return { status, headers, body: text.slice(end + 4, end + 4 + length), text }
}

export async function rawRequest(port: number, request: string | Buffer, timeoutMs?: number): Promise<RawResponse> {
  return parseResponse(await rawExchange(port, request, timeoutMs))
}

/**
 * One keep-alive connection driven by hand: requests are written as given (several at once to
 * pipeline them) and the answers parsed as they arrive (Content-Length bodies only).
 */
export class RawConnection {
  readonly responses: RawResponse[] = []
  /** Resolves when the connection is closed, with the socket error if there was one (ECONNRESET…). */
  readonly closed: Promise<Error | undefined>
  #buffer = ''
  #socket: Socket
  #waiters: Array<() => void> = []

  private constructor(socket: Socket) {
    this.#socket = socket
    let error: Error | undefined
    socket.on('data', (chunk: Buffer) => {
      this.#buffer += chunk.toString('latin1')
      this.#parse()
    })
    socket.on('error', (e) => {
      error = e
    })
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        for (const wake of this.#waiters.splice(0)) wake()
        resolve(error)
      }),
    )
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('error', reject)
      socket.once('connect', () => {
        socket.off('error', reject)
        resolve(new RawConnection(socket))
      })
    })
  }

  /** Resolves once the bytes are handed to the kernel (on loopback: they reached the server's socket). */
  write(text: string): Promise<void> {
    return new Promise((resolve, reject) => this.#socket.write(text, (error) => (error ? reject(error) : resolve())))
  }

  /** Waits until `count` answers have arrived in all, or the connection closed. */
  async answers(count: number): Promise<RawResponse[]> {
    while (this.responses.length < count && !this.#socket.destroyed) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve))
    }
    return this.responses
  }

  destroy(): void {
    this.#socket.destroy()
  }

  #parse(): void {
    for (;;) {
      const end = this.#buffer.indexOf('\r\n\r\n')
      if (end < 0) break
      const head = parseResponse(`${this.#buffer.slice(0, end)}\r\n\r\n`)
      const length = Number(head.headers['content-length'] ?? 0)
      if (this.#buffer.length < end + 4 + length) break
      const text = this.#buffer.slice(0, end + 4 + length)
      this.#buffer = this.#buffer.slice(end + 4 + length)
      this.responses.push(parseResponse(text))
    }
    for (const wake of this.#waiters.splice(0)) wake()
  }
}
